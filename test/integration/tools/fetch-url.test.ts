/**
 * fetch_url against real HTTP servers on loopback (allowed only through the test allowlist):
 * readable text through the extraction worker, the limits (size after decompression, time,
 * redirects), and the SSRF guard after DNS resolution on every hop.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { extractText } from "../../../src/media/index.js";
import { createFetchUrlTool, createPageFetcher, publicAddressPolicy, type Resolve, type PageFetcher, type Tool, type ToolContext } from "../../../src/tools/index.js";

const ARTICLE = `<!doctype html><html><head><title>Harbour news</title><script>var secret = "script text";</script><style>.x{color:red}</style></head>
<body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>
<article><h1>The ferry returns</h1>
<p>The old ferry <a href="/ferry">Maria</a> sails again from the north pier on Monday, after two years of repairs. ${"The town council paid for new engines and a new deck. ".repeat(8)}</p>
<p>Tickets cost 4 euros. ${"Children under twelve travel free, and bicycles are welcome on every crossing. ".repeat(6)}</p>
<ul><li>Monday to Friday: 7:00</li><li>Weekends: 9:30</li></ul>
<pre>  timetable.txt
  07:00 north pier</pre>
</article><footer>Copyright 2026</footer></body></html>`;

interface Hit {
  path: string;
  host: string | undefined;
}

function startServer(host: string, handle: (request: IncomingMessage, response: ServerResponse) => void): Promise<{ server: Server; port: number; hits: Hit[] }> {
  const hits: Hit[] = [];
  const server = createServer((request, response) => {
    hits.push({ path: request.url ?? "", host: request.headers.host });
    handle(request, response);
  });
  return new Promise((resolve) => server.listen(0, host, () => resolve({ server, port: (server.address() as AddressInfo).port, hits })));
}

const LIMITS = { maxBytes: 64 * 1024, timeoutMs: 3_000, maxRedirects: 3 };
const EXTRACT = { memoryMb: 128, timeoutMs: 30_000, maxPages: 10, maxChars: 100_000 };

/** Test names: a.test resolves to loopback (allowed here), mixed.test to loopback and a private address, meta.test to the metadata address. */
const resolve: Resolve = async (hostname) => {
  if (hostname === "a.test") return [{ address: "127.0.0.1", family: 4 }];
  if (hostname === "mixed.test") return [{ address: "127.0.0.1", family: 4 }, { address: "10.1.2.3", family: 4 }];
  if (hostname === "meta.test") return [{ address: "169.254.169.254", family: 4 }];
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
};

const context = (signal = new AbortController().signal): ToolContext => ({
  sessionKey: "tg:1",
  signal,
  now: () => Date.now(),
  transcript: { get: async () => undefined, search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }) },
  outputs: { read: async () => undefined },
});

async function call(tool: Tool, url: string): Promise<{ text: string; isError: boolean }> {
  const output = await tool.run({ url }, context());
  return typeof output === "string" ? { text: output, isError: false } : { text: output.text, isError: output.isError === true };
}

