/**
 * Redis frozen (SIGSTOP) for longer than the BullMQ job lock while turns run and messages keep
 * arriving: BullMQ declares the running jobs stalled and runs them again, possibly in the same
 * worker. Freezes shorter than the session lease must not hand a session over; longer ones
 * may, and then the stalled attempt must write nothing. Either way: every message in its
 * transcript exactly once, each answered once, no reply delivered twice.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { seededRandom } from "../../helpers/audit.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { RecordingAdapter } from "../../helpers/recording-adapter.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { sleep, slowModel, stallRun, type StallRun } from "../../helpers/stall-run.js";
import { startWorkerFleet, type WorkerFleet } from "../../helpers/worker-fleet.js";

const LOCK_MS = 1_000;
const SESSIONS = 4;
const ROUNDS = 8;

/**
 * Rounds of: a message to each session, more arriving mid-turn, then a freeze — alternately
 * past the lock only (1.6 × lock) and past the lease too (2.8 × lock) — with messages sent
 * during it.
 */
async function freezeRounds(redis: RedisServerHandle, run: StallRun, seed: number): Promise<void> {
  const random = seededRandom(seed);
  for (let round = 0; round < ROUNDS; round++) {
    for (let session = 0; session < SESSIONS; session++) void run.send(session);
    await sleep(200 + random() * 600);
    void run.send(Math.floor(random() * SESSIONS));
    const frozen = redis.freeze(round % 2 === 0 ? 1.6 * LOCK_MS : 2.8 * LOCK_MS);
    await sleep(300);
    void run.send(Math.floor(random() * SESSIONS));
    await frozen;
    await run.settled();
    await sleep(random() * 1_500);
  }
}

describe("Redis frozen past the lock during turns", () => {
  let redis: RedisServerHandle | undefined;
  let llm: FakeLlm | undefined;
  let pipeline: Pipeline | undefined;
  let fleet: WorkerFleet | undefined;

  afterEach(async () => {
    redis?.resume();
    await pipeline?.close();
    await fleet?.close();
    await llm?.close();
    await redis?.dispose();
    pipeline = fleet = llm = redis = undefined;
  });

  it("single process: every message once in the transcript, answered once, no reply twice", async () => {
    redis = await startRedisServer();
    llm = await startFakeLlm();
    slowModel(llm, 11, { min: 1_000, max: 5_000 });
    const adapter = new RecordingAdapter("console");
    const config = testConfig({ REDIS_URL: redis.url, LLM_BASE_URL: llm.url, JOB_LOCK_MS: String(LOCK_MS) });
    pipeline = await startPipeline(config, [adapter]);
    const run = stallRun(adapter, "one");
    await freezeRounds(redis, run, 7);
    await run.drain(90_000);
    const result = await run.audit(redis.url, config.REDIS_PREFIX);
    expect(run.submitted.length).toBe(ROUNDS * (SESSIONS + 2));
    expect(result).toEqual({ lost: [], doubled: [], unanswered: [], answeredTwice: [], duplicateReplies: [] });
    expect(pipeline.logs.lines.join("")).toMatch(/turn-job-stalled/);
  }, 240_000);

  it("gateway + 2 worker processes: the same", async () => {
    redis = await startRedisServer();
    fleet = await startWorkerFleet({ REDIS_URL: redis.url, JOB_LOCK_MS: String(LOCK_MS), WORKER_CONCURRENCY: "4" });
    slowModel(fleet.llm, 23, { min: 1_000, max: 5_000 });
    const workers = [fleet.startWorker(), fleet.startWorker()];
    await Promise.all(workers.map((worker) => worker.waitForStderr(/longhaul-ready/)));
    const run = stallRun(fleet.adapter, "two");
    await freezeRounds(redis, run, 13);
    await run.drain(90_000);
    const result = await run.audit(redis.url, fleet.env.REDIS_PREFIX!);
    expect(run.submitted.length).toBe(ROUNDS * (SESSIONS + 2));
    expect(result).toEqual({ lost: [], doubled: [], unanswered: [], answeredTwice: [], duplicateReplies: [] });
    // The freezes did make BullMQ re-run jobs: the fence, not luck, kept the sessions whole.
    expect(workers.map((worker) => worker.stderr()).join("")).toMatch(/turn-job-stalled|turn-superseded/);
  }, 240_000);
});
