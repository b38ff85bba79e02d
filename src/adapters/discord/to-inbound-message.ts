import type { InboundMessage } from "../channel-adapter.js";
import { REPLY_CONTEXT_MAX_CHARS } from "../../core/channel.js";
import { boundaryAtOrBefore } from "./graphemes.js";
import type { Attachment } from "../../core/attachments.js";
import { gifAttachments, withoutGifLinks, type GifFacts } from "./gifs.js";

/**
 * Discord message → InboundMessage, or the reason it is not for the bot. Pure functions of
 * plain data (`describeMessage` in describe-message.ts reads the facts off a discord.js
 * Message), in two steps around the I/O the adapter does in between:
 *
 * 1. `planInbound` decides from the message alone: ignore it, or take it, with the text files
 *    to download and the replied-to message to look up.
 * 2. `completeInbound` builds the InboundMessage once those are read, or the one notice to send
 *    when nothing in the message can be read.
 */

export interface AttachmentFacts {
  id: string;
  name: string;
  /** Bytes, as Discord reports them. */
  size: number;
  contentType: string | null;
  url: string;
  /** Pictures: pixels, as Discord reports them. */
  width?: number | null;
  height?: number | null;
}

/** The facts about one Discord message that decide whether and how it reaches the ingress. */
export interface DiscordMessageFacts {
  id: string;
  /** The channel it was posted in; for a thread, the thread's id (a thread is a channel). */
  channelId: string;
  /** The thread's parent channel when posted in a thread; null otherwise. */
  threadParentId: string | null;
  isDirectMessage: boolean;
  author: {
    id: string;
    username: string;
    globalName: string | null;
    isBot: boolean;
    /** Discord's own system user (official announcements). */
    isSystem: boolean;
  };
  /** The author's nickname in this guild, when set. */
  memberNickname: string | null;
  /** The text; for a forwarded message, the forwarded message's text. */
  content: string;
  createdTimestamp: number;
  /** Join notices, pins, thread-created notices and the like. */
  isSystemMessage: boolean;
  /**
   * Whether the bot itself is mentioned: `message.mentions.has(bot, { ignoreEveryone: true,
   * ignoreRoles: true })`, so neither @everyone/@here nor an arbitrary role counts.
   */
  mentionsBot: boolean;
  /**
   * The role Discord manages for the bot in this guild (tags.bot_id), when it has one:
   * mentioning it (what autocomplete often inserts for `@longhaul`) addresses the bot.
   */
  botRoleId: string | null;
  /** Users mentioned in the text, to render `<@id>` as `@name` for the agent. */
  mentionedUsers: ReadonlyArray<{ id: string; name: string }>;
  /** Author of the message this one replies to, when it is a reply. */
  repliedToUserId: string | null;
  /** The replied-to message, to quote it for the model (replies only, not forwards). */
  replyReference: { channelId: string; messageId: string } | null;
  /** Where a forwarded message came from ("#general", "a direct message"); null when not forwarded. */
  forwardedFrom: string | null;
  /** Files attached to the message (or to the forwarded message). */
  attachments: readonly AttachmentFacts[];
  /** Names of the stickers sent with it (read as "[sticker: name]"). @defaultValue [] */
  stickers?: readonly string[];
  /** Its `gifv` embeds (a Tenor or GIPHY GIF: gifs.ts). @defaultValue [] */
  gifs?: readonly GifFacts[];
}

export interface InboundRules {
  botUserId: string;
  /** Channels answered without a mention; a thread inherits its parent's setting. */
  alwaysOnChannels: ReadonlySet<string>;
  /** Longer text is cut to this many characters (the adapter tells the user). */
  maxMessageChars: number;
}

/**
 * For thread messages `parentChatId` holds the parent channel: the ingress checks
 * ALLOWED_DISCORD_CHANNELS against it, since users create threads at will.
 */
export type DiscordInboundMessage = InboundMessage;

export type IgnoreReason = "own-message" | "bot-author" | "system-message" | "not-addressed" | "empty";

export interface InboundPlan {
  /** The message as far as the facts go: `text` is the rendered content, without files. */
  message: DiscordInboundMessage;
  /** Text files to download and read as part of the text, in order. */
  textFiles: readonly AttachmentFacts[];
  /** Attachments that will not be read, for the notice. */
  unreadable: readonly Unreadable[];
  /**
   * "yes", or "if-a-file-mentions-it": a guild message whose text Discord moved into a
   * `message.txt` (pastes over 2,000 characters) carries its mention inside the file.
   */
  addressed: "yes" | "if-a-file-mentions-it";
}

export interface Unreadable {
  name: string;
  reason: "unsupported" | "too-large" | "failed";
}

export type InboundDecision = { kind: "ignore"; reason: IgnoreReason } | { kind: "take"; plan: InboundPlan };

/** A text file as the adapter read it: its text, or why it could not. */
export type ReadFile = { name: string; text: string } | { name: string; failure: "too-large" | "failed" };

