/**
 * Takes idle-compaction jobs (src/queue/idle.ts) and runs them (src/agent/idle-compaction.ts).
 * Any number of worker processes run one; BullMQ hands each job to one of them, and the session
 * lease fences a job BullMQ re-ran after a stall against the run it thought dead.
 */
import { randomUUID } from "node:crypto";
import { DelayedError, UnrecoverableError, Worker, type Job } from "bullmq";
import { runIdleCompaction, type IdleCompactionDeps, type IdleCompactionOutcome } from "../src/agent/idle-compaction.js";
import type { Logger } from "../src/logger.js";
import { IDLE_QUEUE, PAYLOAD_VERSION, createRedis, logWorkerError, queuePrefixOf, type IdleJobData, type RedisAddress } from "../src/queue/index.js";
import { attemptToken } from "../src/session/lease.js";

export interface IdleWorkerOptions {
  redisAddress: RedisAddress;
  prefix: string;
  lockMs: number;
  deps: IdleCompactionDeps;
  logger: Logger;
}

export function startIdleWorker(options: IdleWorkerOptions): { close(): Promise<void> } {
  const workerId = randomUUID().slice(0, 8);
  const connection = createRedis(options.redisAddress);
  const log = options.logger.child({ role: "worker", component: "idle-compaction", workerId });
  const deps: IdleCompactionDeps = { ...options.deps, logger: log };
  const worker = new Worker<IdleJobData, IdleCompactionOutcome>(
    IDLE_QUEUE,
    async (job: Job<IdleJobData, IdleCompactionOutcome>, token?: string, signal?: AbortSignal) => {
      if (job.data.v !== PAYLOAD_VERSION) throw new UnrecoverableError(`unknown idle-compaction payload version ${String(job.data.v)}`);
      const outcome = await runIdleCompaction(deps, {
        sessionKey: job.data.sessionKey,
        version: job.data.version,
        ...(job.data.updatedAt === undefined ? {} : { updatedAt: job.data.updatedAt }),
        // The process id lets a person (and the fault tests) tell which process holds the session.
        token: attemptToken(`idle:${process.pid}:${workerId}:${job.id}:${job.attemptsMade}`),
        ...(signal ? { signal } : {}),
      });
      if (outcome.status === "busy") {
        // A turn (or a stalled run of this job) holds the session: come back when its lease may
        // be free. A turn that commits meanwhile makes this job stale.
        await job.moveToDelayed(Date.now() + Math.min(2_000, Math.max(250, outcome.retryInMs)), token);
        throw new DelayedError();
      }
      if (outcome.status === "later") {
        // A turn committed since the job was scheduled (and did not reschedule it): the same job
        // now follows the newest version, due the TTL after that turn.
        await job.updateData({ ...job.data, version: outcome.version, updatedAt: outcome.updatedAt });
        await job.moveToDelayed(outcome.at, token);
        log.debug({ jobId: job.id, sessionKey: job.data.sessionKey, version: outcome.version, at: outcome.at }, "idle-compaction-job-later");
        throw new DelayedError();
      }
      // One line per job (each session has at most one per CACHE_TTL_S): what it did and why not.
      log.info({ jobId: job.id, sessionKey: job.data.sessionKey, outcome }, "idle-compaction-job-done");
      return outcome;
    },
    {
      connection,
      prefix: queuePrefixOf(connection, options.prefix, IDLE_QUEUE),
      // A compaction is one summarizer call at a time per worker: it never crowds out turns.
      concurrency: 1,
      lockDuration: options.lockMs,
      stalledInterval: options.lockMs,
      maxStalledCount: 3,
    },
  );
  worker.on("error", (error) => logWorkerError(log, "idle-worker-error", error));
  worker.on("failed", (job, error) => log.warn({ jobId: job?.id, err: error }, "idle-compaction-job-failed"));
  worker.on("stalled", (jobId) => log.warn({ jobId }, "idle-compaction-job-stalled"));

  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        // Nobody waits for an idle compaction: a running one is dropped (nothing written) at once.
        worker.cancelAllJobs("shutdown");
        await worker.close();
        connection.disconnect();
      })();
      return closing;
    },
  };
}
