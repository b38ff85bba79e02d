/**
 * A Telegram update → what the gateway should do with it: submit a normalised message, answer
 * directly (the /start greeting, the note on unsupported media), or ignore it (and why).
 * Pure; the adapter does the I/O. Decisions are explained in docs/telegram.md.
 */
import type { Message, MessageEntity, Update } from "grammy/types";
import type { AccessSubject, InboundMessage, ReplyTarget } from "../channel-adapter.js";
import { COMMAND_NAMES, commandMenu, type CommandScope } from "../../core/commands.js";
import { forwardedFromOf, mediaLabelOf, replyContextOf, speakerOf } from "./reply-context.js";
import { telegramAttachments } from "./attachments.js";

export interface BotIdentity {
  id: number;
  /** Without the "@". */
  username: string;
}

export interface IntakeOptions {
  bot: BotIdentity;
  /** Longer text is cut to this many UTF-16 units (the marker included). */
  maxMessageChars: number;
  /**
   * Whether this unaddressed group message continues a paste whose first part addressed the
   * bot (the adapter remembers recent long messages; see PASTE_PART_MIN_CHARS).
   */
  continuesPaste?: (message: Message) => boolean;
  /** Whether an album item belongs to an album whose other item addressed the bot (groups). */
  continuesAlbum?: (mediaGroupId: string) => boolean;
  /** Whether another bot is known to be in this group (see `showsOtherBot`). */
  hasOtherBot?: (chatId: string) => boolean;
  /**
   * Privacy mode is on (getMe's can_read_all_group_messages false): Telegram then gives a bare
   * command in a group only to the bot that spoke there last, so it is ours.
   */
  privacyMode?: boolean;
}

export type Intake =
  | { kind: "message"; message: InboundMessage; target: ReplyTarget; truncatedFrom?: number; mediaGroupId?: string }
  /** `subject`: who wrote where, checked for access before the answer goes out. */
  | { kind: "answer-directly"; reason: "start" | "unsupported-media"; target: ReplyTarget; subject: AccessSubject; text: string; mediaGroupId?: string }
  /** The group became a supergroup: its session, access and queued replies move to the new id. */
  | { kind: "migrate"; fromChatId: string; toChatId: string }
  /** The bot left or was removed from a group, or a user blocked it: what the chat scheduled goes. */
  | { kind: "chat-closed"; chatId: string; status: "left" | "kicked" }
  | { kind: "ignore"; reason: string }
  | { kind: "malformed"; reason: string };

/**
 * Telegram clients split a text longer than 4,096 characters into several messages, cutting at
 * a line break or space before the limit. A message at least this long may be followed by more
 * parts of the same paste; the worker waits briefly for them and joins them (docs/telegram.md).
 */
export const PASTE_PART_MIN_CHARS = 3_000;

/** Telegram's menu scopes for the registry's (src/core/commands.ts), each set with setMyCommands. */
export const TELEGRAM_MENU_SCOPES = [
  { scope: { type: "all_private_chats" }, menu: "private" },
  { scope: { type: "all_group_chats" }, menu: "group" },
  { scope: { type: "all_chat_administrators" }, menu: "group-admin" },
] as const satisfies ReadonlyArray<{ scope: { type: string }; menu: CommandScope }>;

/** The setMyCommands list of one menu scope. */
export function telegramCommands(menu: CommandScope): Array<{ command: string; description: string }> {
  return commandMenu(menu).map((spec) => ({ command: spec.name, description: spec.description }));
}

/** The private chats' menu (the widest), for callers that want one list. */
export const TELEGRAM_COMMANDS: ReadonlyArray<{ command: string; description: string }> = telegramCommands("private");

/**
 * Commands we answer without an @botname suffix in groups (Telegram clients drop it when we are
 * the only bot): every command of ours, the ones not in the menu (/persona, /budget, …) too.
 */
const OUR_COMMANDS: ReadonlySet<string> = new Set(COMMAND_NAMES);

export function greetingText(botUsername: string): string {
  return [
    "Hi! I'm **longhaul**, an AI assistant made for long conversations: I keep our context for weeks, condensing older turns instead of forgetting them.",
    `Just write to me here. In a group, mention @${botUsername} or reply to one of my messages.`,
    "Commands: /help · /new to start over · /status · /usage · /compress · /stop",
    "If this bot is private, your first message gets you a pairing code to pass to its operator.",
  ].join("\n\n");
}

export function unsupportedMediaText(label: string): string {
  return `Sorry, I can't open this ${label}. I read text, pictures, voice messages and files; please send your question as one of those (captions are read too).`;
}

export function truncationNoticeText(originalLength: number, maxMessageChars: number): string {
  const format = (value: number) => value.toLocaleString("en-US");
  return `Your message was ${format(originalLength)} characters long, so I only read the first ${format(maxMessageChars)}.`;
}

const TRUNCATION_MARKER = "\n[… message truncated]";

