/**
 * The send budget's port (docs/operator.md, "One send budget per bot"): every platform call that
 * counts against a bot's rate limits asks it first, in every gateway process, through Redis.
 * Adapters describe the buckets a call draws from (their platform's policy); the budget, which
 * knows nothing of platforms, grants or refuses by priority.
 */

/**
 * What a call carries, most important first. A final answer is never skipped: it waits for its
 * slot (or, past a long wait, is handed back to the delivery queue to come back later). A
 * notice waits for a free token. A preview or a typing call is skipped when the buckets are not
 * comfortably full (a later preview supersedes it), so they slow down first.
 */
export type SendPriority = "final" | "notice" | "preview" | "typing";

export const SEND_PRIORITIES: readonly SendPriority[] = ["final", "notice", "preview", "typing"];

/** A token bucket: `capacity` calls at once, refilled at `perSecond`. */
export interface SendBucket {
  /** Unique within the bot: "global", "chat:<id>", "group:<id>". */
  name: string;
  capacity: number;
  perSecond: number;
  /**
   * Previews and typing calls go only while everything sent through this bucket, finals
   * included, stays under this rate (a second bucket of the same capacity refilled at it, which
   * every call drains and only they must find full enough). Without it a preview is judged by
   * the bucket's level alone, which stays high until the bucket is used to the full: previews
   * then fill whatever the finals leave, the bucket runs at its limit, and the finals queue (on
   * Discord each status also brings its deletion, sent as a final, seconds later). Unset: none.
   */
  headroomPerSecond?: number;
}

/**
 * The share of a bot bucket's rate under which previews and typing keep the bot's sends (the
 * bucket's `headroomPerSecond`): the rest is left for the finals' bursts, so that they do not
 * queue. At 25 answers a second a Discord bot (40 a second refilled) leaves its previews 32 − 25
 * − their deletions; a Telegram bot (25 refilled) none.
 */
export const PREVIEW_HEADROOM = 0.8;

export interface SendRequest {
  /** The platform and the bot (its id, never its token): one budget per bot token. */
  platform: string;
  bot: string;
  /** The chat the call goes to, whose penalty (a `retry_after` answered for it) applies; unset: none. */
  chat?: string;
  buckets: readonly SendBucket[];
  priority: SendPriority;
}

export type SendGrant =
  /** Send after `delayMs` (the call's reserved slot). */
  | { granted: true; delayMs: number }
  /** Not now: ask again after `waitMs` at the earliest (a preview or typing call is dropped instead). */
  | { granted: false; waitMs: number };

/**
 * Told of each call the budget refused that the adapter then did not send: a preview or a typing
 * call skipped, a final or a notice handed back to the delivery queue to come back after the wait.
 */
export type SendRefusalListener = (priority: SendPriority) => void;

export interface SendBudget {
  take(request: SendRequest): Promise<SendGrant>;
  /**
   * The platform answered 429: nothing of this priority or below goes to `chat` (unset: any chat
   * of the bot, a global limit) for `retryAfterMs`; on a global one the priorities below final
   * wait a little longer still, so the finals held back go first.
   */
  penalize(penalty: { platform: string; bot: string; chat?: string; retryAfterMs: number }): Promise<void>;
}
