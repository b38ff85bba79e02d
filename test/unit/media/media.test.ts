import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attachmentPlaceholder, type Attachment } from "../../../src/core/attachments.js";
import type { ChatMessage } from "../../../src/core/messages.js";
import { attachmentTokens } from "../../../src/context/image-tokens.js";
import { createTokenCounter } from "../../../src/context/tokens.js";
import { dropAnsweredImages } from "../../../src/session-context/session-context.js";
import { joinPasteParts } from "../../../src/agent/paste-parts.js";
import type { InboxEntry } from "../../../src/session/store.js";
import { CorruptFileError, documentType, extractText } from "../../../src/media/extract.js";
import { ImageCache, imageFormat, ToolImageStore, withImageParts, withoutImageParts } from "../../../src/media/images.js";
import { toApiMessage } from "../../../src/core/messages.js";
import { silentLogger } from "../../../src/logger.js";
import { createMediaFetcher } from "../../../src/media/sources.js";
import { isVisionRefusal } from "../../../src/media/vision.js";
import { makePdf, makePng } from "../../helpers/media-files.js";
import { assemblePdf } from "../../helpers/hostile-files.js";

/** A PDF with one line of text on each page. */
function manyPagesPdf(texts: readonly string[]): Buffer {
  const first = 4;
  const objects: string[] = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    `<< /Type /Pages /Kids [${texts.map((_, index) => `${first + index * 2} 0 R`).join(" ")}] /Count ${texts.length} >>`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
  ];
  texts.forEach((text, index) => {
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents ${first + index * 2 + 1} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`);
    const stream = `BT /F1 12 Tf 72 720 Td (${text}) Tj ET`;
    objects.push(`<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`);
  });
  return assemblePdf(objects);
}

const image = (fields: Partial<Attachment> = {}): Attachment => ({
  kind: "image", label: "photo", name: "p.jpg", source: { platform: "url", url: "http://x/p" }, inline: true, ...fields,
});

describe("pictures in the context (the formula itself: test/unit/context/image-tokens.test.ts)", () => {
  it("counts inline pictures into the message's tokens, and nothing once they are no longer inline", () => {
    const counter = createTokenCounter("test", (text) => text.length);
    const message: ChatMessage = { id: "m1", role: "user", content: "abc", attachments: [image({ width: 512, height: 512 })] };
    expect(attachmentTokens(message)).toBe(255);
    expect(counter.countMessage(message)).toBe(4 + 3 + 255);
    const [dropped] = dropAnsweredImages([message, { id: "m2", role: "assistant", content: "a red square" }]);
    expect(dropped?.tokens).toBeUndefined();
    expect(counter.countMessage(dropped!)).toBe(4 + 3);
  });

  it("keeps a picture the model has not answered yet (the new message of this turn)", () => {
    const messages: ChatMessage[] = [
      { id: "m1", role: "user", content: "old", attachments: [image()] },
      { id: "m2", role: "assistant", content: "a cat" },
      { id: "m3", role: "user", content: "new", attachments: [image({ name: "new.jpg" })] },
    ];
    const result = dropAnsweredImages(messages);
    expect(result[0]).toMatchObject({ attachments: [{ inline: false }] });
    expect(result[2]).toBe(messages[2]);
    // The originals (the transcript's copies) are untouched.
    expect(messages[0]).toMatchObject({ attachments: [{ inline: true }] });
  });
});

describe("vision refusals", () => {
  it("recognises the vendors' wording, in the error or its cause", () => {
    for (const text of [
      "400 Invalid content type. image_url is only supported by certain models.",
      "No endpoints found that support image input",
      "llava is not a multimodal model",
      "At most 0 image(s) may be provided in one request.",
      "this model does not support image input",
      "image input is not supported - hint: if this is unexpected, you may need to provide the mmproj",
    ]) expect(isVisionRefusal(new Error("wrapped", { cause: new Error(text) })), text).toBe(true);
    expect(isVisionRefusal(new Error("This model's maximum context length is 8192 tokens"))).toBe(false);
    expect(isVisionRefusal("image_url is only supported by certain models")).toBe(false);
  });

  it("takes the image parts out of a request and keeps its text", () => {
    const messages = withoutImageParts([
      { role: "system", content: "s" },
      { role: "user", content: [{ type: "text", text: "[photo p.jpg]\nlook" }, { type: "image_url", image_url: { url: "data:image/png;base64,AA==" } }] },
    ]);
    expect(messages).toEqual([{ role: "system", content: "s" }, { role: "user", content: "[photo p.jpg]\nlook" }]);
  });
});

describe("documents", () => {
  it("tells text, PDF and the rest apart by extension and type", () => {
    expect(documentType("main.ts", "video/mp2t")).toBe("text");
    expect(documentType("data.csv", undefined)).toBe("text");
    expect(documentType("notes", "text/plain")).toBe("text");
    expect(documentType("Report.PDF", undefined)).toBe("pdf");
    expect(documentType("a.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document")).toBe("unsupported");
    expect(documentType("movie.mp4", "video/mp4")).toBe("unsupported");
  });

  const limits = { memoryMb: 256, timeoutMs: 30_000, maxPages: 500, maxChars: 400_000 };
  const text = async (bytes: Uint8Array, overrides: Partial<typeof limits> = {}) => (await extractText("text", bytes, { ...limits, ...overrides })).text;

  it("extracts a PDF's text and refuses a damaged one", async () => {
    expect((await extractText("pdf", makePdf(["First line (with parens)", "Zweite Zeile"]), limits)).text).toMatch(/First line \(with parens\)\s+Zweite Zeile/);
    await expect(extractText("pdf", Buffer.from("%PDF-1.4 garbage"), limits)).rejects.toBeInstanceOf(CorruptFileError);
  });

  it("decodes UTF-8 (emoji, long runs without spaces), falls back to Latin-1, refuses binary", async () => {
    const sample = `🇫🇷 naïve ${"x".repeat(5000)}`;
    expect(await text(Buffer.from(`\uFEFF${sample}`))).toBe(sample);
    expect(await text(Buffer.from([0x63, 0x61, 0x66, 0xe9]))).toBe("café");
    await expect(text(Buffer.from([0x41, 0x00, 0x42]))).rejects.toBeInstanceOf(CorruptFileError);
  });

  it("refuses random bytes without NUL as binary, keeps ANSI-coloured logs", async () => {
    const random = Buffer.alloc(1 << 20);
    for (let index = 0; index < random.length; index++) random[index] = 1 + Math.floor(Math.random() * 255);
    await expect(text(random)).rejects.toThrow(/binary-looking/);
    const log = "\u001b[32mINFO\u001b[0m started\r\n".repeat(2000);
    expect(await text(Buffer.from(log))).toBe(log);
  });

  it("keeps at most maxChars of a text file and says what was kept", async () => {
    const extracted = await extractText("text", Buffer.from("a".repeat(5000)), { ...limits, maxChars: 1000 });
    expect(extracted.text).toBe("a".repeat(1000));
    expect(extracted.truncated).toBe("the file's first 1000 characters of 5000");
  });

  it("reads at most maxPages pages of a PDF", async () => {
    const pages = await manyPagesPdf(["one", "two", "three"]);
    const all = await extractText("pdf", pages, limits);
    expect(all.text).toBe("one\n\ntwo\n\nthree");
    expect(all.truncated).toBeUndefined();
    const first = await extractText("pdf", pages, { ...limits, maxPages: 2 });
    expect(first.text).toBe("one\n\ntwo");
    expect(first.truncated).toBe("the first 2 pages of 3");
  });
});

describe("pictures", () => {
  it("reads the format off the magic number, never the name", async () => {
    expect(imageFormat(await makePng(2, 2))).toBe("image/png");
    expect(imageFormat(Buffer.from([0xff, 0xd8, 0xff, 0xe0]))).toBe("image/jpeg");
    expect(imageFormat(Buffer.from("GIF89a..."))).toBe("image/gif");
    expect(imageFormat(Buffer.from("RIFF\u0000\u0000\u0000\u0000WEBPVP8 "))).toBe("image/webp");
    expect(imageFormat(Buffer.from("<html>not a picture</html>"))).toBeUndefined();
  });

  it("names the file, size and dimensions in the placeholder", () => {
    expect(attachmentPlaceholder(image({ size: 85_000, width: 1280, height: 720 }))).toBe("[photo p.jpg, 83 KB, 1280×720]");
  });
});

describe("albums", () => {
  it("joins an album's items into one message with all their pictures", () => {
    const base = { platform: "telegram" as const, sessionKey: "tg:1", chatId: "1", userId: "1", userName: "Ada", chatType: "private" as const, sentAt: 0, receivedAt: 0, mediaGroupId: "g", mayContinue: true };
    const joined = joinPasteParts<InboxEntry>([
      { ...base, messageId: "10", text: "which?", attachments: [image({ name: "a.jpg" })], attachmentText: "[photo a.jpg]" },
      { ...base, messageId: "11", text: "", attachments: [image({ name: "b.jpg" })], attachmentText: "[photo b.jpg]" },
      { ...base, messageId: "12", text: "", attachments: [image({ name: "c.jpg" })], attachmentText: "[photo c.jpg]" },
      { ...base, messageId: "13", text: "next", mediaGroupId: "other" },
    ]);
    expect(joined).toHaveLength(2);
    expect(joined[0]).toMatchObject({ messageId: "10", text: "which?", attachmentText: "[photo a.jpg]\n[photo b.jpg]\n[photo c.jpg]" });
    expect(joined[0]?.attachments?.map((attachment) => attachment.name)).toEqual(["a.jpg", "b.jpg", "c.jpg"]);
  });
});

describe("fetching from the platforms", () => {
  const token = "123456:SECRET-token-value";
  let server: Server;
  let root: string;
  const seen: string[] = [];
  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push(request.url ?? "");
      const url = request.url ?? "";
      if (url === `/bot${token}/getFile`) {
        let body = "";
        request.on("data", (chunk: Buffer) => (body += chunk.toString()));
        request.on("end", () => {
          const { file_id } = JSON.parse(body) as { file_id: string };
          if (file_id === "big") return response.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ ok: false, error_code: 400, description: "Bad Request: file is too big" }));
          response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ ok: true, result: { file_id, file_path: `docs/${file_id}` } }));
        });
        return;
      }
      if (url === `/file/bot${token}/docs/ok`) return response.writeHead(200, { "content-length": "5" }).end("hello");
      if (url === `/file/bot${token}/docs/liar`) return response.writeHead(200, { "content-length": "999999999" }).end("x");
      if (url === "/cdn/expired") return response.writeHead(404).end();
      if (url === "/cdn/fresh") return response.writeHead(200).end("fresh bytes");
      if (url === "/api/v10/channels/1/messages/2") return response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ attachments: [{ id: "3", url: `${root}/cdn/fresh` }] }));
      response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    root = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  const limits = { maxBytes: 1_000, timeoutMs: 5_000 };
  const telegramFile = (fileId: string, size?: number): Attachment => ({ kind: "document", label: "file", name: "f", source: { platform: "telegram", fileId }, ...(size === undefined ? {} : { size }) });

  it("downloads through getFile, refuses by announced size, getFile's refusal and content-length; never says the URL", async () => {
    const fetcher = createMediaFetcher({ telegram: { token, apiRoot: root } });
    const ok = await fetcher(telegramFile("ok"), limits);
    expect(ok.ok && Buffer.from(ok.bytes).toString()).toBe("hello");
    const before = seen.length;
    expect(await fetcher(telegramFile("ok", 5_000), limits)).toMatchObject({ ok: false, failure: "too-large" });
    expect(seen.length).toBe(before);
    expect(await fetcher(telegramFile("big"), limits)).toMatchObject({ ok: false, failure: "too-large" });
    const liar = await fetcher(telegramFile("liar"), limits);
    expect(liar).toMatchObject({ ok: false, failure: "too-large" });
    const missing = await fetcher(telegramFile("missing"), limits);
    expect(missing.ok).toBe(false);
    for (const outcome of [liar, missing]) expect(JSON.stringify(outcome)).not.toContain("SECRET");
  });

  it("renews an expired Discord CDN URL by reading the message again", async () => {
    const fetcher = createMediaFetcher({ discord: { token: "dtoken", apiRoot: `${root}/api` } });
    const result = await fetcher({ kind: "image", label: "image", name: "a.png", source: { platform: "discord", url: `${root}/cdn/expired`, channelId: "1", messageId: "2", attachmentId: "3" } }, limits);
    expect(result.ok && Buffer.from(result.bytes).toString()).toBe("fresh bytes");
  });
});

describe("pictures a tool returned (MCP image content)", () => {
  it("follow the run of tool results as a user message with image parts, only while they are kept, never for damaged data", async () => {
    const png = (await makePng(4, 4)).toString("base64");
    const store = new ToolImageStore();
    store.put("call_1", [{ mimeType: "image/png", data: png }]);
    store.put("call_broken", [{ mimeType: "image/png", data: Buffer.from("not a picture").toString("base64") }]);
    expect(store.has("call_broken")).toBe(false);
    const context: ChatMessage[] = [
      { id: "m1", role: "user", content: "draw me the logo" },
      { id: "m2", role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "function", function: { name: "every__get-tiny-image", arguments: "{}" } }, { id: "call_2", type: "function", function: { name: "t", arguments: "{}" } }] },
      { id: "m3", role: "tool", tool_call_id: "call_1", content: "[image 1: image/png, 0.1 KB]" },
      { id: "m4", role: "tool", tool_call_id: "call_2", content: "ok" },
    ];
    const wire = context.map((message) => toApiMessage(message));
    const fetcher = async () => ({ ok: false as const, failure: "failed" as const, detail: "unused" });
    const result = await withImageParts(wire, context, { fetcher, cache: new ImageCache(), detail: "low", maxBytes: 1_000, timeoutMs: 1_000, log: silentLogger, toolImages: store });
    expect(result.map((message) => message.role)).toEqual(["user", "assistant", "tool", "tool", "user"]);
    expect(result[4]).toEqual({ role: "user", content: [{ type: "text", text: "[the pictures the tool calls above returned]" }, { type: "image_url", image_url: { url: `data:image/png;base64,${png}`, detail: "low" } }] });
    // Without the kept pictures (another process, after a restart) the request is the context as it is.
    const without = await withImageParts(wire, context, { fetcher, cache: new ImageCache(), detail: "low", maxBytes: 1_000, timeoutMs: 1_000, log: silentLogger, toolImages: new ToolImageStore() });
    expect(without).toEqual(wire);
  });
});
