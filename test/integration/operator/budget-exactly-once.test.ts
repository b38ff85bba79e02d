/**
 * Budgets that cannot double or leak (issue 28 item 6): a RESERVE or SETTLE that runs twice
 * (ioredis re-sends an unanswered command after a reconnect: `autoResendUnfulfilledCommands`)
 * takes or counts nothing twice, and the reservation of a call whose worker was killed is
 * released once it is past its time, instead of refusing later calls for the counter's life.
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BudgetMeter } from "../../../src/budget/index.js";
import { BudgetExhaustedError } from "../../../src/errors.js";
import { createRedis } from "../../../src/queue/index.js";
import { uniquePrefix } from "../../helpers/config.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { countRoundTrips } from "../../helpers/round-trips.js";

describe("budgets exactly once", () => {
  let server: RedisServerHandle;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = createRedis(server.url);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.dispose();
  });

  const accounts = { chat: "tg:-100123", user: "tg:42" };
  const limited = { chat: { daily: { usd: 1 } }, chats: {}, users: {} };

  it("a reserve and a settle sent twice (re-sent after a reconnect) reserve and count once", async () => {
    const meter = new BudgetMeter(redis, uniquePrefix("twice"), limited);
    // Both scripts loaded first, so each call below is one EVALSHA.
    await meter.settle(await meter.reserve({ chat: "tg:1" }, { usd: 0.1, tokens: 1 }), { usd: 0, tokens: 0 });
    const sent = countRoundTrips(redis);
    const reservation = await meter.reserve(accounts, { usd: 0.3, tokens: 10 });
    // The very command ioredis would write again on a new connection.
    const reserve = sent.sent.at(-1);
    expect(reserve?.name).toBe("evalsha");
    await redis.call(reserve!.name, ...(reserve!.args as Array<string | number>));
    let [day] = await meter.status(accounts);
    expect(day!.reserved.usd).toBeCloseTo(0.3, 9);
    sent.reset();
    await meter.settle(reservation, { usd: 0.2, tokens: 10 });
    const settle = sent.sent.at(-1);
    await redis.call(settle!.name, ...(settle!.args as Array<string | number>));
    [day] = await meter.status(accounts);
    expect(day!.reserved.usd).toBe(0);
    expect(day!.used.usd).toBeCloseTo(0.2, 9);
    // Room left is what one call used: 0.8 fits, 0.85 does not.
    await meter.settle(await meter.reserve(accounts, { usd: 0.8, tokens: 1 }), { usd: 0, tokens: 0 });
    await expect(meter.reserve(accounts, { usd: 0.85, tokens: 1 })).rejects.toThrow(BudgetExhaustedError);
  });

  it("the reservation of a call whose worker died is released once past its time", async () => {
    let now = Date.UTC(2026, 11, 6, 12);
    const prefix = uniquePrefix("leak");
    const meter = new BudgetMeter(redis, prefix, limited, () => now, { reservationMs: 60_000 });
    // Reserved, then the worker is killed: no settle ever comes.
    await meter.reserve(accounts, { usd: 0.9, tokens: 10 });
    await expect(meter.reserve(accounts, { usd: 0.2, tokens: 10 })).rejects.toThrow(BudgetExhaustedError);
    now += 61_000;
    // Past its time, the next reserve of that counter releases it: the day has its whole budget again.
    const next = await meter.reserve(accounts, { usd: 0.9, tokens: 10 });
    const [day] = await meter.status(accounts);
    expect(day!.reserved.usd).toBeCloseTo(0.9, 9);
    await meter.settle(next, { usd: 0.5, tokens: 10 });
    const [after] = await meter.status(accounts);
    expect(after!.reserved.usd).toBe(0);
    expect(after!.used.usd).toBeCloseTo(0.5, 9);
  });
});
