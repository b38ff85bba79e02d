/**
 * Redis frozen (SIGSTOP) in the middle of a multi-part delivery, with two gateways consuming
 * deliveries: BullMQ declares the delivery job stalled and runs it again. Each part must reach
 * the platform once (at most once more for the part in flight when the freeze hit), and the
 * next reply must arrive whole — a stale progress record may not skip any of its parts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { lastUserText, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { PartsPlatform } from "../../helpers/parts-platform.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { sleep } from "../../helpers/stall-run.js";

const LOCK_MS = 1_000;
const PARTS = 8;

describe("Redis frozen during a multi-part delivery", () => {
  let redis: RedisServerHandle | undefined;
  let llm: FakeLlm | undefined;
  const pipelines: Pipeline[] = [];

  afterEach(async () => {
    redis?.resume();
    for (const pipeline of pipelines.splice(0)) await pipeline.close();
    await llm?.close();
    await redis?.dispose();
    llm = redis = undefined;
  });

  for (const freezeMs of [1.6 * LOCK_MS, 2.8 * LOCK_MS]) {
    it(`sends each part once (in-flight part at most twice) and the next reply whole (frozen ${freezeMs} ms)`, async () => {
      redis = await startRedisServer();
      llm = await startFakeLlm();
      llm.setHandler((request) => {
        const ask = lastUserText(request);
        const parts = ask === "long" ? PARTS : 1;
        return { text: Array.from({ length: parts }, (_, index) => `${ask}:part${index}`).join("\n\n") };
      });
      const config = testConfig({ REDIS_URL: redis.url, LLM_BASE_URL: llm.url, JOB_LOCK_MS: String(LOCK_MS) });
      const accepted: string[] = [];
      // A platform that takes 250 ms per message.
      const slow = { beforePart: () => sleep(250) };
      const first = new PartsPlatform(accepted, slow);
      const second = new PartsPlatform(accepted, slow);
      pipelines.push(await startPipeline(config, [first]));
      pipelines.push(await startPipeline(config, [second], { worker: false }));

      await first.submit("long", "d1");
      const deadline = Date.now() + 30_000;
      while (accepted.length < 2 && Date.now() < deadline) await sleep(20);
      await redis.freeze(freezeMs);
      while (accepted.filter((part) => part.startsWith("long:")).length < PARTS && Date.now() < deadline + 30_000) await sleep(50);
      await first.submit("short", "d2");
      while (!accepted.includes("short:part0") && Date.now() < deadline + 60_000) await sleep(50);
      await sleep(3_000);

      const counts = new Map<string, number>();
      for (const part of accepted) counts.set(part, (counts.get(part) ?? 0) + 1);
      for (let index = 0; index < PARTS; index++) expect(counts.get(`long:part${index}`), `long:part${index}`).toBeGreaterThanOrEqual(1);
      const repeated = [...counts].filter(([, count]) => count > 1);
      expect(repeated.length, JSON.stringify(accepted)).toBeLessThanOrEqual(1);
      expect(repeated.every(([, count]) => count === 2), JSON.stringify(accepted)).toBe(true);
      expect(counts.get("short:part0")).toBe(1);
      // In order: no part of the long reply after the short one.
      expect(accepted.indexOf("short:part0")).toBe(accepted.length - 1);
    }, 120_000);
  }
});
