/**
 * The sweeper: the safety net for work stored without a job — a message whose enqueue never
 * happened, a message an old-version process wrote to the wave-1 keys during an upgrade — and
 * loud (warn) when it cannot run.
 */
import { Redis } from "ioredis";
import { describe, expect, it, vi } from "vitest";
import { startFakeLlm } from "../fakes/fake-llm.js";
import { createProducers, createRedis } from "../../src/queue/index.js";
import { SessionStore } from "../../src/session/store.js";
import { startSweeper } from "../../workers/turn-worker.js";
import { testConfig } from "../helpers/config.js";
import { captureLogs, startPipeline } from "../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../helpers/recording-adapter.js";
import { freePort } from "../helpers/redis-server.js";
import { sleep } from "../helpers/stall-run.js";
import { closeAfterTest } from "../helpers/close-after-test.js";

describe("the sweeper", () => {
  it("answers a stored message that has no job, and one a wave-1 process left in the old keys", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const adapter = new RecordingAdapter("console");
    const config = testConfig({ LLM_BASE_URL: llm.url });
    const pipeline = closeAfterTest(await startPipeline(config, [adapter]));
    const redis = createRedis(config.REDIS_URL!);
    // The sweeper itself, every 100 ms, beside the worker's own (every 5 s: that one finds a
    // lost approval timeout in faults/approval-timeout-lost.test.ts); waiting out 5 s proved nothing more.
    const sweeper = startSweeper(new SessionStore(redis, config.REDIS_PREFIX), createProducers(redis, config.REDIS_PREFIX), pipeline.logs.logger, 100);
    try {
      // Stored, never enqueued (the gateway died in between).
      await new SessionStore(redis, config.REDIS_PREFIX).appendInbox(inbound({ text: "stranded", messageId: "sw1" }), Date.now());
      // Written by a wave-1 gateway still running during the upgrade.
      const legacy = inbound({ chatId: "old", text: "from the old gateway", messageId: "sw2" });
      await redis.rpush(`${config.REDIS_PREFIX}:s:${legacy.sessionKey}:inbox`, JSON.stringify({ ...legacy, receivedAt: Date.now() }));
      await redis.sadd(`${config.REDIS_PREFIX}:work`, legacy.sessionKey);
      await adapter.waitFor(() => adapter.answeredIds().length === 2, 30_000);
      expect(adapter.sent.map((entry) => entry.reply.text).sort()).toEqual(["echo: from the old gateway", "echo: stranded"]);
      expect(pipeline.logs.lines.join("")).toContain("legacy-session-migrated");
    } finally {
      sweeper.stop();
      redis.disconnect();
    }
  });

  it("a session it cannot look at is skipped: the sessions listed after it are still swept", async () => {
    const config = testConfig({});
    const redis = createRedis(config.REDIS_URL!);
    // The first listed session fails every look (its Cluster node failing over, a refused command).
    class OneBroken extends SessionStore {
      override async sessionsWithWork(): Promise<string[]> {
        return ["console:broken", ...(await super.sessionsWithWork())];
      }
      override async sessionWork(sessionKey: string) {
        if (sessionKey === "console:broken") throw new Error("CLUSTERDOWN The cluster is down");
        return super.sessionWork(sessionKey);
      }
    }
    const logs = captureLogs("warn");
    // No worker: the turn job the sweeper adds stays in the queue to be seen.
    const producers = createProducers(redis, config.REDIS_PREFIX);
    const sweeper = startSweeper(new OneBroken(redis, config.REDIS_PREFIX), producers, logs.logger, 100);
    try {
      const message = inbound({ chatId: "behind", text: "behind a broken one", messageId: "sw3" });
      await new SessionStore(redis, config.REDIS_PREFIX).appendInbox(message, Date.now());
      await vi.waitFor(async () => expect((await producers.turnQueue.getWaiting()).map((job) => job.data.sessionKey)).toContain(message.sessionKey));
      const warned = logs.lines.map((raw) => JSON.parse(raw) as { msg: string; sessionKey?: string }).filter((entry) => entry.msg === "sweep-session-failed");
      expect(warned[0]?.sessionKey).toBe("console:broken");
    } finally {
      sweeper.stop();
      await producers.close();
      redis.disconnect();
    }
  });

  it("logs a failed sweep at warn", async () => {
    const logs = captureLogs("warn");
    // A connection that fails every command at once.
    const dead = new Redis(`redis://127.0.0.1:${await freePort()}`, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0 });
    const producers = createProducers(dead, "dead");
    const sweeper = startSweeper(new SessionStore(dead, "dead"), producers, logs.logger, 50);
    try {
      await sleep(300);
      const line = logs.lines.map((raw) => JSON.parse(raw) as { level: number; msg: string }).find((entry) => entry.msg === "sweep-failed");
      expect(line?.level).toBe(40);
    } finally {
      sweeper.stop();
      dead.disconnect();
    }
  });
});
