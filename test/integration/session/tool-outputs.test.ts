import { afterAll, describe, expect, inject, it } from "vitest";
import { createRedis } from "../../../src/queue/index.js";
import { ToolOutputStore } from "../../../src/session/tool-outputs.js";
import { uniquePrefix } from "../../helpers/config.js";

describe("stored tool outputs (real Redis)", () => {
  const redis = createRedis(inject("redisUrl"));
  const store = new ToolOutputStore(redis, uniquePrefix("out"));
  afterAll(() => redis.quit());

  it("pages through a large output by character offset, across chunks and surrogate pairs", async () => {
    // 16,384 is the chunk size: put an emoji across that boundary, and enough text for several chunks.
    const text = `${"a".repeat(16_383)}😀${"b".repeat(40_000)}✓end`;
    await store.save("tg:1", "session-a", "m5", text);
    const page = async (offset: number, length: number) => (await store.read("tg:1", "session-a", "m5", offset, length))!;
    expect((await page(0, 10)).total).toBe(text.length);
    expect((await page(16_380, 8)).text).toBe(text.slice(16_380, 16_388));
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
});
