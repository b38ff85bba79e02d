/**
 * Buttons on Telegram: approval requests go out with an inline keyboard; a press arrives as a
 * callback_query, becomes an InboundMessage with `action` for the ingress, and is answered
 * (answerCallbackQuery) so the client stops its spinner; the outcome later replaces the
 * request in place (editMessageText, keyboard removed).
 */
import { GrammyError, type Api } from "grammy";
import type { CallbackQuery, InlineKeyboardMarkup } from "grammy/types";
import type { InboundMessage, OutboundReply, ReplyAction } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { renderMarkdown } from "./render.js";
import { describeError, toTelegramError } from "./send-reply.js";
import { DEFAULT_PART_LENGTH } from "./split.js";

/** One row of buttons; callback_data is the action id (≤ 64 bytes, Telegram's limit). */
export function inlineKeyboard(actions: readonly ReplyAction[]): InlineKeyboardMarkup {
  return { inline_keyboard: [actions.map((action) => ({ text: action.label, callback_data: action.id }))] };
}

/**
 * A press on one of our buttons, as a message for the ingress; undefined for a query we cannot
 * place (no message: an inline-mode press, or a message too old for Telegram to include).
 */
export function toInboundAction(query: CallbackQuery): InboundMessage | undefined {
  const message = query.message;
  if (!message || query.data === undefined || query.from.is_bot) return undefined;
  const chat = message.chat;
  if (chat.type !== "private" && chat.type !== "group" && chat.type !== "supergroup") return undefined;
  const chatId = String(chat.id);
  const isTopic = "is_topic_message" in message && message.is_topic_message === true && message.message_thread_id !== undefined;
  const threadId = isTopic ? String(message.message_thread_id) : undefined;
  const name = [query.from.first_name, query.from.last_name].filter(Boolean).join(" ");
  return {
    platform: "telegram",
    sessionKey: threadId === undefined ? `tg:${chatId}` : `tg:${chatId}:${threadId}`,
    // Callback query ids are unique: a re-delivered update is a duplicate at the ingress.
    messageId: `cb:${query.id}`,
    chatId,
    ...(threadId === undefined ? {} : { threadId }),
    userId: String(query.from.id),
    userName: name || query.from.username || String(query.from.id),
    chatType: chat.type === "private" ? "private" : "group",
    text: query.data,
    sentAt: Date.now(),
    action: { id: query.data, sourceMessageId: String(message.message_id) },
  };
}

/** Telegram shows at most 200 characters in a callback query's answer. */
const ALERT_MAX_CHARS = 200;

/** `text` as an alert can show it (cut with an ellipsis past 200 characters). */
export function alertText(text: string): string {
  const characters = [...text];
  return characters.length > ALERT_MAX_CHARS ? `${characters.slice(0, ALERT_MAX_CHARS - 1).join("")}…` : text;
}

/**
 * Stops the client's spinner; the toast says whether the press was taken, or an alert (shown
 * to the presser alone) says why it was refused.
 */
export async function answerPress(api: Api, query: CallbackQuery, answer: boolean | { alert: string }, logger: Logger): Promise<void> {
  const options = answer === true ? {} : answer === false ? { text: "That didn't go through; please try again." } : { text: alertText(answer.alert), show_alert: true };
  await api.answerCallbackQuery(query.id, options).catch((error: unknown) => {
    logger.debug({ err: describeError(error) }, "answerCallbackQuery failed");
  });
}

/**
 * Replaces the message `reply.replaces` in place (its keyboard goes). → false when it cannot
 * (too long for one message, deleted, too old): the caller sends the reply as a new message.
 */
export async function replaceMessage(api: Api, reply: OutboundReply, logger: Logger): Promise<boolean> {
  const html = renderMarkdown(reply.text);
  const messageId = Number(reply.replaces);
  if (reply.replaces === undefined || Number.isNaN(messageId) || html.length > DEFAULT_PART_LENGTH) return false;
  try {
    await api.editMessageText(reply.target.chatId, messageId, html, { parse_mode: "HTML", reply_markup: { inline_keyboard: [] } });
    return true;
  } catch (error) {
    if (error instanceof GrammyError && error.error_code === 400) {
      if (/message is not modified/i.test(error.description)) return true;
      logger.info({ chatId: reply.target.chatId, description: error.description }, "telegram message not edited; sending the reply anew");
      return false;
    }
    throw toTelegramError(error);
  }
}
