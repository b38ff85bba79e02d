/**
 * The worker role: takes turn jobs from BullMQ and runs them. Any number of these processes
 * may share one Redis; per-session order comes from the queue's deduplication plus the
 * session lease, not from anything local to a process.
 */
import { randomUUID } from "node:crypto";
import { DelayedError, UnrecoverableError, Worker, type Job } from "bullmq";
import type { Logger } from "../src/logger.js";
import { PAYLOAD_VERSION, TURN_QUEUE, createRedis, logWorkerError, queuePrefixOf, type Producers, type TurnJobData, type RedisAddress } from "../src/queue/index.js";
import { attemptToken } from "../src/session/lease.js";
import { hasLegacyWork, migrateSession } from "../src/session/migrate.js";
import type { SessionStore } from "../src/session/store.js";
import { processTurn, type TurnDeps, type TurnOutcome } from "./process-turn.js";
import { markStage } from "../src/core/stages.js";

export interface TurnWorkerOptions {
  redisAddress: RedisAddress;
  prefix: string;
  concurrency: number;
  lockMs: number;
  deps: TurnDeps;
  logger: Logger;
  /** How often the sweeper looks for sessions with work but no job (after outages). */
  sweepIntervalMs?: number;
  /**
   * On close, running turns get this long to finish; then they are aborted and handed back
   * (their batch stays pending and another worker takes it). Keep it below the hard exit timer.
   */
  handBackAfterMs: number;
}

export interface TurnWorker {
  /** Stops taking jobs and waits for the running turns (BullMQ hands back what is killed). */
  close(): Promise<void>;
}

export function startTurnWorker(options: TurnWorkerOptions): TurnWorker {
  const workerId = randomUUID().slice(0, 8);
  const connection = createRedis(options.redisAddress);
  const log = options.logger.child({ role: "worker", workerId });
  const deps: TurnDeps = { ...options.deps, logger: log };

  const worker = new Worker<TurnJobData, TurnOutcome>(
    TURN_QUEUE,
    async (job: Job<TurnJobData, TurnOutcome>, token?: string, signal?: AbortSignal) => {
      markStage("picked", job.data.sessionKey);
      if (job.data.v !== PAYLOAD_VERSION) throw new UnrecoverableError(`unknown turn payload version ${String(job.data.v)}`);
      const attempts = job.opts.attempts ?? 1;
      const outcome = await processTurn(
        deps,
        job.data.sessionKey,
        {
          ...(job.id !== undefined ? { jobId: job.id } : {}),
          // Job id and attempt alone repeat when this worker picks its own stalled job back up.
          token: attemptToken(`${workerId}:${job.id}:${job.attemptsMade}`),
          finalAttempt: job.attemptsMade + 1 >= attempts,
          retried: job.attemptsMade > 0,
          signal: signal ?? new AbortController().signal,
          ...(job.data.approvalId ? { approvalTimeout: job.data.approvalId } : {}),
        },
      );
      if (outcome.status === "busy") {
        // An earlier run of this job (BullMQ re-ran it after a stall) still holds the session:
        // come back when its lease may be free, without spending an attempt.
        await job.moveToDelayed(Date.now() + Math.min(2_000, Math.max(250, outcome.retryInMs)), token);
        throw new DelayedError();
      }
      return outcome;
    },
    {
      connection,
      prefix: queuePrefixOf(connection, options.prefix, TURN_QUEUE),
      concurrency: options.concurrency,
      lockDuration: options.lockMs,
      stalledInterval: options.lockMs,
      maxStalledCount: 3,
    },
  );
  worker.on("error", (error) => logWorkerError(log, "worker-error", error));
  worker.on("failed", (job, error) => log.warn({ jobId: job?.id, attemptsMade: job?.attemptsMade, err: error }, "turn-job-failed"));
  worker.on("stalled", (jobId) => log.warn({ jobId }, "turn-job-stalled"));

  const sweeper = startSweeper(options.deps.store, options.deps.producers, log, options.sweepIntervalMs ?? 5_000);

  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        sweeper.stop();
        const handBack = setTimeout(() => {
          log.warn("handing-back-running-turns");
          worker.cancelAllJobs("shutdown");
        }, options.handBackAfterMs);
        await worker.close();
        clearTimeout(handBack);
        connection.disconnect();
      })();
      return closing;
    },
  };
}

/**
 * The safety net for the gap between "stored" and "enqueued": a message persisted while the
 * enqueue failed, a pending batch whose job failed for good, an outbox whose delivery job was
 * lost. Re-enqueueing is idempotent thanks to deduplication. A session whose lease is held is
 * left to its holder, which hands on what it leaves when it ends. A listed session with nothing
 * in the current layout may hold work an old-version process wrote during an upgrade: that is
 * migrated first.
 */
export function startSweeper(store: SessionStore, producers: Producers, log: Logger, intervalMs: number): { stop(): void } {
  let running = false;
  const sweepSession = async (sessionKey: string) => {
    let work = await store.sessionWork(sessionKey);
    if (work.inbox === 0 && work.pending === 0 && work.outbox === 0 && (await hasLegacyWork(store.redis, store.prefix, sessionKey))) {
      log.warn({ sessionKey }, "legacy-session-migrated");
      await migrateSession(store.redis, store.prefix, sessionKey);
      work = await store.sessionWork(sessionKey);
    }
    if ((work.inbox > 0 || work.pending > 0) && !work.turnRunning) await producers.enqueueTurn(sessionKey);
    if (work.outbox > 0 && work.outboxPlatform && !work.deliveryRunning) await producers.enqueueDelivery(sessionKey, work.outboxPlatform);
    if (work.inbox === 0 && work.pending === 0 && work.outbox === 0) await store.settle(sessionKey);
  };
  const sweep = async () => {
    if (running) return;
    running = true;
    try {
      for (const sessionKey of await store.sessionsWithWork()) {
        // One session that cannot be looked at (its node failing over, a refused command) is
        // left to the next sweep; the sessions after it are still looked at.
        try {
          await sweepSession(sessionKey);
        } catch (error) {
          log.warn({ sessionKey, err: error }, "sweep-session-failed");
        }
      }
      // An approval past its time whose timeout job was lost (a crash between the commit and the
      // add): added again, now (idempotent by job id; stale when answered meanwhile: a no-op turn).
      for (const { sessionKey, approvalId } of await store.dueApprovals(Date.now())) {
        await producers.enqueueApprovalTimeout(sessionKey, approvalId, 0);
        await store.forgetDueApproval(sessionKey, approvalId);
      }
    } catch (error) {
      log.warn({ err: error }, "sweep-failed");
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void sweep(), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
