/**
 * The doctor's fast checks as main.ts runs them before anything starts: refuse what cannot
 * work (someone else's Redis, a rejected key or token, no Redis), mark the Redis that is ours,
 * and warn once for each way the Redis can lose acknowledged messages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT_CODES, StartupRefusedError } from "../../src/doctor/check.js";
import { checkBeforeStart } from "../../src/doctor/startup.js";
import type { ResolvedRedis } from "../../src/embedded-redis.js";
import { createLogger } from "../../src/logger.js";
import { createRedis } from "../../src/queue/index.js";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { TEST_TELEGRAM_TOKEN, testConfig, uniquePrefix } from "../helpers/config.js";
import { freePort, startRedisServer, type RedisServerHandle } from "../helpers/redis-server.js";

function target(url: string, explicit: boolean): ResolvedRedis & { stops: number } {
  const handle = { address: url, url, explicit, stops: 0, stop: async () => void handle.stops++ };
  return handle;
}

function capturedLogger() {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = createLogger({ level: "info", destination: { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) } });
  return { logger, warnings: () => lines.filter((line) => line.level === 40).map((line) => line.msg), lines };
}

async function refusal(run: Promise<void>): Promise<StartupRefusedError> {
  const error = await run.then(() => undefined, (thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(StartupRefusedError);
  return error as StartupRefusedError;
}

describe("start-up checks", () => {
  let durable: RedisServerHandle;
  let bare: RedisServerHandle;
  let llm: FakeLlm;

  beforeAll(async () => {
    [durable, bare, llm] = await Promise.all([startRedisServer({ appendOnly: true }), startRedisServer(), startFakeLlm()]);
  });
  afterAll(async () => {
    await Promise.all([durable.dispose(), bare.dispose(), llm.close()]);
  });

  it("refuses someone else's Redis found on the default port: exit 3, one line, nothing written, the private Redis stopped", async () => {
    const admin = createRedis(durable.url, { maxRetriesPerRequest: 1 });
    await admin.set("another-app:key", "1");
    const prefix = uniquePrefix();
    const redis = target(durable.url, false);
    const { logger } = capturedLogger();
    const refused = await refusal(checkBeforeStart({ config: testConfig({ REDIS_PREFIX: prefix, LLM_BASE_URL: llm.url }), redis, logger }));
    expect(refused.exitCode).toBe(EXIT_CODES.redis);
    expect(refused.lines).toEqual([expect.stringMatching(/^longhaul: FAIL {2}redis {5}Redis at 127\.0\.0\.1:\d+ holds \d+ keys and no longhaul marker .* → fix: to use it anyway set REDIS_URL=/)]);
    expect(await admin.exists(`${prefix}:longhaul`)).toBe(0);
    expect(redis.stops).toBe(1);
    admin.disconnect();
  });

  it("uses and marks a non-empty Redis that REDIS_URL names, and keeps the first marker on later starts", async () => {
    const prefix = uniquePrefix();
    const config = testConfig({ REDIS_URL: durable.url, REDIS_PREFIX: prefix, LLM_BASE_URL: llm.url });
    await checkBeforeStart({ config, redis: target(durable.url, true), logger: capturedLogger().logger });
    const admin = createRedis(durable.url, { maxRetriesPerRequest: 1 });
    const marker = JSON.parse((await admin.get(`${prefix}:longhaul`)) ?? "{}") as { app?: string; markedAt?: string };
    expect(marker.app).toBe("longhaul");
    // Now it is ours even for an implicit start (REDIS_URL unset), and the marker stays as it was.
    await checkBeforeStart({ config, redis: target(durable.url, false), logger: capturedLogger().logger });
    expect(JSON.parse((await admin.get(`${prefix}:longhaul`)) ?? "{}")).toEqual(marker);
    admin.disconnect();
  });

  it("warns once, with the fix, when the Redis keeps no AOF; says nothing for a durable one", async () => {
    const config = testConfig({ REDIS_URL: bare.url, LLM_BASE_URL: llm.url });
    const withoutAof = capturedLogger();
    await checkBeforeStart({ config, redis: target(bare.url, true), logger: withoutAof.logger });
    expect(withoutAof.warnings()).toEqual([expect.stringMatching(/^no AOF and no RDB snapshots: .* \(fix: run Redis with --appendonly yes/)]);

    const durableLog = capturedLogger();
    await checkBeforeStart({ config: testConfig({ REDIS_URL: durable.url, LLM_BASE_URL: llm.url }), redis: target(durable.url, true), logger: durableLog.logger });
    expect(durableLog.warnings()).toEqual([]);
  });

  it("refuses when Redis does not answer within the wait: exit 3", async () => {
    const url = `redis://127.0.0.1:${await freePort()}`;
    const refused = await refusal(checkBeforeStart({ config: testConfig({ REDIS_URL: url, LLM_BASE_URL: llm.url }), redis: target(url, true), logger: capturedLogger().logger, redisWaitMs: 300 }));
    expect(refused.exitCode).toBe(EXIT_CODES.redis);
    expect(refused.lines).toEqual([expect.stringMatching(/is unreachable \(connection refused\) → fix: start Redis there/)]);
  });

  it("refuses a key the model server rejects (exit 4), but only warns when the server does not answer", async () => {
    const guarded = await startFakeLlm({ apiKey: "sk-another-key-000000" });
    try {
      const refused = await refusal(checkBeforeStart({ config: testConfig({ REDIS_URL: durable.url, LLM_BASE_URL: guarded.url }), redis: target(durable.url, true), logger: capturedLogger().logger }));
      expect(refused.exitCode).toBe(EXIT_CODES.llm);
      expect(refused.lines).toEqual([expect.stringMatching(/^longhaul: FAIL {2}llm {7}main model: .* rejected the key \(401.*→ fix: set LLM_API_KEY/)]);
    } finally {
      await guarded.close();
    }
    const down = `http://127.0.0.1:${await freePort()}/v1`;
    const log = capturedLogger();
    await checkBeforeStart({ config: testConfig({ REDIS_URL: durable.url, LLM_BASE_URL: down }), redis: target(durable.url, true), logger: log.logger });
    expect(log.warnings()).toEqual([expect.stringMatching(/^main model: cannot reach 127\.0\.0\.1:\d+ \(connection refused\)/)]);
  });

  it("refuses a Telegram token the Bot API rejects (exit 5); a gateway alone needs no model", async () => {
    const telegram = await FakeTelegram.start();
    try {
      const config = testConfig({ REDIS_URL: durable.url, LONGHAUL_ROLE: "gateway", LLM_API_KEY: undefined, TELEGRAM_BOT_TOKEN: TEST_TELEGRAM_TOKEN, TELEGRAM_API_ROOT: telegram.apiRoot });
      const refused = await refusal(checkBeforeStart({ config, redis: target(durable.url, true), logger: capturedLogger().logger }));
      expect(refused.exitCode).toBe(EXIT_CODES.platform);
      expect(refused.lines).toEqual(["longhaul: FAIL  platform  telegram: the Bot API rejected TELEGRAM_BOT_TOKEN (401 Unauthorized) → fix: copy the token again from @BotFather (/mybots → API Token) into TELEGRAM_BOT_TOKEN"]);
      expect(telegram.callsOf("getUpdates")).toHaveLength(0);
    } finally {
      await telegram.close();
    }
  });
});