describe("fetch_url", () => {
  let main: Awaited<ReturnType<typeof startServer>>;
  let other: Awaited<ReturnType<typeof startServer>>;
  let fetcher: PageFetcher;
  let strict: PageFetcher;
  let tool: Tool;
  let strictTool: Tool;
  let base: string;

  let bomb: Buffer;

  beforeAll(async () => {
    bomb = gzipSync(Buffer.alloc(20 * 1024 * 1024, "a"));
    // A second server on another loopback address, which the allowlist does not name: a
    // redirect there must be refused before any request reaches it.
    other = await startServer("127.0.0.2", (_request, response) => response.end("internal secret"));
    main = await startServer("127.0.0.1", (request, response) => {
      const path = request.url ?? "/";
      if (path === "/article") {
        response.setHeader("content-type", "text/html; charset=utf-8");
        response.end(ARTICLE);
      } else if (path === "/latin1") {
        response.setHeader("content-type", "text/html; charset=windows-1252");
        response.end(Buffer.from("<html><head><title>Caf\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e for 3 \xa3.</p></body></html>", "latin1"));
      } else if (path === "/plain") {
        response.setHeader("content-type", "text/plain");
        response.end("just text\nline two");
      } else if (path.startsWith("/hop/")) {
        const left = Number(path.slice("/hop/".length));
        response.statusCode = 302;
        response.setHeader("location", left > 0 ? `/hop/${left - 1}` : "/article");
        response.end();
      } else if (path === "/to-internal") {
        response.statusCode = 301;
        response.setHeader("location", `http://127.0.0.2:${other.port}/`);
        response.end();
      } else if (path === "/to-mixed") {
        response.statusCode = 307;
        response.setHeader("location", `http://mixed.test:${main.port}/article`);
        response.end();
      } else if (path === "/to-metadata") {
        response.statusCode = 302;
        response.setHeader("location", "http://meta.test/latest/meta-data/");
        response.end();
      } else if (path === "/to-file") {
        response.statusCode = 302;
        response.setHeader("location", "file:///etc/passwd");
        response.end();
      } else if (path === "/huge") {
        response.setHeader("content-type", "text/plain");
        response.end("x".repeat(1_000_000));
      } else if (path === "/bomb") {
        // 20 MB of one letter in about 20 KB: read only up to the cap.
        response.setHeader("content-type", "text/plain");
        response.setHeader("content-encoding", "gzip");
        response.end(bomb);
      } else if (path === "/slow") {
        response.setHeader("content-type", "text/html");
        response.write("<html><body><p>start");
        // Never ends: the deadline must.
      } else if (path === "/pdf") {
        response.setHeader("content-type", "application/pdf");
        response.end("%PDF-1.4");
      } else {
        response.statusCode = 404;
        response.end("not here");
      }
    });
    base = `http://127.0.0.1:${main.port}`;
    fetcher = createPageFetcher(LIMITS, publicAddressPolicy(["127.0.0.1"]), resolve);
    strict = createPageFetcher(LIMITS, publicAddressPolicy(), resolve);
    const toText = (kind: "html" | "text", bytes: Uint8Array, page: { charset?: string; url: string }, signal: AbortSignal) => extractText(kind, bytes, EXTRACT, signal, page);
    tool = createFetchUrlTool({ fetcher, toText, maxKb: 64 });
    strictTool = createFetchUrlTool({ fetcher: strict, toText, maxKb: 64 });
  });

  afterAll(async () => {
    await fetcher.close();
    await strict.close();
    main.server.closeAllConnections();
    other.server.closeAllConnections();
    await new Promise((done) => main.server.close(done));
    await new Promise((done) => other.server.close(done));
  });

  it("returns the article's readable text: title, headings, paragraphs, list, code, absolute links; no menu, script or style", async () => {
    const { text, isError } = await call(tool, `${base}/article`);
    expect(isError).toBe(false);
    expect(text.startsWith(`URL: ${base}/article\n`)).toBe(true);
    expect(text).toContain("The ferry returns");
    expect(text).toContain(`The old ferry [Maria](${base}/ferry) sails again from the north pier on Monday`);
    expect(text).toContain("Tickets cost 4 euros.");
    expect(text).toContain("- Monday to Friday: 7:00\n");
    expect(text).toContain("```\n  timetable.txt\n  07:00 north pier\n```");
    expect(text).not.toContain("script text");
    expect(text).not.toContain("color:red");
    expect(text).not.toContain("About us");
  }, 60_000);

  it("decodes the charset the server names, and reads text/plain as it is", async () => {
    expect((await call(tool, `${base}/latin1`)).text).toContain("Crème brûlée for 3 £.");
    expect((await call(tool, `${base}/plain`)).text).toMatch(/just text\nline two$/);
  }, 60_000);

  it("follows redirects up to the limit, and says where it was sent from", async () => {
    const { text } = await call(tool, `${base}/hop/2`);
    expect(text).toContain(`URL: ${base}/article\n(redirected from ${base}/hop/2)`);
    expect(text).toContain("The ferry returns");
    const tooMany = await call(tool, `${base}/hop/5`);
    expect(tooMany.isError).toBe(true);
    expect(tooMany.text).toMatch(/more than 3 redirects/);
  }, 60_000);

  it("refuses loopback, private and link-local addresses without a test allowlist, literal or after DNS", async () => {
    const before = main.hits.length;
    for (const url of [`${base}/article`, `http://a.test:${main.port}/article`, `http://[::1]:${main.port}/`, "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/", "http://[::ffff:127.0.0.1]:80/", "http://[fe80::1]/", "http://100.64.0.1/"]) {
      const result = await call(strictTool, url);
      expect(result.isError, url).toBe(true);
      expect(result.text, url).toMatch(/not a public address/);
    }
    expect(main.hits.length).toBe(before);
  }, 60_000);

  it("checks every redirect hop: a hop to a private address, a name that also resolves inside, or another scheme is refused before it is requested", async () => {
    const internal = await call(tool, `${base}/to-internal`);
    expect(internal).toMatchObject({ isError: true, text: expect.stringMatching(/127\.0\.0\.2 is not a public address/) });
    expect(other.hits).toEqual([]);
    const before = main.hits.length;
    const mixed = await call(tool, `${base}/to-mixed`);
    expect(mixed).toMatchObject({ isError: true, text: expect.stringMatching(/mixed\.test resolves to 10\.1\.2\.3, which is not a public address/) });
    // Only the redirecting page was asked for: the refused hop never connected.
    expect(main.hits.slice(before).map((hit) => hit.path)).toEqual(["/to-mixed"]);
    expect(await call(tool, `${base}/to-metadata`)).toMatchObject({ isError: true, text: expect.stringMatching(/meta\.test resolves to 169\.254\.169\.254/) });
    expect(await call(tool, `${base}/to-file`)).toMatchObject({ isError: true, text: expect.stringMatching(/only http and https/) });
    // A name the test resolver maps to the allowed loopback address is read.
    expect((await call(tool, `http://a.test:${main.port}/plain`)).text).toContain("just text");
  }, 60_000);

  it("reads at most the size limit, after decompression (a gzip bomb stops at the cap), and says so", async () => {
    const huge = await call(tool, `${base}/huge`);
    expect(huge.text).toContain("[only the first 64 KB of the page were read]");
    expect(huge.text.match(/x+/)?.[0].length).toBe(64 * 1024);
    const bomb = await call(tool, `${base}/bomb`);
    expect(bomb.text).toContain("[only the first 64 KB of the page were read]");
    expect(bomb.text.match(/a+$/)?.[0].length).toBe(64 * 1024);
  }, 60_000);

  it("gives up at the deadline on a page that never ends; refuses other content types, HTTP errors, credentials and other schemes", async () => {
    expect(await call(tool, `${base}/slow`)).toMatchObject({ isError: true, text: expect.stringMatching(/did not arrive within 3000 ms/) });
    expect(await call(tool, `${base}/pdf`)).toMatchObject({ isError: true, text: expect.stringMatching(/not a web page or text \(application\/pdf\)/) });
    expect(await call(tool, `${base}/missing`)).toMatchObject({ isError: true, text: expect.stringMatching(/HTTP 404/) });
    expect(await call(tool, `http://user:pw@127.0.0.1:${main.port}/article`)).toMatchObject({ isError: true, text: expect.stringMatching(/user name or password/) });
    expect(await call(tool, "ftp://127.0.0.1/file")).toMatchObject({ isError: true, text: expect.stringMatching(/only http and https/) });
  }, 60_000);

  it("stops when the turn is aborted", async () => {
    const controller = new AbortController();
    const running = tool.run({ url: `${base}/slow` }, context(controller.signal));
    setTimeout(() => controller.abort(new Error("stopped by /stop")), 200);
    await expect(running).rejects.toThrow(/stopped by \/stop/);
  }, 60_000);
});
