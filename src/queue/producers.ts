import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { Platform } from "../core/channel.js";
import {
  PAYLOAD_VERSION, PLATFORMS, TURN_QUEUE, approvalTimeoutJobId, deliveryDedupId, deliveryQueueName, turnDedupId,
  type DeliveryJobData, type TurnJobData,
} from "./jobs.js";

/** Finished jobs are kept a while for inspection, then trimmed (removal is lazy in BullMQ). */
const RETENTION = {
  removeOnComplete: { age: 3_600, count: 5_000 },
  removeOnFail: { age: 7 * 24 * 3_600, count: 5_000 },
};

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
  const turnQueue = new Queue<TurnJobData>(TURN_QUEUE, { connection, prefix });
  const deliveryQueues = new Map(PLATFORMS.map((platform) => [platform, new Queue<DeliveryJobData>(deliveryQueueName(platform), { connection, prefix })]));
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
          ...RETENTION,
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
