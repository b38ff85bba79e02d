/**
 * A turn whose claim no replica confirms comes back later (busy, 6ca2a8d) without having begun:
 * the message's queue wait (longhaul_queue_wait_seconds, /status) is observed once, by the turn
 * that begins, not once more for every unconfirmed attempt — each of those counted as a turn
 * beginning with the wait so far.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attemptToken } from "../../../src/session/lease.js";
import { silentLogger } from "../../../src/logger.js";
import { createMetrics } from "../../../src/metrics.js";
import { createProducers, createRedis, type Redis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { ToolCatalog } from "../../../src/tools/index.js";
import { processTurn, type TurnDeps } from "../../../workers/process-turn.js";
import { engineOver, scriptedLlm } from "../../helpers/agent-turns.js";
import { uniquePrefix } from "../../helpers/config.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";

const SESSION = "console:queue-wait";

describe("a claim no replica confirms, then one it does", () => {
  let server: RedisServerHandle;
  let redis: Redis;

  beforeAll(async () => {
    server = await startRedisServer();
    redis = createRedis(server.url);
  }, 60_000);

  afterAll(async () => {
    redis?.disconnect();
    await server?.dispose();
  });

  it("observes the message's queue wait once, when its turn begins", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    const producers = createProducers(redis, prefix);
    await store.appendInbox(inbound({ text: "hello", messageId: "m1", sessionKey: SESSION }), Date.now());
    const metrics = createMetrics();
    // Two attempts find no replica, the third one does.
    const confirmations = [false, false, true];
    const deps: TurnDeps = {
      store, producers, engine: engineOver(scriptedLlm([{ content: "Hi.", toolCalls: [] }]), new ToolCatalog({ builtins: [], logger: silentLogger })),
      busyMode: "collect", leaseMs: 10_000, publishActivity: async () => undefined, logger: silentLogger, metrics, now: () => Date.now(),
      confirmClaim: async () => async () => confirmations.shift() ?? true,
    };
    try {
      const outcomes: string[] = [];
      for (let round = 0; round < 5 && !outcomes.includes("answered"); round++) {
        outcomes.push((await processTurn(deps, SESSION, { token: attemptToken("turn"), finalAttempt: false, signal: new AbortController().signal })).status);
      }
      expect(outcomes).toEqual(["busy", "busy", "answered"]);
      const count = /^longhaul_queue_wait_seconds_count (\d+)$/m.exec(await metrics.registry.metrics())?.[1];
      expect(count).toBe("1");
    } finally {
      await producers.close();
    }
  }, 60_000);
});
