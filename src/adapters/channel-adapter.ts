import type { IncomingMessage, ServerResponse } from "node:http";
import type { IngressPort, OutboundReply, Platform, ReplyTarget, RequestOutcome, TurnActivity } from "../core/channel.js";
import type { SendBudget, SendRefusalListener } from "../core/send-budget.js";

export type { AccessSubject, ChannelCursors, ChatMove, ChatMoveResult, InboundMessage, IngressPort, OutboundReply, Platform, PreviewUpdate, ReplyAction, ReplyDocument, ReplyTarget, ReplyVoice, RequestOutcome, StreamingMode, SubmitResult, TurnActivity } from "../core/channel.js";
export { REPLY_CONTEXT_MAX_CHARS } from "../core/channel.js";

/**
 * The seam between chat platforms and the pipeline. Only `src/adapters/` imports grammy or
 * discord.js; everything else speaks these types.
 */

export interface ChannelAdapter {
  readonly platform: Platform;
  /**
   * HTTP routes the gateway's server must mount (path → handler), e.g. the Telegram webhook.
   * Read after `start()` resolves.
   */
  readonly httpRoutes?: ReadonlyMap<string, (request: IncomingMessage, response: ServerResponse) => void>;
  /** Connects and starts handing messages to `ingress`. Resolves once intake is running. */
  start(ingress: IngressPort): Promise<void>;
  /**
   * Sends a reply. `fromPart` resumes a partially sent reply (parts already delivered are
   * skipped); `onPartSent` is awaited after each part so the sender can record progress (and
   * stop a superseded delivery before the next part). `last`: nothing more of this reply goes
   * out in this call, so the sender need not record it (the finish that follows does).
   */
  send(reply: OutboundReply, options: SendOptions): Promise<void>;
  /** Live previews (docs/streaming.md); absent: the platform shows none, replies go out as before. */
  readonly previews?: PreviewPort | undefined;
  /**
   * The bot's send budget, shared with every gateway through Redis (src/gateway/send-budget.ts):
   * given before `start`; the adapter asks it before each call that counts against the
   * platform's rate limits. Without it the adapter sends as the platform's own answers allow.
   * `onRefused` hears of each call the budget refused (for /metrics).
   */
  useSendBudget?(budget: SendBudget, onRefused?: SendRefusalListener): void;
  /** Turn activity for typing indicators; optional. Must never throw. */
  onActivity?(activity: TurnActivity): void;
  /** Stops intake and releases connections; safe to call twice. */
  stop(): Promise<void>;
  /** For /healthz: whether the platform connection is up. */
  isConnected(): boolean;
}

export interface SendOptions {
  fromPart: number;
  /**
   * `sent.last` must be true only when this call sends nothing after this part (a wrong `true`
   * on an earlier part widens a crash's re-send to that part; a missed `true` costs a round trip).
   */
  onPartSent(partIndex: number, sent: PartSent): Promise<void>;
  /**
   * The live preview this reply takes over. A preview-only reply (`only`, from part 0) is
   * edited into `messageId` ("not modified" counts as done); when the platform refuses the edit
   * for good (deleted, too old), `onRefused` is awaited and nothing is sent. Any other reply is
   * sent as new messages (they notify; an edit never does) and the preview deleted once part 1
   * is recorded; with `fromPart` 1 (a delivery resumed after part 1) the preview is deleted
   * again, since a crash may have come between the record and the deletion.
   */
  preview?: { messageId: string; only: boolean; onRefused(): Promise<void> };
  /**
   * Told when the request carrying part `partIndex` goes out (`true`) and when it is answered or
   * fails (`false`); never during a wait before it (a rate limit's). Reported only for requests
   * without an idempotency key — Telegram's, and a Discord interaction's webhook (the edit of a
   * deferred reply, a follow-up): a part on the wire when the process must exit is recorded as
   * sent, so the next gateway does not send it again (docs/architecture.md, "Shutdown").
   * `outcome` (with `false`, where the adapter can tell): answered with success, or unknown — the
   * part stays in flight until its report (onPartSent) is recorded, whatever runs between.
   */
  onPartRequest?(partIndex: number, onWire: boolean, outcome?: RequestOutcome): void;
  /**
   * Told before the request carrying part `partIndex` goes out with a nonce Discord enforces (a
   * channel message): until its report (onPartSent) it may be on the wire. Such a part is not
   * recorded as sent at the exit: a mark says when it went out, and the next gateway resends it
   * (the nonce returns the message already made) only while Discord still knows the nonce
   * (docs/architecture.md, "Shutdown").
   */
  onNoncedPart?(partIndex: number): void;
}

export interface PartSent {
  /** No further part of the reply follows in this `send` call. */
  last: boolean;
  /**
   * The part's outcome is unknown (the platform may have shown it; its answer was lost) and it
   * is not sent again: it counts as sent, at most once (Telegram, which has no idempotency key).
   */
  unconfirmed?: true;
  /**
   * Only this process can send the rest of the reply the same way (a Discord interaction it alone
   * knows; the next gateway would post a public reply's rest to the channel and drop a private
   * one's): a stopping gateway goes on with it instead of handing it back, within its shutdown time.
   */
  boundHere?: true;
}

/**
 * What a platform offers for live previews. Errors: a `RetryableError` with `retryAfterMs` for
 * a rate limit (the renderer backs off its previews, never the final), a `PermanentError` when
 * the message cannot be edited any more.
 */
export interface PreviewPort {
  /** Shortest gap between two preview writes in this chat (the platform's limits, with room left for the final). */
  minIntervalMs(target: ReplyTarget): number;
  /**
   * Sends the preview message (a reply to the user's message, like the final's first part). → its id.
   * With `late`, a create whose request went out but whose answer `signal` ended before may
   * keep waiting for that answer (it has thrown already) and hand the message it made to
   * `late.arrived` (Telegram: the only way to learn of that message at all).
   */
  create(target: ReplyTarget, text: string, signal: AbortSignal, previewId?: string, late?: LateCreate): Promise<string>;
  /** Shows `text` in the preview message; "not modified" is success. */
  edit(target: ReplyTarget, messageId: string, text: string, signal: AbortSignal): Promise<void>;
  /** Removes a preview message nobody will take over (its final came first). */
  remove(target: ReplyTarget, messageId: string): Promise<void>;
  /**
   * Finds the message a create of `previewId` whose answer was lost may have made (Discord: a
   * create with the same nonce returns it; it is made now if the first never landed) → its id.
   * Absent where the platform offers no way (Telegram: no idempotency key, no reading back).
   */
  recover?(target: ReplyTarget, previewId: string, signal: AbortSignal): Promise<string>;
}

/** Where a preview create's answer goes when it comes after the create gave up on it. */
export interface LateCreate {
  /** Ends the wait for the late answer (the gateway is closing): the request is dropped. */
  signal: AbortSignal;
  /** The create made `messageId` after all; the caller keeps it as the preview or deletes it. Must never throw. */
  arrived(messageId: string): void;
}

/**
 * Whose bot token it is (Telegram getMe, Discord GET /users/@me), as `npm run setup` checks a
 * token: `rejected` when the platform refused it, `unreachable` without an answer. Never holds
 * the token.
 */
export type BotIdentity =
  | { ok: true; id: string; name: string }
  | { ok: false; reason: "rejected" | "unreachable" | "failed"; detail: string };
