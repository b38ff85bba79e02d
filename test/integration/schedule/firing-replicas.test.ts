/**
 * With REDIS_MIN_REPLICAS_ACK, a firing consumes its occurrence (a one-off removed, a recurrence
 * advanced) only once a replica holds the message it appended. This Redis has no replica, as a
 * master frozen past its failover and woken has none — what it acknowledges is dropped when it
 * turns replica — so the worker role's firing must keep the item and try again. Cluster chaos
 * seed 46 lost two occurrences that way (docs/benchmarks.md).
 */
import { describe, expect, it } from "vitest";
import { createFiringQueue, createRedis } from "../../../src/queue/index.js";
import { ScheduleService, ScheduleStore, type Requester } from "../../../src/schedule/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { startFakeLlm } from "../../fakes/fake-llm.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline } from "../../helpers/pipeline.js";
import { RecordingAdapter } from "../../helpers/recording-adapter.js";
import { DEFAULT_SETTINGS } from "../../helpers/schedule.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const ADA: Requester = { platform: "console", chatId: "ada", chatType: "private", sessionKey: "console:ada", userId: "ada", userName: "Ada", timeZone: "UTC" };

describe("a firing with replicas asked for", () => {
  it("keeps a reminder whose message no replica confirms, and tries again", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const config = testConfig({ LLM_BASE_URL: llm.url, REDIS_MIN_REPLICAS_ACK: "1", LOG_LEVEL: "warn" });
    const pipeline = closeAfterTest(await startPipeline(config, [new RecordingAdapter("console")]));
    const redis = createRedis(config.REDIS_URL!);
    const alarms = createFiringQueue(redis, config.REDIS_PREFIX);
    try {
      const schedule = new ScheduleStore(redis, config.REDIS_PREFIX);
      const service = new ScheduleService({ store: schedule, alarms, settings: DEFAULT_SETTINGS });
      const created = await service.create(ADA, { kind: "reminder", text: "call the bank", when: { in: "1s" } });
      if (!created.ok) throw new Error(created.text);
      // Due after 1 s; its firing is refused (0 of 1 replicas) and retried 1 s, 2 s later.
      await sleep(4_500);
      expect(await schedule.get(created.item.id)).toBeDefined();
      expect(pipeline.logs.lines.join("")).toContain("0 of 1 Redis replicas hold the firing's message for console:ada");
    } finally {
      await alarms.close();
      redis.disconnect();
    }
  }, 60_000);
});
