/**
 * Redis bounded per chat (issue 29): the review's 20 MB notes.txt of random bytes stored 20 MB a
 * message. Now binary-looking "text" is refused before anything is stored, a huge real text
 * keeps MAX_DOCUMENT_CHARS, and the chat's originals stay within its quota (real Redis, real
 * extraction thread, the store the worker uses).
 */
import { afterAll, describe, expect, inject, it } from "vitest";
import type { Attachment } from "../../../src/core/attachments.js";
import { silentLogger } from "../../../src/logger.js";
import { ImageCache } from "../../../src/media/images.js";
import { createMediaResolver } from "../../../src/media/resolve.js";
import { createRedis } from "../../../src/queue/index.js";
import { ToolOutputStore } from "../../../src/session/tool-outputs.js";
import { uniquePrefix } from "../../helpers/config.js";
import { inbound } from "../../helpers/recording-adapter.js";

const MB = 1024 * 1024;
const notes = (id: string): Attachment => ({ kind: "document", label: "file", name: "notes.txt", source: { platform: "url", url: `http://files.invalid/${id}` } });

describe("documents in Redis are bounded", () => {
  const redis = createRedis(inject("redisUrl"));
  const prefix = uniquePrefix("docs");
  const store = new ToolOutputStore(redis, prefix, { quotaBytes: 2 * MB });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  const files = new Map<string, Uint8Array>();
  const resolver = createMediaResolver({
    fetcher: async (attachment) => ({ ok: true, contentType: "text/plain", bytes: files.get(attachment.source.platform === "url" ? attachment.source.url : "")! }),
    limits: { maxAudioBytes: MB, maxFileBytes: 20 * MB, timeoutMs: 10_000, maxMessageChars: 16_000, extract: { memoryMb: 256, timeoutMs: 60_000, maxPages: 500, maxChars: 400_000 } },
    images: new ImageCache(),
  });
  const send = async (id: string, bytes: Uint8Array) => {
    files.set(`http://files.invalid/${id}`, bytes);
    return resolver.resolve([inbound({ text: "", attachments: [notes(id)] })], { log: silentLogger, saveText: (outputId, text) => store.save("tg:42", "s1", outputId, text) });
  };

  it("20 MB of random bytes named notes.txt is refused and stores nothing", async () => {
    const random = new Uint8Array(20 * MB);
    for (let index = 0; index < random.length; index++) random[index] = 1 + ((Math.random() * 255) | 0);
    const resolved = await send("random", random);
    expect(resolved.notices.map((notice) => notice.text)).toEqual(["Sorry, I couldn't use your notes.txt: it seems damaged or is not what its name says."]);
    expect(await store.storedBytes("tg:42")).toBe(0);
    expect(await redis.keys(`${prefix}:*tool-outputs*`)).toEqual([]);
  });

  it("20 MB of real text keeps 400 000 characters (16 000 for the model, the rest for recall), and many such files stay within the chat's quota", async () => {
    const line = "2026-12-06 05:00:00 INFO a perfectly ordinary log line of text\n";
    const body = line.repeat(Math.ceil((20 * MB) / line.length));
    for (let sent = 0; sent < 8; sent++) {
      // A different file each time (the stored original is named by the file's hash).
      const resolved = await send(`log-${sent}`, Buffer.from(`file ${sent}\n${body}`));
      const message = resolved.entries[0]!;
      expect(message.attachments?.[0]?.extractedChars).toBe(400_000);
      expect(message.attachmentText).toContain("[only the file's first 400000 characters of");
      expect(message.attachmentText!.length).toBeLessThan(16_000 + 1_000);
    }
    // Each kept 400 000 bytes; the quota (2 MB here) holds the newest five.
    expect(await store.storedBytes("tg:42")).toBe(5 * 400_000);
    // Redis's own count of the hash (every field: SAMPLES 0): the text plus a few per cent.
    expect(Number(await redis.call("MEMORY", "USAGE", `${prefix}:{tg:42}:tool-outputs:s1`, "SAMPLES", "0"))).toBeLessThan(5 * 400_000 * 1.05);
  });
});
