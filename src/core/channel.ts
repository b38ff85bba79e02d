/**
 * Types every layer shares: what comes in from a chat platform, what goes back out, and where.
 * This module imports nothing of ours, so `session/`, `context/` and `agent/` can use these
 * without depending on `adapters/` (the only code that imports grammy or discord.js).
 */

import type { Attachment } from "./attachments.js";

export type Platform = "telegram" | "discord" | "console";

/**
 * How a platform request carrying a reply part ended (SendOptions.onPartRequest): answered with
 * success (the part is out), its outcome unknown (no answer, or a 5xx: it may have acted), or
 * failed before acting (a refusal, a connection never made).
 */
export type RequestOutcome = "answered" | "unknown" | "failed";

/** The short name of a platform in ids that cross platforms (`tg:42`, budget and access keys). */
export const platformPrefix = (platform: Platform): string => (platform === "telegram" ? "tg" : platform === "discord" ? "dc" : "console");

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
  /**
   * A button press (Telegram callback query, Discord component interaction, console "y"/"n")
   * instead of typed text: `id` is the pressed `ReplyAction.id`, `sourceMessageId` the platform
   * message that carried the buttons (so the outcome can replace it). `text` holds the label.
   */
  action?: { id: string; sourceMessageId?: string };
  /**
   * The client may have split a long paste after this message (Telegram cuts text over 4,096
   * characters into several messages). The worker waits briefly for the rest and joins the
   * parts that follow it: same sender, the next message id, sent within ~1.5 s.
   */
  mayContinue?: boolean;
  /**
   * Set when no person sent this: a scheduled item fired (src/schedule). `messageId` is then
   * synthetic (`sched-<item>-<time>`: never reply to it on the platform); a `reminder` is
   * delivered as it is, without an LLM call; a `task` is an ordinary agent turn.
   */
  scheduled?: ScheduledOrigin;
  /** Pictures, voice notes and files sent with the message: references, never bytes (src/media). */
  attachments?: Attachment[];
  /**
   * Set by the worker (src/media), never by adapters: what it read from the attachments
   * (placeholders, extracted text) for the model, ahead of `text`.
   */
  attachmentText?: string;
  /** Telegram album (media_group_id): its items are answered as one message. */
  mediaGroupId?: string;
}

export interface ScheduledOrigin {
  itemId: string;
  kind: "reminder" | "task" | "checkin";
  /** UTC ms of the occurrence this message delivers. */
  scheduledFor: number;
  /** Delivered more than a minute after `scheduledFor` (downtime): the text says so. */
  late?: boolean;
}

/**
 * Who a turn acts for and where: the routing fields of the message it answers. Tools that act
 * on the chat (scheduling) read it; a paused approval keeps it for the loop it resumes.
 */
export type MessageOrigin = Pick<InboundMessage, "platform" | "sessionKey" | "chatId" | "threadId" | "parentChatId" | "chatType" | "userId" | "userName">;

/** The origin fields of a message, and nothing else (a paused approval stores them). */
export function messageOrigin(message: MessageOrigin): MessageOrigin {
  return {
    platform: message.platform,
    sessionKey: message.sessionKey,
    chatId: message.chatId,
    ...(message.threadId !== undefined ? { threadId: message.threadId } : {}),
    ...(message.parentChatId !== undefined ? { parentChatId: message.parentChatId } : {}),
    chatType: message.chatType,
    userId: message.userId,
    userName: message.userName,
  };
}

/** A button under a reply (approval requests). `id` comes back as `InboundMessage.action.id`. */
export interface ReplyAction {
  /** At most 64 bytes (Telegram's callback_data limit; Discord allows 100). */
  id: string;
  label: string;
  style?: "primary" | "danger";
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
  /** Buttons shown under the reply's last part (approval requests). */
  actions?: ReplyAction[];
  /**
   * For the person it answers only (/usage, /memory, /export, a refusal): where the platform
   * can, it is shown to them alone (a Discord ephemeral reply to their interaction, a Telegram
   * alert on their button press); elsewhere it is an ordinary reply — except one to a Telegram
   * button press that no alert can carry any more, which is not sent at all.
   */
  private?: boolean;
  /**
   * The platform message this reply replaces in place (the approval request, once answered):
   * its text becomes this reply's and its buttons go. Adapters that cannot edit send anew.
   */
  replaces?: string;
  /**
   * The live preview (docs/streaming.md) this reply takes over: its first part is edited into
   * the preview message instead of being sent anew. The id is the one the turn's previews were
   * published under (the reply id of the answer it streamed).
   */
  preview?: string;
  /**
   * Only for the preview: edit it into the preview message if there is one, send nothing
   * otherwise (a turn stopped mid-stream marks its preview so).
   */
  previewOnly?: boolean;
  /**
   * Files sent with the reply (`/export`), after its text: each document is one more part of
   * the reply (part index = the text's part count + its position), so its delivery is recorded
   * and resumed like a text part's.
   */
  documents?: ReplyDocument[];
  /**
   * The answer spoken (/voice, docs/media.md): sent first, as a Telegram voice note or a Discord
   * voice message; `text` still holds the whole answer, shown beside the voice when `withText`.
   */
  voice?: ReplyVoice;
}

