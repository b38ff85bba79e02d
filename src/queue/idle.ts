/**
 * Idle-time compaction jobs (src/agent/idle-compaction.ts): one BullMQ delayed job per session,
 * due CACHE_TTL_S after the commit that scheduled it. The job follows the session: when it runs
 * and finds that a turn committed since (the session's `updatedAt` is not the one it names), it
 * takes the newest version and moves itself to that turn's time + the TTL, so a commit need not
 * touch a job that is not due yet. `keepScheduled` therefore adds (deduplication with `replace`,
 * which swaps a waiting job for the newer one; `keepLastIfActive` leaves a running one for later)
 * only when this process has no job of the session that is not yet due: about once per TTL of a
 * busy session instead of once per turn. The job names the version it follows: a version moved by
 * anything but a turn (an idle compaction) makes it stale, so a job that slipped through does
 * nothing.
 */
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import { PAYLOAD_VERSION } from "./jobs.js";
import { queuePrefixOf } from "./redis.js";

export const IDLE_QUEUE = "idle-compactions";

export interface IdleJobData {
  v: typeof PAYLOAD_VERSION;
  sessionKey: string;
  /** The session's version the job follows (after the commit that scheduled it, or the newest when it moved itself). */
  version: number;
  /** That version's `updatedAt` (the last turn's time); absent in jobs added by hand: a moved version is then stale. */
  updatedAt?: number;
}

export const idleDedupId = (sessionKey: string) => `idle/${sessionKey}`;

/**
 * How long before its due time a job this process added stops counting for `keepScheduled`: a
 * job is due on the clock of the worker that runs it, so clocks apart by up to this much must not
 * let a job end (it ends only once due) while a commit here still counts on it. 30 s covers hosts
 * whose clocks drift unsynchronised for a while, and costs an add about every TTL − 30 s instead
 * of every TTL (default 300 s); with a TTL under 30 s every commit adds, as before.
 */
export const IDLE_SCHEDULE_MARGIN_MS = 30_000;
/** Sessions `keepScheduled` remembers at most; forgetting one only costs an add. */
const REMEMBERED_MAX = 10_000;

export interface IdleQueue {
  readonly queue: Queue<IdleJobData>;
  /** Adds (or replaces) the session's job. → the job's id (the waiting job's, when it was replaced or kept). */
  schedule(sessionKey: string, version: number, delayMs: number, updatedAt?: number): Promise<string | undefined>;
  /**
   * After a commit that leaves the session past the idle mark: schedules its job unless this
   * process added one that is not due yet (that job follows the session itself). → whether a job was added.
   */
  keepScheduled(sessionKey: string, version: number, updatedAt: number, delayMs: number): Promise<boolean>;
  close(): Promise<void>;
}

export function createIdleQueue(connection: Redis, prefix: string, options: { now?: () => number } = {}): IdleQueue {
  const queue = new Queue<IdleJobData>(IDLE_QUEUE, { connection, prefix: queuePrefixOf(connection, prefix, IDLE_QUEUE) });
  const now = options.now ?? Date.now;
  // Errors surface on the add() promise; the listener only keeps them from being unhandled.
  queue.on("error", () => undefined);
  /** Session → when the job this process last added for it is due. */
  const due = new Map<string, number>();
  const remember = (sessionKey: string, at: number) => {
    due.delete(sessionKey);
    due.set(sessionKey, at);
    if (due.size <= REMEMBERED_MAX) return;
    const time = now();
    for (const [key, dueAt] of due) if (dueAt - IDLE_SCHEDULE_MARGIN_MS <= time) due.delete(key);
    // Still full: the oldest go (Map order is insertion order).
    for (const key of due.keys()) {
      if (due.size <= REMEMBERED_MAX) break;
      due.delete(key);
    }
  };
  const schedule: IdleQueue["schedule"] = async (sessionKey, version, delayMs, updatedAt) => {
    const job = await queue.add(
      "idle-compaction",
      { v: PAYLOAD_VERSION, sessionKey, version, ...(updatedAt === undefined ? {} : { updatedAt }) },
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
  };
  return {
    queue,
    schedule,
    async keepScheduled(sessionKey, version, updatedAt, delayMs) {
      const time = now();
      const dueAt = due.get(sessionKey);
      if (dueAt !== undefined && dueAt - IDLE_SCHEDULE_MARGIN_MS > time) return false;
      due.delete(sessionKey);
      await schedule(sessionKey, version, delayMs, updatedAt);
      remember(sessionKey, time + delayMs);
      return true;
    },
    close: () => queue.close(),
  };
}
