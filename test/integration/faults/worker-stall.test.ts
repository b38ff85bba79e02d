/**
 * A worker whose event loop blocks past the lock (a test hook stands in for a pathological
 * input freezing the tokenizer): its lease renewals stop, BullMQ re-runs its jobs on the other
 * worker, and when it wakes up it must write nothing of what it no longer owns.
 */
import { afterEach, describe, expect, it } from "vitest";
import { seededRandom } from "../../helpers/audit.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { sleep, slowModel, stallRun } from "../../helpers/stall-run.js";
import { startWorkerFleet, type WorkerFleet } from "../../helpers/worker-fleet.js";

const LOCK_MS = 1_000;
const SESSIONS = 3;
const ROUNDS = 8;
/**
 * Where the hooked worker blocks, and for how long: past the lock only (the lease holds, the
 * re-run waits), past the lease at the start of a turn (the other worker takes over) and past
 * the lease right before the commit (the model answered, the commit must be refused).
 */
const BLOCKS = [" [[block 1500 turn-begun]]", " [[block 3500 turn-begun]]", " [[block 3500 before-commit]]", ""];

describe("a worker's event loop blocked past the lock", () => {
  let redis: RedisServerHandle | undefined;
  let fleet: WorkerFleet | undefined;

  afterEach(async () => {
    await fleet?.close();
    await redis?.dispose();
    fleet = redis = undefined;
  });

  it("gateway + 2 workers: every message once in the transcript, answered once, no reply twice", async () => {
    redis = await startRedisServer();
    fleet = await startWorkerFleet({ REDIS_URL: redis.url, JOB_LOCK_MS: String(LOCK_MS), WORKER_CONCURRENCY: "4" });
    slowModel(fleet.llm, 5, { min: 200, max: 2_500 });
    const hooked = fleet.startWorker({ LONGHAUL_TEST_HOOKS: "1" });
    const plain = fleet.startWorker();
    await Promise.all([hooked, plain].map((worker) => worker.waitForStderr(/longhaul-ready/)));
    const random = seededRandom(17);
    const run = stallRun(fleet.adapter, "loop");
    for (let round = 0; round < ROUNDS; round++) {
      for (let session = 0; session < SESSIONS; session++) void run.send(session, BLOCKS[Math.floor(random() * BLOCKS.length)]);
      await sleep(300 + random() * 700);
      void run.send(Math.floor(random() * SESSIONS));
      await sleep(1_000 + random() * 2_000);
    }
    await run.drain(120_000);
    const result = await run.audit(redis.url, fleet.env.REDIS_PREFIX!);
    expect(run.submitted.length).toBe(ROUNDS * (SESSIONS + 1));
    expect(result).toEqual({ lost: [], doubled: [], unanswered: [], answeredTwice: [], duplicateReplies: [] });
    // The blocks happened, and cost the hooked worker sessions it then had to give up.
    expect(hooked.stderr()).toMatch(/turn-superseded/);
  }, 300_000);
});
