/**
 * Idle-time compaction jobs (src/agent/idle-compaction.ts): one BullMQ delayed job per session,
 * re-scheduled by every commit that leaves the session past the mark. Deduplication with
 * `replace` swaps a waiting job for the newer one (its delay counted from now), so only the
 * latest commit's job counts; a job that still runs when the next is added leaves it for later
 * (`keepLastIfActive`). The job names the version it was scheduled for: any later commit makes
 * it stale, so a job that slipped through does nothing.
 */
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { PAYLOAD_VERSION } from "./jobs.js";

export const IDLE_QUEUE = "idle-compactions";

export interface IdleJobData {
  v: typeof PAYLOAD_VERSION;
  sessionKey: string;
  /** The session's version after the commit that scheduled the job. */
  version: number;
}

export const idleDedupId = (sessionKey: string) => `idle/${sessionKey}`;

export interface IdleQueue {
  readonly queue: Queue<IdleJobData>;
  /** → the job's id (the waiting job's, when it was replaced or kept). */
  schedule(sessionKey: string, version: number, delayMs: number): Promise<string | undefined>;
  close(): Promise<void>;
}

export function createIdleQueue(connection: Redis, prefix: string): IdleQueue {
  const queue = new Queue<IdleJobData>(IDLE_QUEUE, { connection, prefix });
  // Errors surface on the add() promise; the listener only keeps them from being unhandled.
  queue.on("error", () => undefined);
  return {
    queue,
    async schedule(sessionKey, version, delayMs) {
      const job = await queue.add(
        "idle-compaction",
        { v: PAYLOAD_VERSION, sessionKey, version },
        {
          delay: delayMs,
          deduplication: { id: idleDedupId(sessionKey), replace: true, keepLastIfActive: true },
          // A compaction that fails is not retried: the next turn compacts in the loop as usual.
          // A stalled one (its worker died) is re-run by BullMQ; the lease fences the two.
          attempts: 1,
          removeOnComplete: { age: 3_600, count: 1_000 },
          removeOnFail: { age: 24 * 3_600, count: 1_000 },
        },
      );
      return job.id;
    },
    close: () => queue.close(),
  };
}
