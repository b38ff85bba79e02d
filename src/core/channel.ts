/**
 * Types every layer shares: what comes in from a chat platform, what goes back out, and where.
 * This module imports nothing of ours, so `session/`, `context/` and `agent/` can use these
 * without depending on `adapters/` (the only code that imports grammy or discord.js).
 */

export type Platform = "telegram" | "discord" | "console";

/** Where a reply goes back to: enough for the gateway to send without any other lookup. */
export interface ReplyTarget {
  platform: Platform;
  /** Platform chat / channel id, as a string. */
  chatId: string;
  /** Telegram forum topic id (message_thread_id), when the message came from a topic. */
  threadId?: string;
  /** The platform message id to reply to (the latest message of the turn). */
  replyToMessageId?: string;
}

/** One chat message from a platform, normalised. */
export interface InboundMessage {
  platform: Platform;
  /** Session key (SPEC §2): `tg:<chatId>[:<topicId>]`, `dc:<channelId>`, `dc:dm:<userId>`, `console:<name>`. */
  sessionKey: string;
  /** Platform message id; with `platform` and `chatId` it dedupes re-deliveries. */
  messageId: string;
  chatId: string;
  /** Telegram forum topic id; the reply goes back into the topic. */
  threadId?: string;
  /**
   * The channel that holds `chatId` when `chatId` is a Discord thread: access rules name
   * channels, and a thread of an allowed channel is allowed.
   */
  parentChatId?: string;
  userId: string;
  /** Display name of the speaker; prefixed to the text in shared chats. */
  userName: string;
  chatType: "private" | "group";
  text: string;
  /** Unix ms as the platform reported it (or arrival time). */
  sentAt: number;
  /**
   * The message this one replies to or quotes, when the platform says: "is this right?" sent
   * as a reply to Bob's message means nothing without Bob's text. `text` is trimmed by the
   * adapter (REPLY_CONTEXT_MAX_CHARS); `quote` is the part the user selected, when they did.
   */
  replyTo?: { author: string; text: string; quote?: string; isBot?: boolean };
  /** Where a forwarded message came from (a user's or a chat's name), when the platform gives it. */
  forwardedFrom?: string;
}

/** Longest replied-to text an adapter puts into `InboundMessage.replyTo` (the rest is elided). */
export const REPLY_CONTEXT_MAX_CHARS = 500;

/** A reply the worker produced, on its way out. */
export interface OutboundReply {
  /** Stable id: `<sessionKey>#<turn version>`; the sender never sends one id twice. */
  replyId: string;
  sessionKey: string;
  target: ReplyTarget;
  /** The model's Markdown; adapters render and split it for their platform. */
  text: string;
  /** Platform message ids this reply answers (all messages collected into the turn). */
  inReplyTo: string[];
  /** `notice` marks system notices (errors, pairing) as opposed to the agent's answers. */
  kind: "answer" | "notice";
}

/** Turn lifecycle the gateway hears about (e.g. to keep a typing indicator alive). */
export interface TurnActivity {
  type: "turn-started" | "turn-finished";
  sessionKey: string;
  target: ReplyTarget;
}

/**
 * What the gateway hands each adapter. `submit` persists the message (access check, dedupe,
 * inbox, enqueue) and resolves only once it is durable: acknowledge the platform after it.
 */
export interface IngressPort {
  submit(message: InboundMessage): Promise<SubmitResult>;
  /** Per-channel read positions for catching up after a restart; absent: the adapter cannot backfill. */
  cursors?: ChannelCursors;
}

/**
 * The last message an adapter has handled in each platform channel, kept by the gateway (in
 * Redis) so it survives a restart: after reconnecting, a platform without redelivery (Discord)
 * fetches what was posted since and submits it again; ingress dedupe drops what it already had.
 * Message ids are platform ids that grow with time (Discord snowflakes), compared as numbers.
 */
export interface ChannelCursors {
  /** The channel's last handled message id, if it has one. */
  get(platform: Platform, channelId: string): Promise<string | undefined>;
  /** Moves the channel's cursor to `messageId` unless it is already at or past it. */
  advance(platform: Platform, channelId: string, messageId: string): Promise<void>;
  /** Every channel of the platform with a cursor: channel id → message id. */
  list(platform: Platform): Promise<Map<string, string>>;
}

export type SubmitResult =
  | { status: "accepted" }
  | { status: "duplicate" }
  /** Not allowed: the adapter must send `notice` (pairing instructions or a refusal) and stop. */
  | { status: "denied"; notice?: string }
  | { status: "rate-limited"; notice?: string };
