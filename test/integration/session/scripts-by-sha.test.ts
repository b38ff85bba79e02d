/**
 * Lua on the hot paths runs by SHA (session/run-script.ts): once a connection has run a script,
 * later calls send EVALSHA and a few arguments, never the script text again. Checked with
 * Redis's own command counters on a private server (no other test's scripts in them).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Redis } from "ioredis";
import { BudgetMeter } from "../../../src/budget/index.js";
import { MemoryStore } from "../../../src/memory/store.js";
import { createRedis } from "../../../src/queue/index.js";
import { PreviewRecords } from "../../../src/session/previews.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";

describe("Lua scripts run by SHA", () => {
  let server: RedisServerHandle;
  let redis: Redis;

  beforeAll(async () => {
    server = await startRedisServer();
    redis = createRedis(server.url);
  }, 30_000);
  afterAll(async () => {
    redis.disconnect();
    await server.dispose();
  });

  /** Calls of EVAL (script text sent) and EVALSHA so far. */
  const counts = async () => {
    const stats = await redis.info("commandstats");
    const calls = (name: string) => Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, "m").exec(stats)?.[1] ?? 0);
    return { eval: calls("eval"), evalsha: calls("evalsha") };
  };

  it("preview records, memory writes and budget reserve/settle send each script's text at most once", async () => {
    const previews = new PreviewRecords(redis, "sha");
    const memory = new MemoryStore(redis, "sha");
    const budget = new BudgetMeter(redis, "sha", { chat: { daily: { tokens: 1_000_000 } }, users: {}, chats: {} });
    const round = async (index: number) => {
      await previews.claim("tg:1", `r${index}`, "gateway-1", 1_000);
      await previews.opened("tg:1", `r${index}`, "gateway-1", String(index));
      await previews.release("tg:1", `r${index}`, "gateway-1");
      await previews.take("tg:1", `r${index}`);
      await memory.update({ scope: "chat", sessionKey: "tg:1" }, (doc) => ({ ok: true, doc: { ...doc, facts: [{ id: `c${doc.nextId}`, text: `fact ${index}`, at: index }], nextId: doc.nextId + 1 } }));
      await budget.settle(await budget.reserve({ chat: "tg:1", user: "tg:42" }, { usd: 0, tokens: 10 }), { usd: 0, tokens: 5 });
    };
    await round(0);
    const warm = await counts();
    for (let index = 1; index <= 10; index++) await round(index);
    const after = await counts();
    expect(after.eval).toBe(warm.eval);
    // claim, opened, release, take, compare-and-set, reserve, settle: seven scripts a round.
    expect(after.evalsha - warm.evalsha).toBe(70);
  });
});
