import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { downloadText } from "../../../../src/adapters/discord/text-attachments.js";

/** A CDN that misbehaves on request: honest, lying about its length, silent, slow, broken. */
describe("downloadText", () => {
  let server: Server;
  let base: string;
  /** Body bytes each route actually wrote, to prove the reader stopped early. */
  const written = new Map<string, number>();
  const requests: string[] = [];

  const routes: Record<string, (response: ServerResponse) => void> = {
    "/ok": (response) => response.writeHead(200, { "content-length": "11", "content-type": "text/plain" }).end("hello world"),
    "/utf8": (response) => {
      const body = Buffer.from("ça marche 🇫🇷", "utf8");
      response.writeHead(200, { "content-length": String(body.length) }).end(body);
    },
    "/declares-too-much": (response) => {
      response.writeHead(200, { "content-length": "5000" });
      response.write("x".repeat(100));
    },
    // No content-length (chunked) and far more than announced: must be cut off while streaming.
    "/endless": (response) => {
      response.writeHead(200, { "content-type": "text/plain" });
      let sent = 0;
      const pump = (): void => {
        while (sent < 10_000_000 && !response.destroyed) {
          sent += 16_384;
          written.set("/endless", sent);
          if (!response.write("y".repeat(16_384))) {
            response.once("drain", pump);
            return;
          }
        }
        response.end();
      };
      pump();
    },
    "/silent": () => undefined,
    "/slow-body": (response) => {
      response.writeHead(200, { "content-length": "20" });
      response.write("first half");
    },
    "/missing": (response) => response.writeHead(404).end("Not Found"),
    "/binary": (response) => response.writeHead(200, { "content-length": "4" }).end(Buffer.from([0x50, 0x4b, 0x00, 0x03])),
  };

  beforeAll(async () => {
    server = createServer((request, response) => {
      requests.push(request.url ?? "");
      (routes[request.url ?? ""] ?? routes["/missing"]!)(response);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  // Generous: the first request of the file sets up a connection on a loaded machine; the
  // timeout itself is tested with `quick`.
  const limits = { maxBytes: 1_000, timeoutMs: 10_000 };
  const quick = { maxBytes: 1_000, timeoutMs: 500 };

  it("reads a text file and decodes UTF-8 (flags and accents intact)", async () => {
    expect(await downloadText({ url: `${base}/ok`, size: 11 }, limits)).toEqual({ ok: true, text: "hello world" });
    expect(await downloadText({ url: `${base}/utf8`, size: 18 }, limits)).toEqual({ ok: true, text: "ça marche 🇫🇷" });
  });

  it("refuses a file Discord says is too large without asking the CDN at all", async () => {
    const before = requests.length;
    expect(await downloadText({ url: `${base}/ok`, size: 1_001 }, limits)).toMatchObject({ ok: false, failure: "too-large" });
    expect(requests.length).toBe(before);
  });

  it("refuses a body whose content-length is over the limit before reading it", async () => {
    expect(await downloadText({ url: `${base}/declares-too-much`, size: 10 }, limits)).toMatchObject({ ok: false, failure: "too-large", detail: expect.stringContaining("content-length 5000") });
  });

  it("stops reading a body that runs past the limit without a length (the rest is never read)", async () => {
    const result = await downloadText({ url: `${base}/endless`, size: 10 }, { maxBytes: 100_000, timeoutMs: 5_000 });
    expect(result).toMatchObject({ ok: false, failure: "too-large" });
    // The server got back-pressure and a reset long before its 10 MB.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(written.get("/endless") ?? 0).toBeLessThan(10_000_000);
  });

  it("gives up on a CDN that never answers, or stalls mid-body, within the timeout", async () => {
    expect(await downloadText({ url: `${base}/silent`, size: 10 }, quick)).toMatchObject({ ok: false, failure: "failed", detail: "no answer within 500 ms" });
    expect(await downloadText({ url: `${base}/slow-body`, size: 20 }, quick)).toMatchObject({ ok: false, failure: "failed" });
  });

  it("reports HTTP errors, binary content and unreachable hosts as failures", async () => {
    expect(await downloadText({ url: `${base}/missing`, size: 10 }, limits)).toEqual({ ok: false, failure: "failed", detail: "HTTP 404" });
    expect(await downloadText({ url: `${base}/binary`, size: 4 }, limits)).toEqual({ ok: false, failure: "failed", detail: "binary content" });
    expect(await downloadText({ url: "http://127.0.0.1:1/nothing-listens", size: 4 }, limits)).toMatchObject({ ok: false, failure: "failed" });
  });
});
