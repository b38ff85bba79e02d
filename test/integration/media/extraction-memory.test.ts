/**
 * A refused document is refused once: a retried turn (or another worker) neither downloads nor
 * parses it again, and one whose extraction never answered (the process died mid-way) is not
 * tried a second time (src/media/extraction-memory.ts, real Redis, real extraction thread).
 */
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import type { Attachment } from "../../../src/core/attachments.js";
import { silentLogger } from "../../../src/logger.js";
import { fileKey, redisExtractionMemory, type ExtractionMemory } from "../../../src/media/extraction-memory.js";
import { ImageCache } from "../../../src/media/images.js";
import { createMediaResolver } from "../../../src/media/resolve.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { uniquePrefix } from "../../helpers/config.js";
import { truncated } from "../../helpers/hostile-files.js";
import { makePdf } from "../../helpers/media-files.js";
import { inbound } from "../../helpers/recording-adapter.js";

const broken: Attachment = { kind: "document", label: "file", name: "broken.pdf", source: { platform: "telegram", fileId: "BQbroken", fileUniqueId: "u-broken" } };
const good: Attachment = { kind: "document", label: "file", name: "good.pdf", source: { platform: "telegram", fileId: "BQgood", fileUniqueId: "u-good" } };

describe("extraction verdicts across retries", () => {
  let redis: Redis;
  let prefix: string;
  let memory: ExtractionMemory;
  let downloads: string[];

  const resolver = () => createMediaResolver({
    fetcher: async (attachment) => {
      downloads.push(attachment.name);
      return { ok: true, contentType: "application/pdf", bytes: attachment.name === "broken.pdf" ? truncated(makePdf(["cut off"]), 0.5) : makePdf(["all fine"]) };
    },
    limits: { maxAudioBytes: 1 << 20, maxFileBytes: 1 << 20, timeoutMs: 5_000, maxMessageChars: 1_000, extract: { memoryMb: 128, timeoutMs: 30_000, maxPages: 10, maxChars: 10_000 } },
    images: new ImageCache(),
    extractions: memory,
  });
  const resolve = (attachment: Attachment) => resolver().resolve([inbound({ text: "read this", attachments: [attachment] })], { log: silentLogger, saveText: async () => undefined });

  beforeEach(() => {
    redis = createRedis(inject("redisUrl"));
    prefix = uniquePrefix("extract");
    memory = redisExtractionMemory(redis, prefix);
    downloads = [];
  });

  afterEach(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it("a damaged file is parsed once; the retry says the same without fetching it", async () => {
    const first = await resolve(broken);
    expect(first.notices.map((notice) => notice.text)).toEqual(["Sorry, I couldn't use your broken.pdf: it seems damaged or is not what its name says."]);
    const retry = await resolve(broken);
    expect(retry.notices.map((notice) => notice.text)).toEqual(first.notices.map((notice) => notice.text));
    expect(retry.entries[0]?.attachments?.[0]?.problem).toBe("failed");
    expect(downloads).toEqual(["broken.pdf"]);
    expect(await redis.ttl(`${prefix}:extract:${fileKey(broken)}`)).toBeGreaterThan(6 * 24 * 3600);
  });

  it("an extraction that never answered (the worker died) is not tried again", async () => {
    await memory.set(fileKey(good), "started");
    const retry = await resolve(good);
    expect(retry.notices.map((notice) => notice.text)).toEqual(["Sorry, I couldn't use your good.pdf: reading it did not finish when I tried, so I won't try again."]);
    expect(downloads).toEqual([]);
  });

  it("a file read well leaves nothing behind and reads again on a retry", async () => {
    const first = await resolve(good);
    expect(first.notices).toEqual([]);
    expect(first.entries[0]?.attachmentText).toContain("all fine");
    expect(await memory.get(fileKey(good))).toBeUndefined();
    await resolve(good);
    expect(downloads).toEqual(["good.pdf", "good.pdf"]);
  });
});