export type InboundOutcome =
  | { kind: "submit"; message: DiscordInboundMessage; /** The one notice to send once accepted, if any. */ notice?: string }
  | { kind: "notice"; notice: string }
  | { kind: "ignore"; reason: IgnoreReason };

/** The name Discord's client gives text it turned into a file (pastes over 2,000 characters). */
export const PASTE_FILE_NAME = "message.txt";

export function planInbound(facts: DiscordMessageFacts, rules: InboundRules, maxTextFileBytes: number): InboundDecision {
  if (facts.author.id === rules.botUserId) return { kind: "ignore", reason: "own-message" };
  if (facts.author.isBot) return { kind: "ignore", reason: "bot-author" };
  if (facts.author.isSystem || facts.isSystemMessage) return { kind: "ignore", reason: "system-message" };

  const textFiles = facts.attachments.filter((file) => isTextFile(file) && file.size <= maxTextFileBytes);
  // Pictures, audio and other documents go to the worker as references (src/media).
  // A GIF (a gifv embed) is read as its first frame, as on Telegram.
  const shownGifs = (facts.gifs ?? []).filter((gif) => gif.thumbnail !== null);
  const media = [...facts.attachments.filter((file) => !isTextFile(file)).map((file) => mediaAttachment(file, facts)), ...gifAttachments(shownGifs)];
  const unreadable: Unreadable[] = facts.attachments
    .filter((file) => isTextFile(file) && !textFiles.includes(file))
    .map((file) => ({ name: file.name, reason: "too-large" }));
  let addressed: InboundPlan["addressed"] = "yes";
  if (!facts.isDirectMessage && !isAddressed(facts, rules)) {
    if (facts.content.trim() !== "" || !textFiles.some((file) => file.name === PASTE_FILE_NAME)) return { kind: "ignore", reason: "not-addressed" };
    addressed = "if-a-file-mentions-it";
  }
  const message: DiscordInboundMessage = {
    platform: "discord",
    sessionKey: facts.isDirectMessage ? `dc:dm:${facts.author.id}` : `dc:${facts.channelId}`,
    messageId: facts.id,
    chatId: facts.channelId,
    userId: facts.author.id,
    userName: facts.memberNickname ?? facts.author.globalName ?? facts.author.username,
    chatType: facts.isDirectMessage ? "private" : "group",
    text: withStickers(withoutGifLinks(renderText(facts.content, facts, rules.botUserId), shownGifs), facts.stickers ?? []),
    sentAt: facts.createdTimestamp,
    ...(facts.threadParentId === null ? {} : { parentChatId: facts.threadParentId }),
    ...(facts.forwardedFrom === null ? {} : { forwardedFrom: facts.forwardedFrom }),
    ...(media.length > 0 ? { attachments: media } : {}),
  };
  // A bare mention with nothing attached: nothing to answer, and nothing worth a notice.
  if (message.text === "" && facts.attachments.length === 0 && media.length === 0) return { kind: "ignore", reason: "empty" };
  return { kind: "take", plan: { message, textFiles, unreadable, addressed } };
}

/**
 * The message with its files read and its reply context, cut to `maxMessageChars`; or one
 * notice when nothing could be read; or "not-addressed" when a paste did not mention the bot.
 */
export function completeInbound(
  plan: InboundPlan,
  files: readonly ReadFile[],
  replyTo: DiscordInboundMessage["replyTo"],
  facts: Pick<DiscordMessageFacts, "botRoleId" | "mentionedUsers">,
  rules: InboundRules,
): InboundOutcome {
  const read = files.filter((file): file is { name: string; text: string } => "text" in file);
  if (plan.addressed === "if-a-file-mentions-it" && !read.some((file) => file.name === PASTE_FILE_NAME && mentionsBotIn(file.text, rules.botUserId, facts.botRoleId))) {
    return { kind: "ignore", reason: "not-addressed" };
  }
  const unreadable = [...plan.unreadable, ...files.filter((file) => "failure" in file).map((file) => ({ name: file.name, reason: file.failure }))];
  const sections = [
    plan.message.text,
    // The paste is the user's own text; other files are marked where they start and end, as the
    // worker's media resolver marks a document (src/media/resolve.ts), so the model and the
    // summarizer (which fences them: src/context/summary-prompt.ts) tell the file's words from the user's.
    ...read.map((file) => {
      const text = renderText(file.text.replace(/^\uFEFF/, ""), facts, rules.botUserId);
      return file.name === PASTE_FILE_NAME ? text : `[file ${file.name}, its text:]\n${text}\n[end of ${file.name}]`;
    }),
  ].filter((section) => section.trim() !== "");
  if (sections.length === 0 && !plan.message.attachments?.length) return { kind: "notice", notice: nothingReadableNotice(unreadable) };

  const text = sections.join("\n\n");
  const truncated = truncate(text, rules.maxMessageChars);
  const message = { ...plan.message, text: truncated, ...(replyTo === undefined ? {} : { replyTo }) };
  const notes = [
    truncated.length < text.length ? `Your message was ${text.length} characters long; I only read the first ${truncated.length}.` : undefined,
    unreadable.length > 0 ? `I couldn't read ${describeUnreadable(unreadable)}.` : undefined,
  ].filter((note): note is string => note !== undefined);
  return notes.length === 0 ? { kind: "submit", message } : { kind: "submit", message, notice: notes.join(" ") };
}

