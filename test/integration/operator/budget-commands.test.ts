/**
 * The Redis work of one LLM call's budget (issue #18), counted on a redis-server of its own (the
 * shared test Redis has other files' commands in its statistics): a reserve is one round trip
 * that reads the admin's limits itself, a settle is one more, and each sends only the commands
 * listed here. Also what the folded scripts must keep: an admin's limit (or `off`) applies to the
 * very next reserve, a limit changed between reserve and settle leaves nothing reserved, and every
 * counter they write has a lifetime.
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BudgetMeter } from "../../../src/budget/index.js";
import { BudgetExhaustedError } from "../../../src/errors.js";
import { createRedis } from "../../../src/queue/index.js";
import { uniquePrefix } from "../../helpers/config.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { countRoundTrips } from "../../helpers/round-trips.js";

/** Calls per command since the last call (INFO commandstats: the commands scripts run included). */
function commandCounter(redis: Redis) {
  let last = new Map<string, number>();
  const read = async () => {
    const now = new Map<string, number>();
    for (const match of (await redis.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) now.set(match[1]!, Number(match[2]));
    return now;
  };
  return {
    async start() {
      last = await read();
    },
    async delta(): Promise<Record<string, number>> {
      const now = await read();
      const out: Record<string, number> = {};
      for (const [name, calls] of now) {
        const grown = calls - (last.get(name) ?? 0);
        if (grown > 0 && name !== "info") out[name] = grown;
      }
      last = await read();
      return out;
    },
  };
}

describe("the budget's Redis work per call", () => {
  let server: RedisServerHandle;
  let redis: Redis;
  let counted: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = createRedis(server.url);
    counted = createRedis(server.url);
    // Both scripts loaded (a connection's first run of a script may send its text after a NOSCRIPT).
    const warm = new BudgetMeter(counted, uniquePrefix("warm"), { chat: { daily: { usd: 1 } }, chats: {}, users: {} });
    await warm.settle(await warm.reserve({ chat: "tg:1", user: "tg:1" }, { usd: 0.1, tokens: 1 }), { usd: 0.1, tokens: 1 });
  });
  afterAll(async () => {
    redis.disconnect();
    counted.disconnect();
    await server.dispose();
  });

  const accounts = { chat: "tg:-100123", user: "tg:42" };
  const estimate = { usd: 0.002, tokens: 3_000 };
  const actual = { usd: 0.001, tokens: 1_500 };

  it("without limits: a reserve reads both accounts' limits in one round trip and writes nothing; a settle counts money and tokens on the four counters", async () => {
    const prefix = uniquePrefix("budget");
    const meter = new BudgetMeter(counted, prefix, undefined);
    const stats = commandCounter(redis);
    const sent = countRoundTrips(counted);
    await stats.start();

    const reservation = await meter.reserve(accounts, estimate);
    expect(sent.sent.map((entry) => entry.name)).toEqual(["evalsha"]);
    expect(await stats.delta()).toEqual({ evalsha: 1, hmget: 2 });
    await meter.settle(reservation, actual);
    expect(sent.sent.map((entry) => entry.name)).toEqual(["evalsha", "evalsha"]);
    // New counters: each gets its lifetime once.
    expect(await stats.delta()).toEqual({ evalsha: 1, hincrby: 8, pexpire: 4 });
    sent.reset();
    const second = await meter.reserve(accounts, estimate);
    expect(sent.sent.map((entry) => entry.name)).toEqual(["evalsha"]);
    expect(await stats.delta()).toEqual({ evalsha: 1, hmget: 2 });
    sent.reset();
    await meter.settle(second, actual);
    expect(sent.sent.map((entry) => entry.name)).toEqual(["evalsha"]);
    expect(await stats.delta()).toEqual({ evalsha: 1, hincrby: 8 });

    // A failed call (settled at zero) with nothing reserved writes nothing.
    await meter.settle(await meter.reserve(accounts, estimate), { usd: 0, tokens: 0 });
    expect(await stats.delta()).toEqual({ evalsha: 2, hmget: 2 });

    // Every key either script was given shares the `{budget}` hash slot (Redis Cluster runs a
    // script only over keys of one slot): the four counters and both accounts' limits.
    const keys = new Set(sent.sent.flatMap((entry) => entry.args.slice(2, 2 + Number(entry.args[1]))).map(String));
    const day = new Date().toISOString().slice(0, 10);
    expect([...keys].sort()).toEqual([
      `chat:tg:-100123:d:${day}`, `chat:tg:-100123:m:${day.slice(0, 7)}`, "limits:chat:tg:-100123", "limits:user:tg:42",
      `user:tg:42:d:${day}`, `user:tg:42:m:${day.slice(0, 7)}`,
    ].map((rest) => `${prefix}:{budget}:${rest}`));
    for (const key of keys) expect(/\{([^}]*)\}/.exec(key)?.[1], key).toBe("budget");
  });

  it("with limits: a reserve reads and reserves only the limited counters, a settle releases exactly those", async () => {
    const prefix = uniquePrefix("budget");
    const meter = new BudgetMeter(counted, prefix, {
      chat: { daily: { usd: 100, tokens: 1_000_000 } }, user: { monthly: { usd: 100 } }, chats: {}, users: {},
    });
    const stats = commandCounter(redis);
    await meter.settle(await meter.reserve(accounts, estimate), actual);
    await stats.start();
    const sent = countRoundTrips(counted);

    const reservation = await meter.reserve(accounts, estimate);
    expect(sent.roundTrips()).toBe(1);
    // Limits of both accounts, the two limited counters (chat daily, user monthly) and their
    // reservation records (any left behind is released), then money and tokens reserved on the
    // chat's day, money on the user's month, and the call's record in each.
    expect(await stats.delta()).toEqual({ evalsha: 1, hmget: 4, hgetall: 2, hincrby: 3, hset: 2 });
    sent.reset();
    await meter.settle(reservation, actual);
    expect(sent.roundTrips()).toBe(1);
    // The call's records read, money and tokens used on four counters, three reservations released, the records dropped.
    expect(await stats.delta()).toEqual({ evalsha: 1, hget: 2, hincrby: 11, hdel: 2 });

    const status = await meter.status(accounts);
    expect(status.map((slot) => slot.reserved)).toEqual(status.map(() => ({ usd: 0, tokens: 0 })));
    expect(status.map((slot) => slot.used)).toEqual(status.map(() => ({ usd: 0.002, tokens: 3_000 })));
  });

  it("an admin's limit applies to the very next reserve; off lifts the config's, default restores it", async () => {
    const prefix = uniquePrefix("budget");
    const meter = new BudgetMeter(counted, prefix, { chat: { daily: { tokens: 10_000 } }, chats: {}, users: {} });
    const call = async (tokens: number) => meter.settle(await meter.reserve(accounts, { usd: 0, tokens }), { usd: 0, tokens });
    await call(4_000);
    await meter.setLimit("chat", accounts.chat, "daily", "tokens", 5_000);
    await expect(meter.reserve(accounts, { usd: 0, tokens: 2_000 })).rejects.toThrow(BudgetExhaustedError);
    await meter.setLimit("chat", accounts.chat, "daily", "tokens", "off");
    await call(20_000);
    await meter.setLimit("chat", accounts.chat, "daily", "tokens", "default");
    await expect(meter.reserve(accounts, { usd: 0, tokens: 1 })).rejects.toThrow("Today's budget for this chat is used up");
    // A money limit set for the user's month: in dollars, as /budget writes it.
    await meter.setLimit("chat", accounts.chat, "daily", "tokens", "off");
    await meter.setLimit("user", accounts.user, "monthly", "usd", 0.5);
    await meter.settle(await meter.reserve(accounts, { usd: 0.3, tokens: 1 }), { usd: 0.3, tokens: 1 });
    await expect(meter.reserve(accounts, { usd: 0.25, tokens: 1 })).rejects.toThrow("This month's budget for you is used up");
    await meter.settle(await meter.reserve(accounts, { usd: 0.2, tokens: 1 }), { usd: 0.2, tokens: 1 });
    await expect(meter.reserve(accounts, { usd: 0, tokens: 1 })).rejects.toThrow("This month's budget for you is used up");
  });

  it("a limit set or lifted between a reserve and its settle leaves nothing reserved", async () => {
    const prefix = uniquePrefix("budget");
    const meter = new BudgetMeter(counted, prefix, undefined);
    const unlimited = await meter.reserve(accounts, estimate);
    await meter.setLimit("chat", accounts.chat, "daily", "usd", 10);
    const limited = await meter.reserve(accounts, estimate);
    await meter.setLimit("chat", accounts.chat, "daily", "usd", "off");
    await meter.settle(unlimited, actual);
    await meter.settle(limited, actual);
    await meter.setLimit("chat", accounts.chat, "daily", "usd", "default");
    const raw = await redis.hgetall((await scanKeys(redis, `${prefix}:{budget}:chat:*:d:*`))[0]!);
    expect(Number(raw.rc ?? 0)).toBe(0);
    expect(Number(raw.uc)).toBe(2_000_000);
  });

  it("every counter written has a lifetime: the day's about three days, the month's about 63", async () => {
    const prefix = uniquePrefix("budget");
    const meter = new BudgetMeter(counted, prefix, { chat: { daily: { usd: 1 } }, chats: {}, users: {} });
    // A failed call (reserved, settled at zero), a call of no money, a paid one, a refused one.
    await meter.settle(await meter.reserve(accounts, { usd: 0.5, tokens: 10 }), { usd: 0, tokens: 0 });
    await meter.settle(await meter.reserve({ chat: "tg:7", user: "tg:8" }, { usd: 0, tokens: 10 }), { usd: 0, tokens: 10 });
    await meter.settle(await meter.reserve(accounts, { usd: 0.5, tokens: 10 }), { usd: 0.9, tokens: 10 });
    await expect(meter.reserve(accounts, { usd: 0.5, tokens: 10 })).rejects.toThrow(BudgetExhaustedError);
    const keys = await scanKeys(redis, `${prefix}:*`);
    expect(keys).toHaveLength(8);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      const days = ttl / 86_400_000;
      if (/:d:\d{4}-\d{2}-\d{2}$/.test(key)) expect(days, key).toBeGreaterThan(2.99);
      else expect(days, key).toBeGreaterThan(62.99);
      expect(days, key).toBeLessThanOrEqual(63);
    }
  });
});

async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1_000);
    keys.push(...found);
    cursor = next;
  } while (cursor !== "0");
  return keys.sort();
}
