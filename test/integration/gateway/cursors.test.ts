import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { RedisChannelCursors } from "../../../src/gateway/cursors.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { uniquePrefix } from "../../helpers/config.js";

describe("channel cursors in Redis", () => {
  let redis: Redis;
  let prefix: string;
  let cursors: RedisChannelCursors;

  beforeEach(() => {
    redis = createRedis(inject("redisUrl"));
    prefix = uniquePrefix("cursor");
    cursors = new RedisChannelCursors(redis, prefix);
  });

  afterEach(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it("only moves forward, comparing 19- and 20-digit snowflakes as numbers", async () => {
    expect(await cursors.get("discord", "300000000000000001")).toBeUndefined();
    await cursors.advance("discord", "300000000000000001", "9223372036854775806");
    // Lexically larger but numerically smaller (one digit fewer): ignored.
    await cursors.advance("discord", "300000000000000001", "999999999999999999");
    expect(await cursors.get("discord", "300000000000000001")).toBe("9223372036854775806");
    // Past 2^53, where a Lua number would round both to the same value.
    await cursors.advance("discord", "300000000000000001", "9223372036854775807");
    expect(await cursors.get("discord", "300000000000000001")).toBe("9223372036854775807");
    await cursors.advance("discord", "300000000000000001", "10000000000000000000");
    expect(await cursors.get("discord", "300000000000000001")).toBe("10000000000000000000");
  });

  it("keeps platforms and deployments apart and lists a platform's channels", async () => {
    await cursors.advance("discord", "1", "100");
    await cursors.advance("discord", "2", "200");
    await cursors.advance("telegram", "1", "5");
    expect(await cursors.list("discord")).toEqual(new Map([["1", "100"], ["2", "200"]]));
    expect(await new RedisChannelCursors(redis, uniquePrefix("other")).list("discord")).toEqual(new Map());
  });

  it("forgets a channel, and only that channel of that platform", async () => {
    await cursors.advance("discord", "1", "100");
    await cursors.advance("discord", "2", "200");
    await cursors.advance("telegram", "1", "5");
    await cursors.forget("discord", "1");
    expect(await cursors.list("discord")).toEqual(new Map([["2", "200"]]));
    expect(await cursors.get("telegram", "1")).toBe("5");
    await cursors.forget("discord", "1");
  });

  it("survives a new connection (a gateway restart)", async () => {
    await cursors.advance("discord", "7", "123456789012345678");
    const other = createRedis(inject("redisUrl"));
    try {
      expect(await new RedisChannelCursors(other, prefix).get("discord", "7")).toBe("123456789012345678");
    } finally {
      other.disconnect();
    }
  });

  it("refuses an id that is not a decimal message id", async () => {
    await expect(cursors.advance("discord", "7", "12a")).rejects.toThrow(RangeError);
    await expect(cursors.advance("discord", "7", "")).rejects.toThrow(RangeError);
  });

  it("keeps the larger id when two gateways advance at once", async () => {
    const ids = Array.from({ length: 50 }, (_, i) => String(1_000_000_000_000_000_000n + BigInt(i * 7919 % 50)));
    await Promise.all(ids.map((id) => cursors.advance("discord", "9", id)));
    expect(await cursors.get("discord", "9")).toBe(String(1_000_000_000_000_000_049n));
  });
});
