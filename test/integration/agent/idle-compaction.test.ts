/**
 * Idle-time compaction (issue #16 item 5) through the real pipeline: gateway, worker, BullMQ
 * delayed jobs on a private Redis, the fake LLM over HTTP. A short CACHE_TTL_S stands in for the
 * provider's five minutes.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Job, Queue } from "bullmq";
import { startFakeLlm, textOf, withoutStamp, type FakeLlm, type RecordedRequest } from "../../fakes/fake-llm.js";
import { isFlushRequest, isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { RecordingAdapter } from "../../helpers/recording-adapter.js";
import { idleChat, idleJobOf, idleModel, LONG_TEXT, privateChat, summarizerCalls, summarizerGate, waitUntil, type SummarizerGate } from "../../helpers/idle-compaction.js";
import { IDLE_QUEUE, createIdleQueue, createRedis, type IdleQueue, type Redis } from "../../../src/queue/index.js";
import { IDLE_SCHEDULE_MARGIN_MS } from "../../../src/queue/idle.js";
import { countRoundTrips } from "../../helpers/round-trips.js";
import { testConfig, uniquePrefix } from "../../helpers/config.js";
import { SessionStore } from "../../../src/session/store.js";
import { BudgetMeter } from "../../../src/budget/index.js";
import type { Config } from "../../../config/index.js";
import { readTurnHistory } from "../../../src/session/turn-history.js";

interface Harness {
  llm: FakeLlm;
  pipeline: Pipeline;
  adapter: RecordingAdapter;
  redis: Redis;
  store: SessionStore;
  idle: IdleQueue;
  gate: SummarizerGate;
  config: Config;
  close(): Promise<void>;
}

async function startHarness(overrides: Record<string, string>): Promise<Harness> {
  const llm = await startFakeLlm();
  const gate = summarizerGate();
  idleModel(llm, gate);
  // max_tokens 1,024: the window then holds the in-loop threshold below the hard limit (prompt + max_tokens must fit).
  const config = testConfig({ LLM_BASE_URL: llm.url, LLM_CONTEXT_WINDOW: "8000", LLM_MAX_OUTPUT_TOKENS: "1024", ...overrides });
  const adapter = new RecordingAdapter("console");
  const pipeline = await startPipeline(config, [adapter]);
  const redis = createRedis(config.REDIS_URL!);
  const store = new SessionStore(redis, config.REDIS_PREFIX);
  const idle = createIdleQueue(redis, config.REDIS_PREFIX);
  return {
    llm, pipeline, adapter, redis, store, idle, gate, config,
    async close() {
      gate.open();
      await pipeline.close();
      await idle.close();
      redis.disconnect();
      await llm.close();
    },
  };
}

const mainRequests = (llm: FakeLlm) => llm.requests.filter((request) => !isSummarizerRequest(request) && !isFlushRequest(request));
const chat = (harness: Harness, where: ReturnType<typeof privateChat>) => idleChat(harness.adapter, harness.idle, where);
const dm = privateChat;
const LONG = LONG_TEXT;

describe("idle-time compaction (CACHE_TTL_S=1)", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ CACHE_TTL_S: "1" });
  });
  afterAll(async () => {
    await harness.close();
  });

  it("runs after the TTL in the background: flush then summary, no notice, and the next turn is already compacted", async () => {
    const where = dm("ada");
    const { say, talkPastMark } = chat(harness, where);
    await say("hello");
    const turns = await talkPastMark();
    // Past the mark but under the in-loop threshold: no turn compacted.
    expect(summarizerCalls(harness.llm)).toBe(0);
    const job = (await idleJobOf(harness.idle, where.sessionKey))!;
    const before = await harness.store.load(where.sessionKey);
    expect(job.data.version).toBe(before.version);
    expect(job.opts.delay).toBe(1_000);

    await waitUntil(async () => (await harness.store.load(where.sessionKey)).version === before.version + 1, 30_000, "the idle compaction's commit");
    expect(summarizerCalls(harness.llm)).toBe(1);
    // The memory flush ran before the fold, as in any compaction (a DM has a memory owner).
    const flushAt = harness.llm.requests.findIndex(isFlushRequest);
    const summaryAt = harness.llm.requests.findIndex(isSummarizerRequest);
    expect(flushAt).toBeGreaterThanOrEqual(0);
    expect(flushAt).toBeLessThan(summaryAt);
    const after = await harness.store.load(where.sessionKey);
    expect(after.stats.compactions).toBe(1);
    expect(after.live.some((message) => message.kind === "summary")).toBe(true);
    expect(after.live.length).toBeLessThan(before.live.length);
    // Nothing was said to the user, and the idle time of the session did not change.
    expect(harness.adapter.sent).toHaveLength(turns + 1);
    expect(after.updatedAt).toBe(before.updatedAt);

    const mainBefore = mainRequests(harness.llm).length;
    const reply = await say("and now?");
    // No compaction notice for an idle compaction, and no summarizer call for this turn.
    expect(reply).toBe("ok");
    expect(summarizerCalls(harness.llm)).toBe(1);
    const next: RecordedRequest = mainRequests(harness.llm).at(-1)!;
    expect(mainRequests(harness.llm)).toHaveLength(mainBefore + 1);
    const sent = next.body.messages.map((message) => textOf(message.content)).join("\n");
    expect(sent).toContain("A long talk about the gym (idle summary).");
    expect(sent).not.toContain("topic 1:");
    // Every message is in the transcript once: the summary joined it, nothing was lost.
    const transcript = await harness.store.readTranscript(where.sessionKey);
    const ids = transcript.map((message) => message.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (let turn = 1; turn <= turns; turn++) expect(transcript.filter((message) => message.role === "user" && withoutStamp(textOf(message.content)).startsWith(`topic ${turn}:`))).toHaveLength(1);
  }, 120_000);

  it("talkPastMark (the fault tests' helper) stops at the turn whose commit scheduled the job, even when the worker schedules it after the reply went out", async () => {
    const early = dm("early-schedule");
    const plain = await chat(harness, early).talkPastMark();
    // The worker's idle job is added a while after its commit (as on a loaded machine, where the
    // reply reaches the adapter first): talking on past the mark would take the session into the
    // in-loop compaction, whose summarizer call a closed gate holds, so that turn is never answered.
    const late = dm("late-schedule");
    const add = Queue.prototype.add;
    const slowAdd = vi.spyOn(Queue.prototype, "add").mockImplementation(async function (this: Queue, ...args: Parameters<Queue["add"]>) {
      if (this.name === IDLE_QUEUE) await new Promise((resolve) => setTimeout(resolve, 300));
      return add.apply(this, args);
    });
    try {
      const turns = await chat(harness, late).talkPastMark();
      expect(slowAdd.mock.contexts.some((queue) => (queue as Queue).name === IDLE_QUEUE)).toBe(true);
      expect(turns).toBe(plain);
    } finally {
      slowAdd.mockRestore();
    }
    // Both compact in the background (the tests after this one hold the summarizer and share the idle worker).
    for (const { sessionKey } of [early, late]) {
      await waitUntil(async () => (await harness.store.load(sessionKey)).stats.compactions === 1, 30_000, `the idle compaction of ${sessionKey}`);
    }
  }, 120_000);

  it("does not run under the mark: no job is scheduled, and a job run anyway skips it", async () => {
    const where = dm("bo");
    const { say } = chat(harness, where);
    await say("hello");
    await say("short talk");
    expect(await idleJobOf(harness.idle, where.sessionKey)).toBeUndefined();
    const state = await harness.store.load(where.sessionKey);
    // A job added by hand (as if scheduled): the worker finds the session under the mark.
    const calls = summarizerCalls(harness.llm);
    const jobId = await harness.idle.schedule(where.sessionKey, state.version, 0);
    await waitUntil(async () => (await Job.fromId(harness.idle.queue, jobId!))?.finishedOn !== undefined, 30_000, "the job to finish");
    const done = await Job.fromId(harness.idle.queue, jobId!);
    expect(done!.returnvalue).toEqual({ status: "skipped", why: "under-mark" });
    expect(summarizerCalls(harness.llm)).toBe(calls);
    expect((await harness.store.load(where.sessionKey)).version).toBe(state.version);
  }, 60_000);

  it("a message arriving during the idle compaction wins: answered once, the compaction dropped, nothing lost", async () => {
    const where = dm("cy");
    const { say, talkPastMark } = chat(harness, where);
    await say("hello");
    const turns = await talkPastMark();
    const state = await harness.store.load(where.sessionKey);
    const calls = summarizerCalls(harness.llm);
    harness.gate.close();
    // The idle job is in the summarizer (held) and holds the session's lease.
    await waitUntil(() => summarizerCalls(harness.llm) > calls, 30_000, "the idle summarizer request");
    const sentBefore = harness.adapter.sent.length;
    const reply = await say("I'm back");
    // Answered while the summarizer is still held: the message did not wait for it.
    expect(reply).toBe("ok");
    const answered = await harness.store.load(where.sessionKey);
    expect(answered.version).toBe(state.version + 1);
    expect(answered.stats.compactions).toBe(0);
    expect(answered.live.some((message) => message.kind === "summary")).toBe(false);
    harness.gate.open();

    // That turn's commit scheduled a new idle job; it compacts once the TTL has passed again.
    await waitUntil(async () => (await harness.store.load(where.sessionKey)).stats.compactions === 1, 30_000, "the next idle compaction");
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const final = await harness.store.load(where.sessionKey);
    expect(final.stats.compactions).toBe(1);
    expect(final.version).toBe(state.version + 2);
    // Answered exactly once; every message once in the transcript, one summary.
    expect(harness.adapter.sent.slice(sentBefore)).toHaveLength(1);
    expect(harness.adapter.sent.filter((sent) => sent.reply.inReplyTo.includes(`${where.chatId}-${turns + 2}`))).toHaveLength(1);
    const transcript = await harness.store.readTranscript(where.sessionKey);
    const userTexts = transcript.filter((message) => message.role === "user" && message.kind !== "summary").map((message) => withoutStamp(textOf(message.content)));
    expect(userTexts.filter((text) => text === "I'm back")).toHaveLength(1);
    expect(userTexts).toHaveLength(turns + 2);
    expect(transcript.filter((message) => message.kind === "summary")).toHaveLength(1);
    expect(final.live.filter((message) => message.role === "user").map((message) => withoutStamp(textOf(message.content)))).toContain("I'm back");
  }, 120_000);
});

describe("idle-time compaction waits for the TTL (CACHE_TTL_S=600)", () => {
  let harness: Harness;
  beforeAll(async () => {
    harness = await startHarness({ CACHE_TTL_S: "600" });
  });
  afterAll(async () => {
    await harness.close();
  });

  it("the job is delayed by the TTL; later commits leave it alone, and when it runs it follows the newest version", async () => {
    const where = dm("di");
    const { say, talkPastMark } = chat(harness, where);
    await say("hello");
    await talkPastMark();
    const job = (await idleJobOf(harness.idle, where.sessionKey))!;
    expect(job.opts.delay).toBe(600_000);
    expect(await job.getState()).toBe("delayed");
    const scheduledFor = job.data.version;
    // A commit within the TTL adds nothing (the worker's job is not due yet): the same job, still
    // naming the version that scheduled it.
    await say(`more: ${LONG}`);
    const jobs = (await harness.idle.queue.getJobs(["delayed", "wait"])).filter((candidate) => candidate.data.sessionKey === where.sessionKey);
    expect(jobs.map((candidate) => [candidate.id, candidate.data.version])).toEqual([[job.id, scheduledFor]]);
    const state = await harness.store.load(where.sessionKey);
    expect(state.version).toBe(scheduledFor + 1);
    const summaries = summarizerCalls(harness.llm);

    // Run early (as if due): a turn committed since, less than the TTL ago, so the job moves
    // itself to that turn + the TTL and follows its version; it does not compact, nor end.
    await jobs[0]!.promote();
    await waitUntil(async () => (await Job.fromId(harness.idle.queue, job.id!))?.data.version === state.version, 30_000, "the job to follow the newest version");
    const followed = (await Job.fromId(harness.idle.queue, job.id!))!;
    expect(await followed.getState()).toBe("delayed");
    expect(followed.data.updatedAt).toBe(state.updatedAt);
    expect(followed.finishedOn).toBeUndefined();
    expect(summarizerCalls(harness.llm)).toBe(summaries);
    expect((await harness.store.load(where.sessionKey)).version).toBe(state.version);

    // Once the session has been idle for the TTL (its last turn 601 s ago, as far as it knows),
    // the same job compacts the newest version.
    const stateKey = harness.store.keys(where.sessionKey).state;
    const stored = JSON.parse((await harness.redis.get(stateKey))!) as { updatedAt: number };
    await harness.redis.set(stateKey, JSON.stringify({ ...stored, updatedAt: stored.updatedAt - 601_000 }));
    await followed.promote();
    await waitUntil(async () => (await Job.fromId(harness.idle.queue, job.id!))?.finishedOn !== undefined, 30_000, "the job to finish");
    expect((await Job.fromId(harness.idle.queue, job.id!))!.returnvalue).toMatchObject({ status: "compacted", version: state.version + 1 });
    expect(summarizerCalls(harness.llm)).toBe(summaries + 1);
    // The console's timeline marks it as an idle compaction.
    const last = (await readTurnHistory(harness.redis, harness.config.REDIS_PREFIX, where.sessionKey)).at(-1);
    expect(last).toMatchObject({ kind: "idle", version: state.version + 1, prompt: 0, compactions: [expect.objectContaining({ reason: "idle", status: "compacted" })] });
  }, 120_000);

  it("budgets apply: with the chat's budget used up the idle summarizer is never called and nothing changes; with room, it compacts", async () => {
    const where = dm("eve");
    const { say, talkPastMark } = chat(harness, where);
    await say("hello");
    await talkPastMark();
    // Idle for longer than the TTL, as far as the session knows (its last turn 601 s ago).
    const stateKey = harness.store.keys(where.sessionKey).state;
    const stored = JSON.parse((await harness.redis.get(stateKey))!) as { updatedAt: number };
    await harness.redis.set(stateKey, JSON.stringify({ ...stored, updatedAt: stored.updatedAt - 601_000 }));
    const state = await harness.store.load(where.sessionKey);
    const meter = new BudgetMeter(harness.redis, harness.config.REDIS_PREFIX, undefined);
    await meter.setLimit("chat", where.sessionKey, "daily", "tokens", 1);
    const requests = harness.llm.requests.length;
    // The fake LLM is shared by this describe's tests: count from here.
    const summariesBefore = summarizerCalls(harness.llm);

    const refused = await harness.idle.schedule(where.sessionKey, state.version, 0);
    await waitUntil(async () => (await Job.fromId(harness.idle.queue, refused!))?.finishedOn !== undefined, 30_000, "the job to finish");
    expect((await Job.fromId(harness.idle.queue, refused!))!.returnvalue).toEqual({ status: "skipped", why: "not-compacted" });
    // Neither the flush nor the summarizer reached the model, and the session is as it was.
    expect(harness.llm.requests).toHaveLength(requests);
    expect((await harness.store.load(where.sessionKey)).version).toBe(state.version);

    await meter.setLimit("chat", where.sessionKey, "daily", "tokens", "default");
    const allowed = await harness.idle.schedule(where.sessionKey, state.version, 0);
    await waitUntil(async () => (await Job.fromId(harness.idle.queue, allowed!))?.finishedOn !== undefined, 30_000, "the second job to finish");
    expect((await Job.fromId(harness.idle.queue, allowed!))!.returnvalue).toMatchObject({ status: "compacted", version: state.version + 1 });
    expect(summarizerCalls(harness.llm)).toBe(summariesBefore + 1);
  }, 120_000);
});

describe("idle-compaction scheduling costs a commit nothing while its job is not due", () => {
  it("adds the job once, then nothing until the job this process added is nearly due; another session is its own", async () => {
    const redis = createRedis(testConfig().REDIS_URL!);
    let clock = 1_000_000;
    const idle = createIdleQueue(redis, uniquePrefix(), { now: () => clock });
    try {
      // The first add of a queue reads its settings once: warm it up on another session.
      await idle.keepScheduled("console:warm", 1, clock, 600_000);
      const trips = countRoundTrips(redis);
      expect(await idle.keepScheduled("console:a", 7, clock, 600_000)).toBe(true);
      expect(trips.sent).toHaveLength(1);
      trips.reset();
      // Commits within the TTL (the job follows the session by itself): no command at all.
      for (const [version, at] of [[8, 1_000], [9, 300_000], [10, 600_000 - IDLE_SCHEDULE_MARGIN_MS - 1]] as const) {
        clock = 1_000_000 + at;
        expect(await idle.keepScheduled("console:a", version, clock, 600_000)).toBe(false);
      }
      expect(trips.sent).toHaveLength(0);
      expect(await idle.keepScheduled("console:b", 3, clock, 600_000)).toBe(true);
      // Nearly due (within the margin for clocks a little apart): the next commit adds again.
      clock = 1_000_000 + 600_000 - IDLE_SCHEDULE_MARGIN_MS;
      expect(await idle.keepScheduled("console:a", 11, clock, 600_000)).toBe(true);
      expect(trips.sent.map((entry) => entry.name)).toEqual(["evalsha", "evalsha"]);
      trips.restore();
      const jobs = (await idle.queue.getJobs(["delayed"])).map((job) => [job.data.sessionKey, job.data.version, job.data.updatedAt]);
      expect(jobs).toEqual(expect.arrayContaining([["console:a", 11, clock], ["console:b", 3, 1_000_000 + 600_000 - IDLE_SCHEDULE_MARGIN_MS - 1]]));
      expect(jobs.filter(([sessionKey]) => sessionKey === "console:a")).toHaveLength(1);
    } finally {
      await idle.close();
      redis.disconnect();
    }
  });
});
