import { afterAll, describe, expect, inject, it } from "vitest";
import { createRedis } from "../../../src/queue/index.js";
import { ToolOutputStore } from "../../../src/session/tool-outputs.js";
import { uniquePrefix } from "../../helpers/config.js";

describe("stored tool outputs (real Redis)", () => {
  const redis = createRedis(inject("redisUrl"));
  const store = new ToolOutputStore(redis, uniquePrefix("out"));
  afterAll(() => redis.quit());

  it("pages through a large output by character offset, across chunks and surrogate pairs", async () => {
    // 16,000 is the chunk size: put an emoji across that boundary, and enough text for several chunks.
    const text = `${"a".repeat(15_999)}😀${"b".repeat(40_000)}✓end`;
    await store.save("tg:1", "session-a", "m5", text);
    const page = async (offset: number, length: number) => (await store.read("tg:1", "session-a", "m5", offset, length))!;
    expect((await page(0, 10)).total).toBe(text.length);
    expect((await page(15_996, 8)).text).toBe(text.slice(15_996, 16_004));
    expect((await page(30_000, 5_000)).text).toBe(text.slice(30_000, 35_000));
    expect((await page(text.length - 4, 100)).text).toBe("✓end");
    expect((await page(text.length + 5, 10)).text).toBe("");
  });

  it("keeps conversations and sessions apart", async () => {
    await store.save("tg:1", "session-a", "m9", "mine");
    expect(await store.read("tg:1", "session-b", "m9", 0, 10)).toBeUndefined();
    expect(await store.read("tg:2", "session-a", "m9", 0, 10)).toBeUndefined();
    expect((await store.read("tg:1", "session-a", "m9", 0, 10))?.text).toBe("mine");
  });

  it("keeps at most the chat's quota of originals, dropping the oldest first, across conversations", async () => {
    const prefix = uniquePrefix("quota");
    const small = new ToolOutputStore(redis, prefix, { quotaBytes: 100_000 });
    await small.save("tg:7", "session-a", "old", "o".repeat(40_000));
    await small.save("tg:7", "session-b", "mid", "m".repeat(40_000));
    expect(await small.storedBytes("tg:7")).toBe(80_000);
    // 40 KB more passes 100 KB: the oldest (in the archived conversation) goes, whole.
    await small.save("tg:7", "session-b", "new", "n".repeat(40_000));
    expect(await small.read("tg:7", "session-a", "old", 0, 10)).toBeUndefined();
    expect(await redis.hlen(`${prefix}:{tg:7}:tool-outputs:session-a`)).toBe(0);
    expect((await small.read("tg:7", "session-b", "mid", 0, 3))?.text).toBe("mmm");
    expect((await small.read("tg:7", "session-b", "new", 39_998, 5))?.text).toBe("nn");
    expect(await small.storedBytes("tg:7")).toBe(80_000);
    // Another chat has its own quota.
    await small.save("tg:8", "session-c", "other", "x".repeat(90_000));
    expect((await small.read("tg:7", "session-b", "mid", 0, 1))?.text).toBe("m");
  });

  it("a retried save replaces the original (no double count, no stale chunks); one larger than the quota keeps its head", async () => {
    const prefix = uniquePrefix("quota");
    const small = new ToolOutputStore(redis, prefix, { quotaBytes: 60_000 });
    await small.save("tg:9", "s", "m1", "a".repeat(50_000));
    await small.save("tg:9", "s", "m1", "b".repeat(20_000));
    expect(await small.storedBytes("tg:9")).toBe(20_000);
    expect(await redis.hlen(`${prefix}:{tg:9}:tool-outputs:s`)).toBe(1 + 2);
    expect((await small.read("tg:9", "s", "m1", 0, 100_000))?.text).toBe("b".repeat(20_000));
    // 😀 is 4 bytes of UTF-8: 60 000 bytes hold 15 000 of them and no half.
    await small.save("tg:9", "s", "huge", "😀".repeat(40_000));
    const huge = await small.read("tg:9", "s", "huge", 0, 1_000_000);
    expect(huge?.text).toBe("😀".repeat(15_000));
    expect(await small.read("tg:9", "s", "m1", 0, 1)).toBeUndefined();
    expect(await small.storedBytes("tg:9")).toBe(60_000);
  });
});
