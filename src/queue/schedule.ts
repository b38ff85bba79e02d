/**
 * The alarms of scheduled items: one BullMQ delayed job per item's next run. Durable (Redis),
 * shared by every worker (one of them takes each job), and idempotent by job id, which names the
 * item and the occurrence: arming twice leaves one job.
 */
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type { FiringAlarms } from "../schedule/index.js";
import { PAYLOAD_VERSION } from "./jobs.js";
import { queuePrefixOf } from "./redis.js";

export const SCHEDULE_QUEUE = "schedule";

export interface FiringJobData {
  v: typeof PAYLOAD_VERSION;
  itemId: string;
  /** UTC ms of the occurrence this alarm is for. */
  scheduledFor: number;
}

/** `fire-r12-1774767600000`: BullMQ ids may not contain ":" nor be all digits. */
export const firingJobId = (itemId: string, at: number) => `fire-${itemId}-${at}`;

export interface FiringQueue extends FiringAlarms {
  readonly queue: Queue<FiringJobData>;
  close(): Promise<void>;
}

export function createFiringQueue(connection: Redis, prefix: string): FiringQueue {
  const queue = new Queue<FiringJobData>(SCHEDULE_QUEUE, { connection, prefix: queuePrefixOf(connection, prefix, SCHEDULE_QUEUE) });
  // Errors surface on the add() promise; the listener only keeps them from being unhandled.
  queue.on("error", () => undefined);
  return {
    queue,
    async arm(itemId, at) {
      const jobId = firingJobId(itemId, at);
      // A finished job keeps its id (retention) and would swallow the add: an alarm that went
      // off while the item was paused must be able to ring again once it is resumed.
      const state = await queue.getJobState(jobId);
      if (state === "completed" || state === "failed") await queue.remove(jobId).catch(() => undefined);
      await queue.add(
        "fire",
        { v: PAYLOAD_VERSION, itemId, scheduledFor: at },
        {
          jobId,
          delay: Math.max(0, at - Date.now()),
          // A firing is a few Redis calls; it fails only while Redis does.
          attempts: 10,
          backoff: { type: "exponential", delay: 1_000 },
          removeOnComplete: { age: 24 * 3_600, count: 10_000 },
          removeOnFail: { age: 7 * 24 * 3_600, count: 10_000 },
        },
      );
    },
    async disarm(itemId, at) {
      // A running (locked) job cannot be removed; it will find the item changed.
      await queue.remove(firingJobId(itemId, at)).catch(() => undefined);
    },
    close: () => queue.close(),
  };
}
