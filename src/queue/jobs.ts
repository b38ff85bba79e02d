/**
 * Queue names and job payloads. Payloads carry only routing data (a session key): the
 * messages live in the session's inbox, and secrets never travel in a job.
 */

import type { Platform } from "../core/channel.js";

export const TURN_QUEUE = "turns";

/**
 * One delivery queue per platform: a gateway consumes only the queues of the platforms it has
 * adapters for, so a reply is never picked up by a gateway that cannot send it (and never
 * retried with backoff until one that can happens to take it).
 */
export const deliveryQueueName = (platform: Platform) => `deliveries-${platform}`;
export const PLATFORMS: readonly Platform[] = ["telegram", "discord", "console"];

/** Version of the payload shape; a worker refuses versions it does not know. */
export const PAYLOAD_VERSION = 1;

export interface TurnJobData {
  v: typeof PAYLOAD_VERSION;
  sessionKey: string;
  /** A delayed turn that denies this pending tool approval if nobody answered it. */
  approvalId?: string;
}

export interface DeliveryJobData {
  v: typeof PAYLOAD_VERSION;
  sessionKey: string;
}

/**
 * Deduplication ids: at most one active and one waiting job per session and queue
 * (BullMQ `keepLastIfActive`), which is what gives one turn at a time per session across
 * any number of workers, and batches messages that arrive during a turn (busy mode collect).
 */
export const turnDedupId = (sessionKey: string) => `turn/${sessionKey}`;
export const deliveryDedupId = (sessionKey: string) => `deliver/${sessionKey}`;
/**
 * One timeout job per approval (a retried hand-over schedules it again without doubling it).
 * The approval id is a UUID; BullMQ refuses ':' in job ids, which session keys contain.
 */
export const approvalTimeoutJobId = (approvalId: string) => `approval-${approvalId}`;