/** What vision models take (OpenAI: PNG, JPEG, WEBP, non-animated GIF). */
const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/jpg", "image/webp", "image/gif"]);

/** A non-text file as a reference the worker fetches from the CDN (renewing the URL via the message if it expired). */
function mediaAttachment(file: AttachmentFacts, facts: Pick<DiscordMessageFacts, "id" | "channelId">): Attachment {
  const type = file.contentType?.toLowerCase().split(";")[0]?.trim();
  const kind = type !== undefined && IMAGE_TYPES.has(type) ? "image" : type?.startsWith("audio/") ? "audio" : "document";
  return {
    kind,
    label: kind === "image" ? "image" : kind === "audio" ? "audio file" : "file",
    source: { platform: "discord", url: file.url, channelId: facts.channelId, messageId: facts.id, attachmentId: file.id },
    name: file.name,
    size: file.size,
    ...(file.contentType ? { mimeType: file.contentType } : {}),
    ...(file.width && file.height ? { width: file.width, height: file.height } : {}),
    // Discord's voice messages are audio/ogg attachments named voice-message.ogg.
    ...(kind === "audio" && file.name === "voice-message.ogg" ? { voice: true, label: "voice message" } : {}),
    ...(kind === "image" ? { inline: true } : {}),
  };
}

/** `message.txt`, and any text/* file (code, notes, logs), read here; other files go to the worker. */
export function isTextFile(file: Pick<AttachmentFacts, "name" | "contentType">): boolean {
  return file.name === PASTE_FILE_NAME || (file.contentType?.toLowerCase().startsWith("text/") ?? false);
}

/** The replied-to message as the model sees it: its author and its text, trimmed. */
export function replyContextFrom(facts: DiscordMessageFacts, botUserId: string): NonNullable<DiscordInboundMessage["replyTo"]> {
  const text = renderText(facts.content, facts, botUserId) || facts.attachments.map((file) => `[file ${file.name}]`).join(" ");
  return {
    author: facts.memberNickname ?? facts.author.globalName ?? facts.author.username,
    text: truncate(text, REPLY_CONTEXT_MAX_CHARS, "…"),
    isBot: facts.author.id === botUserId,
  };
}

function nothingReadableNotice(unreadable: readonly Unreadable[]): string {
  if (unreadable.length === 0) return "I couldn't find any text in that message.";
  return `I couldn't read ${describeUnreadable(unreadable)}. Please send it as text.`;
}

function describeUnreadable(unreadable: readonly Unreadable[]): string {
  const why = { unsupported: "not a text file", "too-large": "too large", failed: "download failed" } as const;
  return unreadable.map((file) => `${file.name} (${why[file.reason]})`).join(", ");
}

function isAddressed(facts: DiscordMessageFacts, rules: InboundRules): boolean {
  return (
    facts.mentionsBot ||
    mentionsBotIn(facts.content, rules.botUserId, facts.botRoleId) ||
    facts.repliedToUserId === rules.botUserId ||
    rules.alwaysOnChannels.has(facts.channelId) ||
    (facts.threadParentId !== null && rules.alwaysOnChannels.has(facts.threadParentId))
  );
}

function mentionsBotIn(text: string, botUserId: string, botRoleId: string | null): boolean {
  for (const match of text.matchAll(/<@(!|&)?(\d+)>/g)) {
    if (match[1] === "&" ? match[2] === botRoleId : match[2] === botUserId) return true;
  }
  return false;
}

/** Drops the bot's own mention (user or role, and one following space) and names the other users. */
/** A sticker reads as its name (a sticker-only DM is not empty): "[sticker: Wave] thanks". */
function withStickers(text: string, stickers: readonly string[]): string {
  const named = stickers.map((name) => `[sticker: ${name}]`).join(" ");
  return named === "" ? text : text === "" ? named : `${named} ${text}`;
}

function renderText(text: string, facts: Pick<DiscordMessageFacts, "botRoleId" | "mentionedUsers">, botUserId: string): string {
  const names = new Map(facts.mentionedUsers.map((user) => [user.id, user.name]));
  return text
    .replace(/<@(!|&)?(\d+)> ?/g, (mention, kind: string | undefined, id: string) => {
      if (kind === "&") return id === facts.botRoleId ? "" : mention;
      if (id === botUserId) return "";
      const name = names.get(id);
      return name === undefined ? mention : `@${name}${mention.endsWith(" ") ? " " : ""}`;
    })
    .trim();
}

/** Cuts at a grapheme boundary (never inside an emoji or a flag), adding `ellipsis` when cut. */
export function truncate(text: string, maxChars: number, ellipsis = ""): string {
  if (text.length <= maxChars) return text;
  return text.slice(0, boundaryAtOrBefore(text, maxChars - ellipsis.length)).trimEnd() + ellipsis;
}