/**
 * A voice reply's audio and how it goes out. Its parts: the voice (part 0; on Telegram with the
 * text as its caption when `withText` and the text fits one), then the text's own parts when
 * `withText` and no caption holds it. A platform that refuses the voice (a Telegram user who
 * forbids voice notes) gets the text in its place.
 */
export interface ReplyVoice {
  /** Ogg/Opus bytes, base64 (the outbox is JSON). */
  base64: string;
  durationS: number;
  /** Discord's voice-message waveform: base64 of up to 256 amplitude bytes. */
  waveform: string;
  /** The text is shown too; false: the voice alone (the text is kept in the transcript). */
  withText: boolean;
}

/** A file a reply carries. The outbox is JSON: the bytes travel as base64. */
export interface ReplyDocument {
  /** Required by every platform: letters, digits, '.', '-', '_' only. */
  filename: string;
  mime: string;
  base64: string;
}

/**
 * The largest file a bot may upload: Telegram's Bot API says 50 MB; Discord 10 MiB in a server
 * without boosts (and in DMs). The console writes files to disk and has no limit of its own.
 */
export const UPLOAD_MAX_BYTES: Readonly<Record<Platform, number>> = {
  telegram: 50 * 1024 * 1024,
  discord: 10 * 1024 * 1024,
  console: Number.POSITIVE_INFINITY,
};

/** STREAMING / <PLATFORM>_STREAMING: what a chat sees while a turn runs (docs/streaming.md). */
export type StreamingMode = "off" | "progress" | "partial";

/**
 * A preview update a worker publishes while a turn runs. Previews are lossy (Redis pub/sub):
 * the gateway renders the latest one it has, throttled per chat; the final answer never comes
 * from here but from the committed reply.
 */
export interface PreviewUpdate {
  sessionKey: string;
  /** The reply id the answer will have (`OutboundReply.preview`). */
  previewId: string;
  target: ReplyTarget;
  /** What the chat should show now: a status line, or the answer so far (partial mode). */
  text: string;
}

/** Turn lifecycle the gateway hears about (e.g. to keep a typing indicator alive). */
export interface TurnActivity {
  type: "turn-started" | "turn-finished";
  sessionKey: string;
  target: ReplyTarget;
  /** Sent by the gateway for a message still waiting for its turn (src/gateway/waiting-typing.ts), not by a turn. */
  waiting?: true;
  /**
   * One turn's own id (each run of a turn, a retry included, has its own): its started and
   * finished carry the same, so the gateway can tell a late one (src/gateway/activity-order.ts).
   * Absent from the gateway's own `waiting` signal and from workers older than 2026-12-07.
   */
  turnId?: string;
}

/**
 * What the gateway hands each adapter. `submit` persists the message (access check, dedupe,
 * inbox, enqueue) and resolves only once it is durable: acknowledge the platform after it.
 */
/** Who writes where: what the access check reads. */
export type AccessSubject = Pick<InboundMessage, "platform" | "chatType" | "chatId" | "parentChatId" | "userId" | "userName">;

export interface IngressPort {
  submit(message: InboundMessage): Promise<SubmitResult>;
  /**
   * The access check alone, for what an adapter would do before submitting (answer directly,
   * download a file, fetch a replied-to message): nothing is done for a chat or user the bot
   * does not serve. A stranger in a private chat gets the pairing `notice` to send instead.
   */
  admit?(subject: AccessSubject): Promise<{ allowed: boolean; notice?: string }>;
  /**
   * A chat changed its id for good (a Telegram group upgraded to a supergroup): the session
   * moves to the new key atomically (transcript, live context, settings, archives, queued
   * replies), and the new id inherits the old one's access. Idempotent; resolves once durable.
   */
  moveChat?(move: ChatMove): Promise<ChatMoveResult>;
  /**
   * The bot left a chat or lost it (kicked, blocked, channel or guild deleted): what the chat
   * had scheduled goes. Adapters call it when their platform tells them.
   */
  chatClosed?(platform: Platform, chatId: string): Promise<void>;
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
  /**
   * Drops the channel's cursor: the bot lost the chat (`chatClosed`). Otherwise a deleted
   * thread's cursor stays for good, and after a restart it looks like a DM to catch up.
   */
  forget(platform: Platform, channelId: string): Promise<void>;
}

export interface ChatMove {
  platform: Platform;
  fromChatId: string;
  toChatId: string;
  fromSessionKey: string;
  toSessionKey: string;
}

/**
 * `moved`: the session now lives under the new key; `already-moved`: an earlier call moved it;
 * `nothing`: the old chat had no session; `target-exists`: the new key already holds a session
 * (it is left alone, and so is the old one).
 */
export type ChatMoveResult = "moved" | "already-moved" | "nothing" | "target-exists";

export type SubmitResult =
  | { status: "accepted" }
  | { status: "duplicate" }
  /** Not allowed: the adapter must send `notice` (pairing instructions or a refusal) and stop. */
  | { status: "denied"; notice?: string }
  | { status: "rate-limited"; notice?: string }
  /**
   * A button press this person may not answer (someone else's approval request): nothing was
   * stored; the adapter shows `notice` to the presser alone, at once (a Discord ephemeral
   * reply, a Telegram alert), while the press can still carry it.
   */
  | { status: "refused"; notice: string };
