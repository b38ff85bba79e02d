/**
 * Takes the alarms of scheduled items (BullMQ delayed jobs) and fires them. Any number of
 * worker processes run one; BullMQ hands each alarm to one of them, a stalled one to another,
 * and the firing itself is idempotent (src/schedule/fire.ts), so each occurrence reaches the
 * chat once. Also re-arms every item's alarm at start and now and then (see `rearmAll`).
 */
import { randomUUID } from "node:crypto";
import { UnrecoverableError, Worker, type Job } from "bullmq";
import { RetryableError } from "../src/errors.js";
import type { Logger } from "../src/logger.js";
import { PAYLOAD_VERSION, SCHEDULE_QUEUE, createRedis, logWorkerError, queuePrefixOf, replicaCounter, type FiringJobData, type RedisAddress } from "../src/queue/index.js";
import { fireOccurrence, type FiringDeps, type FiringOutcome, type ScheduleService } from "../src/schedule/index.js";
import { globalKeys } from "../src/session/keys.js";
import type { SessionStore } from "../src/session/store.js";

export interface ScheduleWorkerOptions {
  redisAddress: RedisAddress;
  prefix: string;
  lockMs: number;
  deps: FiringDeps;
  service: ScheduleService;
  logger: Logger;
  /** How often every active item's alarm is re-armed (idempotent); the first run is at start. */
  rearmIntervalMs?: number;
}

export function startScheduleWorker(options: ScheduleWorkerOptions): { close(): Promise<void> } {
  const connection = createRedis(options.redisAddress);
  const log = options.logger.child({ role: "worker", component: "schedule", workerId: randomUUID().slice(0, 8) });
  const worker = new Worker<FiringJobData, FiringOutcome>(
    SCHEDULE_QUEUE,
    async (job: Job<FiringJobData, FiringOutcome>) => {
      if (job.data.v !== PAYLOAD_VERSION) throw new UnrecoverableError(`unknown firing payload version ${String(job.data.v)}`);
      log.debug({ jobId: job.id, itemId: job.data.itemId }, "schedule-firing");
      return fireOccurrence({ ...options.deps, logger: log.child({ jobId: job.id }) }, { itemId: job.data.itemId, scheduledFor: job.data.scheduledFor });
    },
    {
      connection,
      prefix: queuePrefixOf(connection, options.prefix, SCHEDULE_QUEUE),
      // Firings are a few Redis calls each; a handful at once is plenty.
      concurrency: 4,
      lockDuration: options.lockMs,
      stalledInterval: options.lockMs,
      maxStalledCount: 3,
    },
  );
  worker.on("error", (error) => logWorkerError(log, "schedule-worker-error", error));
  worker.on("failed", (job, error) => log.warn({ jobId: job?.id, attemptsMade: job?.attemptsMade, err: error }, "schedule-firing-failed"));
  worker.on("stalled", (jobId) => log.warn({ jobId }, "schedule-firing-stalled"));

  let rearming = false;
  const rearm = async () => {
    if (rearming) return;
    rearming = true;
    try {
      const armed = await options.service.rearmAll();
      log.debug({ armed }, "schedule-rearmed");
    } catch (error) {
      log.warn({ err: error }, "schedule-rearm-failed");
    } finally {
      rearming = false;
    }
  };
  void rearm();
  const timer = setInterval(() => void rearm(), options.rearmIntervalMs ?? 10 * 60_000);
  timer.unref();

  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= (async () => {
        clearInterval(timer);
        await worker.close();
        connection.disconnect();
      })();
      return closing;
    },
  };
}

/**
 * The session inbox a firing appends to, confirmed as the ingress confirms a chat's message
 * (REDIS_MIN_REPLICAS_ACK): the append and its work-set entry are acknowledged only once
 * `wanted` replicas hold them, on the connection they went out on; fewer, and the firing fails
 * before it consumes the occurrence (a one-off removed, a recurrence advanced), so its job runs
 * it again — the append is idempotent per occurrence. Unconfirmed, an append a master acknowledged
 * and then lost (frozen past its failover and woken, it answers from its stale copy for a
 * moment) left an occurrence consumed with no message: Cluster chaos seed 46 lost a reminder
 * and a task's post that way, each fired during a redis-pause failover.
 */
export function replicatedInbox(store: SessionStore, wanted: number, timeoutMs = 3_000): FiringDeps["inbox"] {
  const workSet = globalKeys(store.prefix).workSet;
  return {
    async appendInbox(message, receivedAt) {
      const replicas = await replicaCounter(store.redis, [store.keys(message.sessionKey).inbox, workSet]);
      const added = await store.appendInbox(message, receivedAt);
      // A duplicate waits too: its first copy may be the one no replica has seen yet.
      const acked = await replicas.count(wanted, timeoutMs);
      if (acked < wanted) throw new RetryableError(`${acked} of ${wanted} Redis replicas hold the firing's message for ${message.sessionKey}: the occurrence is kept, retry`);
      return added;
    },
  };
}
