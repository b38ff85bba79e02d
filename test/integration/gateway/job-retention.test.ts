/**
 * What is kept of finished queue jobs (docs/decisions.md, "Job retention"): a completed turn or
 * delivery job leaves no record (its turn is in the log and the metrics), a failed one stays
 * with its reason and stack for an operator to inspect, and what operators use (/status, the
 * admin CLI) does not depend on finished jobs.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { Config } from "../../../config/index.js";
import { runAdmin, type AdminContext } from "../../../src/cli/admin-commands.js";
import { createProducers, createRedis, type Producers, type Redis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

describe("job retention", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let config: Config;
  let redis: Redis;
  let producers: Producers;
  const adapter = new RecordingAdapter("console");
  let count = 0;
  const say = async (text: string, sessionKey = "console:chat-1") => {
    const expected = adapter.sent.length + 1;
    await adapter.submit(inbound({ text, sessionKey, messageId: `r${++count}` }));
    await adapter.waitFor((sent) => sent.length >= expected);
    return adapter.sent[adapter.sent.length - 1]!.reply.text;
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    config = testConfig({ LLM_BASE_URL: llm.url });
    pipeline = await startPipeline(config, [adapter]);
    redis = createRedis(config.REDIS_URL!);
    // One attempt: a job that throws fails for good at once (the app's turns get four).
    producers = createProducers(redis, config.REDIS_PREFIX, 1);
  });
  afterAll(async () => {
    await pipeline.close();
    await producers.close();
    redis.disconnect();
    await llm.close();
  });

  it("keeps no record of a completed turn or delivery job", async () => {
    await say("hello");
    await say("and again");
    const deliveries = producers.deliveryQueues.get("console")!;
    // The delivery job completes right after the reply went out.
    await vi.waitFor(async () => expect(await deliveries.getJobCountByTypes("active", "waiting")).toBe(0));
    expect(await producers.turnQueue.getJobCountByTypes("completed", "failed")).toBe(0);
    expect(await deliveries.getJobCountByTypes("completed", "failed")).toBe(0);
    // Nor the job hashes themselves (BullMQ numbers a queue's jobs from 1).
    expect(await producers.turnQueue.getJob("1")).toBeUndefined();
    expect(await deliveries.getJob("1")).toBeUndefined();
  });

  it("keeps a failed turn job with its session, reason and stack, for the operator to inspect", async () => {
    const sessionKey = "console:broken";
    const store = new SessionStore(redis, config.REDIS_PREFIX);
    // A message waits, and the session's stored state cannot be read: the turn throws.
    await store.appendInbox(inbound({ text: "anyone there?", sessionKey, chatId: "broken", messageId: "b1" }), Date.now());
    await redis.set(store.keys(sessionKey).state, "{not json");
    await producers.enqueueTurn(sessionKey);

    await vi.waitFor(async () => expect(await producers.turnQueue.getJobCountByTypes("failed")).toBeGreaterThan(0), { timeout: 15_000 });
    const [failed] = await producers.turnQueue.getFailed();
    expect(failed!.data).toEqual({ v: 1, sessionKey });
    expect(failed!.failedReason).toMatch(/JSON/);
    expect((failed!.stacktrace ?? []).join("\n")).toMatch(/beginTurn/);

    // Later turns finishing (the trigger of BullMQ's trimming) leave it where it is.
    await say("still fine here");
    expect((await producers.turnQueue.getFailed()).map((job) => job.id)).toContain(failed!.id);
  });

  it("answers /status and the admin CLI without finished jobs", async () => {
    const status = await say("/status");
    // Three answered turns before it.
    expect(status).toMatch(/^Messages: \d+ in context, 6 in the full transcript$/m);
    let output = "";
    const context: AdminContext = { redis, config, now: Date.now(), write: (text) => { output += text; } };
    // (`sessions` would trip over the unreadable session of the test above.)
    expect(await runAdmin(context, ["show", "console:chat-1"])).toBe(0);
    expect(output).toMatch(/^Session console:chat-1 \(conversation [0-9a-f-]{36}, version \d+\)$/m);
  });
});
