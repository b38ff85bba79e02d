import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { Platform } from "../core/channel.js";
import {
  PAYLOAD_VERSION, PLATFORMS, TURN_QUEUE, approvalTimeoutJobId, deliveryDedupId, deliveryQueueName, turnDedupId,
  type DeliveryJobData, type TurnJobData,
} from "./jobs.js";
import { queuePrefixOf } from "./redis.js";

/**
 * What is kept of a finished turn or delivery job (docs/decisions.md, "Job retention"). A
 * completed job is removed at once: it holds only a session key, the turn's own record is its
 * `turn-committed` log line and the metrics, and keeping an hour of them cost every job five
 * more commands in BullMQ's finishing script (a sorted-set add, the result, and trimming by age
 * and count, each trim also removing an older job) and Redis memory for thousands of records. A
 * failed job (attempts used up, or refused for good) is what an operator looks into: it stays
 * a week with its reason and stack (`getFailed`, Bull Board, `redis-cli ZRANGE <prefix>:turns:failed`).
 */
export const RETENTION = {
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3_600, count: 5_000 },
} as const;

/**
 * An approval's timeout job keeps its id an hour after it ran: the id is what makes a retried
 * hand-over schedule it once, and it is rare (one per approval asked).
 */
const APPROVAL_RETENTION = {
  removeOnComplete: { age: 3_600, count: 5_000 },
  removeOnFail: RETENTION.removeOnFail,
};

/**
 * BullMQ's events stream per queue (`<prefix>:<queue>:events`): every job adds five entries
 * (added, waiting, active, completed, drained) whatever the length. Nothing of ours reads it (no
 * QueueEvents); it is kept for an operator's tools that do. 1,000 entries (the last ~200 jobs)
 * take about 64 KB of Redis per queue, against 610 KB at BullMQ's default of 10,000.
 */
export const EVENTS_MAX_LEN = 1_000;

export interface Producers {
  enqueueTurn(sessionKey: string): Promise<void>;
  /** Delivery goes to the queue of the platform the replies are for. */
  enqueueDelivery(sessionKey: string, platform: Platform): Promise<void>;
  /** A turn after `delayMs` that denies the approval if it is still pending (APPROVAL_TIMEOUT_S). */
  enqueueApprovalTimeout(sessionKey: string, approvalId: string, delayMs: number): Promise<void>;
  readonly turnQueue: Queue<TurnJobData>;
  readonly deliveryQueues: ReadonlyMap<Platform, Queue<DeliveryJobData>>;
  /** The connection the jobs are added on (the queues share it). */
  readonly connection: Redis;
  close(): Promise<void>;
}

export function createProducers(connection: Redis, prefix: string, turnAttempts = 4): Producers {
  const options = (queue: string) => ({ connection, prefix: queuePrefixOf(connection, prefix, queue), streams: { events: { maxLen: EVENTS_MAX_LEN } } });
  const turnQueue = new Queue<TurnJobData>(TURN_QUEUE, options(TURN_QUEUE));
  const deliveryQueues = new Map(PLATFORMS.map((platform) => [platform, new Queue<DeliveryJobData>(deliveryQueueName(platform), options(deliveryQueueName(platform)))]));
  // Errors surface on the add() promise; the listener only keeps them from being unhandled.
  for (const queue of [turnQueue, ...deliveryQueues.values()]) queue.on("error", () => undefined);

  return {
    turnQueue,
    deliveryQueues,
    connection,
    async enqueueTurn(sessionKey) {
      await turnQueue.add(
        "turn",
        { v: PAYLOAD_VERSION, sessionKey },
        {
          deduplication: { id: turnDedupId(sessionKey), keepLastIfActive: true },
          attempts: turnAttempts,
          backoff: { type: "exponential", delay: 2_000 },
          ...RETENTION,
        },
      );
    },
    async enqueueApprovalTimeout(sessionKey, approvalId, delayMs) {
      await turnQueue.add(
        "approval-timeout",
        { v: PAYLOAD_VERSION, sessionKey, approvalId },
        {
          jobId: approvalTimeoutJobId(approvalId),
          delay: delayMs,
          attempts: turnAttempts,
          backoff: { type: "exponential", delay: 2_000 },
          ...APPROVAL_RETENTION,
        },
      );
    },
    async enqueueDelivery(sessionKey, platform) {
      const queue = deliveryQueues.get(platform);
      if (!queue) throw new Error(`no delivery queue for platform ${platform}`);
      await queue.add(
        "deliver",
        { v: PAYLOAD_VERSION, sessionKey },
        {
          deduplication: { id: deliveryDedupId(sessionKey), keepLastIfActive: true },
          // A platform outage can last a while; the reply waits in the outbox meanwhile.
          attempts: 12,
          backoff: { type: "exponential", delay: 1_000 },
          ...RETENTION,
        },
      );
    },
    async close() {
      await Promise.all([turnQueue, ...deliveryQueues.values()].map((queue) => queue.close()));
    },
  };
}
