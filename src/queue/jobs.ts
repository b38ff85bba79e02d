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

/**
 * BullMQ's key prefix for one queue. A BullMQ script touches several keys of its queue
 * (`<prefix>:<queue>:wait`, `…:active`, `…:<job id>`), so on a Redis Cluster they must share a
 * slot: each queue gets its own hash tag (`<prefix>:{<queue>}`), which also spreads the queues
 * over the masters. A single Redis (or Sentinel) keeps the plain prefix, so an existing
 * deployment's queued jobs stay where they are (`npm run admin -- migrate-to-cluster` renames
 * them when it copies a deployment to a Cluster).
 */
export function queuePrefix(prefix: string, queue: string, cluster: boolean): string {
  return cluster ? `${prefix}:{${queue}}` : prefix;
}
