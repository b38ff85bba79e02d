/**
 * Idle-time compaction across worker processes: two workers never compact a session twice, and
 * a worker frozen (SIGSTOP) past its lock or killed in the middle of the summarizer call loses
 * nothing — the other worker takes the job over and commits once; the frozen one, thawed,
 * writes nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { textOf, withoutStamp } from "../../fakes/fake-llm.js";
import { idleChat, idleModel, privateChat, summarizerCalls, summarizerGate, waitUntil } from "../../helpers/idle-compaction.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { startWorkerFleet, type WorkerFleet } from "../../helpers/worker-fleet.js";
import type { AppProcess } from "../../helpers/app-process.js";
import { createIdleQueue, createRedis, PAYLOAD_VERSION, type IdleQueue, type Redis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";

const LOCK_MS = 1_000;

describe("idle-time compaction with several worker processes", () => {
  let redisServer: RedisServerHandle | undefined;
  let fleet: WorkerFleet | undefined;
  let redis: Redis | undefined;
  let idle: IdleQueue | undefined;

  afterEach(async () => {
    await idle?.close();
    redis?.disconnect();
    await fleet?.close();
    await redisServer?.dispose();
    fleet = redisServer = redis = idle = undefined;
  });

  it("runs once with two workers; a worker frozen or killed during the summarizer call loses nothing and writes nothing twice", async () => {
    redisServer = await startRedisServer();
    fleet = await startWorkerFleet({ REDIS_URL: redisServer.url, JOB_LOCK_MS: String(LOCK_MS), CACHE_TTL_S: "1", LLM_CONTEXT_WINDOW: "8000", LLM_MAX_OUTPUT_TOKENS: "1024",
      // A held summarizer request must not time out meanwhile (a loaded machine is slow to freeze a worker).
      LLM_TIMEOUT_MS: "60000",
    });
    const gate = summarizerGate();
    idleModel(fleet.llm, gate);
    const workers: AppProcess[] = [fleet.startWorker(), fleet.startWorker()];
    await Promise.all(workers.map((worker) => worker.waitForStderr(/longhaul-ready/, 90_000)));
    redis = createRedis(redisServer.url);
    const prefix = fleet.env.REDIS_PREFIX!;
    const store = new SessionStore(redis, prefix);
    idle = createIdleQueue(redis, prefix);
    const llm = fleet.llm;
    const adapter = fleet.adapter;

    /** The checks after every scenario: one compaction, one summary, every message once, the next answered once. */
    const consistent = async (where: ReturnType<typeof privateChat>, chat: ReturnType<typeof idleChat>, turns: number) => {
      const state = await store.load(where.sessionKey);
      expect(state.stats.compactions).toBe(1);
      expect(state.live.filter((message) => message.kind === "summary")).toHaveLength(1);
      const sentBefore = adapter.sent.length;
      expect(await chat.say("still there?", 60_000)).toBe("ok");
      const transcript = await store.readTranscript(where.sessionKey);
      expect(transcript.filter((message) => message.kind === "summary")).toHaveLength(1);
      const ids = transcript.map((message) => message.id);
      expect(new Set(ids).size).toBe(ids.length);
      const userTexts = transcript.filter((message) => message.role === "user" && message.kind !== "summary").map((message) => withoutStamp(textOf(message.content)));
      expect(userTexts).toHaveLength(turns + 2);
      for (let turn = 1; turn <= turns; turn++) expect(userTexts.filter((text) => text.startsWith(`topic ${turn}:`))).toHaveLength(1);
      expect(adapter.sent.slice(sentBefore)).toHaveLength(1);
    };

    /** The process whose idle job holds the session's lease (the token names its pid). */
    const holder = async (sessionKey: string) => {
      let found: AppProcess | undefined;
      await waitUntil(async () => {
        const token = await redis!.get(store.keys(sessionKey).lease);
        const pid = Number(/^idle:(\d+):/.exec(token ?? "")?.[1]);
        found = workers.find((worker) => worker.child.pid === pid);
        return found !== undefined;
      }, 30_000, "an idle job holding the session's lease");
      return found;
    };

    /**
     * A chat talked past the mark whose idle compaction is under way with the summarizer held:
     * → the chat, its turns, the summarizer calls before it, and the worker running it.
     */
    const compactionUnderWay = async (name: string) => {
      const where = privateChat(name);
      const chat = idleChat(adapter, idle!, where);
      await chat.say("hello", 60_000);
      gate.close();
      const calls = summarizerCalls(llm);
      const turns = await chat.talkPastMark();
      await waitUntil(() => summarizerCalls(llm) > calls, 60_000, "the idle summarizer request");
      const running = (await holder(where.sessionKey))!;
      expect(running).toBeDefined();
      return { where, chat, turns, calls, running };
    };

    // 1. Two workers, and the job twice in the queue (as if a deduplication had failed): one compaction.
    {
      const where = privateChat("one");
      const chat = idleChat(adapter, idle, where);
      await chat.say("hello", 60_000);
      const turns = await chat.talkPastMark();
      const { version, updatedAt } = await store.load(where.sessionKey);
      const calls = summarizerCalls(llm);
      // Copies as added by hand (no time: a moved version is stale) and as a worker adds them
      // (following the session: the compaction moved the version, not a turn, so stale too).
      for (const copy of ["a", "b"]) await idle.queue.add("idle-compaction", { v: PAYLOAD_VERSION, sessionKey: where.sessionKey, version }, { jobId: `dup-${copy}`, delay: 1_000 });
      for (const copy of ["c", "d"]) await idle.queue.add("idle-compaction", { v: PAYLOAD_VERSION, sessionKey: where.sessionKey, version, updatedAt }, { jobId: `dup-${copy}`, delay: 1_000 });
      await waitUntil(async () => (await store.load(where.sessionKey)).stats.compactions === 1, 60_000, "the compaction");
      // Every copy of the job finished (the scheduled one and the duplicates)...
      await waitUntil(async () => (await idle!.queue.getJobs(["delayed", "wait", "active"])).length === 0, 60_000, "every job to finish");
      // ...and only one of them asked the summarizer.
      expect(summarizerCalls(llm)).toBe(calls + 1);
      await consistent(where, chat, turns);
    }

    // 2. The worker running the compaction is frozen past its lock and lease; the other takes over.
    {
      const { where, chat, turns, calls, running: frozen } = await compactionUnderWay("two");
      frozen.signal("SIGSTOP");
      // The other worker re-runs the stalled job once the lease expired: its own summarizer call.
      await waitUntil(() => summarizerCalls(llm) > calls + 1, 60_000, "the other worker's summarizer request");
      gate.open();
      await waitUntil(async () => (await store.load(where.sessionKey)).stats.compactions === 1, 60_000, "the other worker's commit");
      const committed = await store.load(where.sessionKey);
      frozen.signal("SIGCONT");
      // The thawed worker gets its (late) summary and must write nothing: its attempt ends dropped.
      await frozen.waitForStderr(/"outcome":\{"status":"dropped"[^\n]*idle-compaction-job-done/, 60_000);
      const after = await store.load(where.sessionKey);
      expect(after.version).toBe(committed.version);
      await consistent(where, chat, turns);
    }

    // 3. The worker running the compaction is killed; the other re-runs the job.
    {
      const { where, chat, turns, calls, running: victim } = await compactionUnderWay("three");
      await victim.kill("SIGKILL");
      workers.splice(workers.indexOf(victim), 1);
      await waitUntil(() => summarizerCalls(llm) > calls + 1, 60_000, "the other worker's summarizer request");
      gate.open();
      await waitUntil(async () => (await store.load(where.sessionKey)).stats.compactions === 1, 60_000, "the other worker's commit");
      await consistent(where, chat, turns);
    }
  }, 300_000);
});