export function toInboundMessage(update: Update, options: IntakeOptions): Intake {
  if (update.edited_message || update.edited_channel_post || update.edited_business_message) {
    return { kind: "ignore", reason: "edited message (edits are not re-answered)" };
  }
  if (update.my_chat_member) return membershipIntake(update.my_chat_member);
  const message = update.message;
  if (!message) return { kind: "ignore", reason: "unsupported update type" };
  if (typeof message.message_id !== "number" || typeof message.chat?.id !== "number" || typeof message.date !== "number") {
    return { kind: "malformed", reason: "message without id, chat or date" };
  }
  // Both service messages of an upgrade carry the pair; whichever arrives first moves the session.
  if (typeof message.migrate_to_chat_id === "number") return { kind: "migrate", fromChatId: String(message.chat.id), toChatId: String(message.migrate_to_chat_id) };
  if (typeof message.migrate_from_chat_id === "number") return { kind: "migrate", fromChatId: String(message.migrate_from_chat_id), toChatId: String(message.chat.id) };

  const chat = message.chat;
  if (chat.type !== "private" && chat.type !== "group" && chat.type !== "supergroup") {
    return { kind: "ignore", reason: "channel post" };
  }
  const isPrivate = chat.type === "private";
  const speaker = speakerOf(message);
  if (!speaker) return { kind: "malformed", reason: "message without sender" };
  if (speaker.isBot) return { kind: "ignore", reason: "message from a bot" };

  // A sticker reads as its emoji ("[sticker] 👍"); one without an emoji is named like other media.
  const rawText = message.text ?? message.caption ?? message.sticker?.emoji ?? "";
  const entities = (message.text !== undefined ? message.entities : message.caption_entities) ?? [];
  const attachments = telegramAttachments(message);
  // Media we take as attachments need no label; the rest (video, stickers, …) is named.
  const media = attachments.length > 0 ? undefined : mediaLabelOf(message);
  if (rawText === "" && media === undefined && attachments.length === 0) return { kind: "ignore", reason: "service message" };

  const username = options.bot.username.toLowerCase();
  const command = leadingCommand(rawText, entities);
  if (command?.target !== undefined && command.target !== username) return { kind: "ignore", reason: "command for another bot" };

  if (!isPrivate) {
    const mentioned = entities.some(
      (entity) => entity.type === "mention" && rawText.slice(entity.offset, entity.offset + entity.length).toLowerCase() === `@${username}`,
    );
    const reply = message.reply_to_message;
    // In forum topics every message "replies" to the topic's root service message; that is
    // not a reply to us even when we created the topic.
    const repliedToBot =
      reply?.from?.id === options.bot.id &&
      reply.forum_topic_created === undefined &&
      !(message.is_topic_message === true && reply.message_id === message.message_thread_id);
    // A bare command (no @botname) is ours unless another bot is known to be here: with several
    // bots, `/new` alone must not archive our session (a client's menu adds @botname itself).
    const bareIsOurs = options.privacyMode === true || options.hasOtherBot?.(String(chat.id)) !== true;
    const commandForUs = command !== undefined && (command.target === username || (OUR_COMMANDS.has(command.name) && bareIsOurs));
    const continuation = !mentioned && !repliedToBot && !commandForUs &&
      (options.continuesPaste?.(message) === true || (message.media_group_id !== undefined && options.continuesAlbum?.(message.media_group_id) === true));
    if (!mentioned && !repliedToBot && !commandForUs && !continuation) return { kind: "ignore", reason: "group message not addressed to the bot" };
  }

  const isTopic = message.is_topic_message === true && message.message_thread_id !== undefined;
  const chatId = String(chat.id);
  const threadId = isTopic ? String(message.message_thread_id) : undefined;
  const target: ReplyTarget = {
    platform: "telegram",
    chatId,
    ...(threadId === undefined ? {} : { threadId }),
    replyToMessageId: String(message.message_id),
  };

  const mediaGroupId = message.media_group_id;
  const album = mediaGroupId === undefined ? {} : { mediaGroupId };
  const startPayload = command?.name === "start" ? rawText.slice(command.length).trim() : undefined;
  const subject: AccessSubject = { platform: "telegram", chatType: isPrivate ? "private" : "group", chatId, userId: speaker.id, userName: speaker.name };
  if (startPayload === "") return { kind: "answer-directly", reason: "start", target, subject, text: greetingText(options.bot.username) };
  if (rawText.trim() === "" && attachments.length === 0) return { kind: "answer-directly", reason: "unsupported-media", target, subject, text: unsupportedMediaText(media ?? "message"), ...album };

  // A deep link (t.me/bot?start=<payload>) is passed on: the payload is what the link asked for.
  let text = startPayload === undefined ? (rawText.trim() === "" ? "" : stripAddress(rawText, entities, username)) : `[opened me from a link with the start parameter "${startPayload}"]`;
  if (media !== undefined) text = `[${media}] ${text}`;
  let truncatedFrom: number | undefined;
  if (text.length > options.maxMessageChars) {
    truncatedFrom = text.length;
    text = truncate(text, options.maxMessageChars);
  }

  const message_: InboundMessage = {
    platform: "telegram",
    sessionKey: threadId === undefined ? `tg:${chatId}` : `tg:${chatId}:${threadId}`,
    messageId: String(message.message_id),
    chatId,
    ...(threadId === undefined ? {} : { threadId }),
    userId: speaker.id,
    userName: speaker.name,
    chatType: isPrivate ? "private" : "group",
    text,
    sentAt: message.date * 1000,
    ...optional("replyTo", replyContextOf(message, options.bot.id)),
    ...optional("forwardedFrom", forwardedFromOf(message)),
    ...(rawText.length >= PASTE_PART_MIN_CHARS && media === undefined && attachments.length === 0 ? { mayContinue: true } : {}),
    ...(attachments.length > 0 ? { attachments } : {}),
    // The items of an album arrive as separate messages, back to back: the worker joins them.
    ...(attachments.length > 0 && mediaGroupId !== undefined ? { mediaGroupId, mayContinue: true } : {}),
  };
  return { kind: "message", message: message_, target, ...(truncatedFrom === undefined ? {} : { truncatedFrom }), ...album };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * Whether a group message shows another bot in the chat: one joining, a command addressed to
 * another @bot, a reply to another bot's message. Bots never see each other's messages, so this
 * is what a bot can know.
 */
export function showsOtherBot(message: Message, botId: number, username: string): boolean {
  if (message.chat.type === "private") return false;
  if (message.new_chat_members?.some((member) => member.is_bot && member.id !== botId)) return true;
  const reply = message.reply_to_message;
  if (reply?.from?.is_bot === true && reply.from.id !== botId && reply.forum_topic_created === undefined) return true;
  const text = message.text ?? message.caption ?? "";
  const command = leadingCommand(text, (message.text !== undefined ? message.entities : message.caption_entities) ?? []);
  return command?.target !== undefined && command.target !== username.toLowerCase();
}

function leadingCommand(text: string, entities: readonly MessageEntity[]): { name: string; target?: string; length: number } | undefined {
  const entity = entities.find((candidate) => candidate.type === "bot_command" && candidate.offset === 0);
  if (!entity) return undefined;
  const [name = "", target] = text.slice(1, entity.length).toLowerCase().split("@");
  return { name, length: entity.length, ...(target === undefined ? {} : { target }) };
}

/** Removes our @mentions and the @botname of a leading command; keeps the text otherwise as written. */
function stripAddress(text: string, entities: readonly MessageEntity[], username: string): string {
  let result = text;
  const ordered = [...entities].sort((left, right) => right.offset - left.offset);
  for (const entity of ordered) {
    const slice = result.slice(entity.offset, entity.offset + entity.length);
    if (entity.type === "bot_command" && entity.offset === 0 && slice.toLowerCase().endsWith(`@${username}`)) {
      result = slice.slice(0, slice.length - username.length - 1) + result.slice(entity.length);
    } else if (entity.type === "mention" && slice.toLowerCase() === `@${username}`) {
      result = joinAround(result.slice(0, entity.offset), result.slice(entity.offset + entity.length));
    }
  }
  result = result.trim();
  return result === "" ? text.trim() : result;
}

function joinAround(before: string, after: string): string {
  const left = before.replace(/[ \t]+$/, "");
  const right = left.trim() === "" ? after.replace(/^[\s,:;]+/, "") : after;
  const needsSpace = left.length > 0 && right.length > 0 && !/\s$/.test(left) && !/^[\s.,!?;:]/.test(right);
  return left + (needsSpace ? " " : "") + right;
}

function truncate(text: string, maxLength: number): string {
  const marker = maxLength > TRUNCATION_MARKER.length * 4 ? TRUNCATION_MARKER : "";
  let cut = maxLength - marker.length;
  // Never leave half of a surrogate pair (an emoji) at the end.
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--;
  return text.slice(0, cut) + marker;
}

/**
 * The bot's own membership changed. A group upgraded to a supergroup sends no "left" for the old
 * id (the migrate service messages move it instead), so "left" and "kicked" mean the chat is gone
 * for the bot; in a private chat "kicked" means the user blocked it.
 */
function membershipIntake(update: NonNullable<Update["my_chat_member"]>): Intake {
  if (typeof update.chat?.id !== "number" || typeof update.new_chat_member?.status !== "string") {
    return { kind: "malformed", reason: "my_chat_member without chat or status" };
  }
  const status = update.new_chat_member.status;
  if (status === "left" || status === "kicked") return { kind: "chat-closed", chatId: String(update.chat.id), status };
  return { kind: "ignore", reason: `bot membership is now ${status}` };
}
