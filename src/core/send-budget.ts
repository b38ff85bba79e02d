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
}

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
