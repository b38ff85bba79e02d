/**
 * What a Telegram message replies to or was forwarded from, for the model (issue #12 item 9):
 * "@bot is this right?" sent as a reply to Bob's message means nothing without Bob's text.
 * Pure; the shapes are the Bot API's (reply_to_message, quote, external_reply, forward_origin).
 */
import type { Message, MessageOrigin } from "grammy/types";
import { REPLY_CONTEXT_MAX_CHARS, type InboundMessage } from "../channel-adapter.js";

/** Message fields that carry content we cannot read yet, with how a user would name them. */
export const MEDIA: ReadonlyArray<[keyof Message, string]> = [
  ["photo", "photo"],
  ["video", "video"],
  ["animation", "GIF"],
  ["video_note", "video message"],
  ["voice", "voice message"],
  ["audio", "audio file"],
  ["document", "file"],
  ["sticker", "sticker"],
  ["location", "location"],
  ["venue", "location"],
  ["contact", "contact"],
  ["poll", "poll"],
  ["dice", "dice"],
  ["story", "story"],
  ["paid_media", "paid media"],
  ["game", "game"],
];

export const mediaLabelOf = (message: Partial<Message>): string | undefined => MEDIA.find(([field]) => message[field] !== undefined)?.[1];

/** The speaker's display name: anonymous admins and linked channels speak as their chat. */
export function speakerOf(message: Pick<Message, "from" | "sender_chat">): { id: string; name: string; isBot: boolean } | undefined {
  const senderChat = message.sender_chat;
  if (senderChat) return { id: String(senderChat.id), name: ("title" in senderChat && senderChat.title) || `chat ${senderChat.id}`, isBot: false };
  const from = message.from;
  if (!from || typeof from.id !== "number") return undefined;
  const name = [from.first_name, from.last_name].filter((part) => part).join(" ") || from.username || `user ${from.id}`;
  return { id: String(from.id), name, isBot: from.is_bot === true };
}

function originName(origin: MessageOrigin): string {
  switch (origin.type) {
    case "user":
      return speakerOf({ from: origin.sender_user })?.name ?? "someone";
    case "hidden_user":
      return origin.sender_user_name;
    case "chat":
      return [origin.sender_chat.title ?? `chat ${origin.sender_chat.id}`, origin.author_signature].filter(Boolean).join(" — ");
    case "channel":
      return [origin.chat.title ?? `channel ${origin.chat.id}`, origin.author_signature].filter(Boolean).join(" — ");
    default:
      return "someone";
  }
}

function trimmed(text: string): string {
  const clean = text.trim();
  if (clean.length <= REPLY_CONTEXT_MAX_CHARS) return clean;
  // Never leave half of a surrogate pair before the ellipsis.
  let cut = REPLY_CONTEXT_MAX_CHARS - 1;
  const last = clean.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut--;
  return `${clean.slice(0, cut)}…`;
}

/**
 * The replied-to message: its text or caption (or what it was, for media) and author, and the
 * part the user quoted. In forum topics every message "replies" to the topic's root service
 * message; that is not context. A reply to a message of another chat (external_reply) names its
 * origin; Telegram sends only the quoted part of its text.
 */
export function replyContextOf(message: Message, botId: number): InboundMessage["replyTo"] {
  const quote = message.quote?.text;
  const reply = message.reply_to_message;
  const topicRoot = reply !== undefined && (reply.forum_topic_created !== undefined || (message.is_topic_message === true && reply.message_id === message.message_thread_id));
  if (reply && !topicRoot) {
    const author = speakerOf(reply);
    const label = mediaLabelOf(reply);
    const body = reply.text ?? reply.caption ?? "";
    const text = label === undefined ? body : `[${label}]${body ? ` ${body}` : ""}`;
    if (text.trim() === "" && !quote) return undefined;
    return {
      author: reply.from?.id === botId ? "you (the assistant)" : (author?.name ?? "someone"),
      text: trimmed(text),
      ...(quote ? { quote: trimmed(quote) } : {}),
      ...(author?.isBot ? { isBot: true } : {}),
    };
  }
  const external = message.external_reply;
  if (external) {
    const label = mediaLabelOf(external as Partial<Message>);
    const text = quote ?? (label === undefined ? "" : `[${label}]`);
    return {
      author: originName(external.origin),
      text: trimmed(text),
      ...(quote ? { quote: trimmed(quote) } : {}),
    };
  }
  return undefined;
}

export function forwardedFromOf(message: Message): string | undefined {
  return message.forward_origin ? originName(message.forward_origin) : undefined;
}
