/**
 * Sends one reply: Markdown → HTML → parts → one awaited sendMessage per part, in order.
 * No lock is shared between chats: a 429 on one chat (auto-retry waits `retry_after` inside
 * that call) holds up only that chat's reply.
 */
import { GrammyError, HttpError, type Api } from "grammy";
import type { PartSent, ReplyTarget, RequestOutcome } from "../channel-adapter.js";
import { PermanentError, RetryableError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { htmlToPlainText, renderMarkdown } from "./render.js";
import { chatRefuses, simplerForms } from "./fallback.js";
import { carryingPart, outcomeUnknown, type WireListener } from "./on-wire.js";

export { outcomeUnknown };
import { DEFAULT_PART_LENGTH, splitHtml } from "./split.js";

/** grammY types its signal with the abort-controller polyfill; Node's own AbortSignal works at run time. */
export type ApiSignal = Parameters<Api["sendMessage"]>[3];
export const toApiSignal = (signal: AbortSignal | undefined) => signal as ApiSignal;

export interface SendReplyOptions {
  /** Parts below this index were delivered before (a resumed reply) and are skipped. @defaultValue 0 */
  fromPart?: number;
  /** Called after each part is delivered (or skipped as blank), before the next is sent; `last`: the text's last part. */
  onPartSent?: (partIndex: number, sent: PartSent) => Promise<void>;
  /** Longest part, in UTF-16 units after parsing. @defaultValue 4096 */
  maxPartLength?: number;
  /** Off: `link_preview_options: { is_disabled: true }` on every part. @defaultValue false */
  linkPreviews?: boolean;
  /**
   * Telegram answered that the chat was upgraded to a supergroup (400 with
   * `migrate_to_chat_id`). "continue": send this part and the rest to the new id; "stop": the
   * reply now belongs to the moved session, whose own delivery sends it (a RetryableError ends
   * this one). Without it, the reply follows the new id.
   */
  onChatMigrated?: (fromChatId: string, toChatId: string) => Promise<"continue" | "stop">;
  signal?: AbortSignal;
  logger: Logger;
  /** Extra options of the last part (an inline keyboard). */
  lastPart?: Record<string, unknown>;
  /** Told when a request carrying part `partIndex` is on the wire, and when it is answered (SendOptions.onPartRequest). */
  onPartRequest?: (partIndex: number, onWire: boolean, outcome?: RequestOutcome) => void;
}

export class ChatMovedError extends RetryableError {
  override readonly name = "ChatMovedError";
}

/** Renders and splits exactly as `sendReply` does; part indices are stable for a given text. */
export function replyParts(markdown: string, maxPartLength = DEFAULT_PART_LENGTH): string[] {
  return splitHtml(renderMarkdown(markdown), { maxLength: maxPartLength });
}

export async function sendReply(api: Api, target: ReplyTarget, markdown: string, options: SendReplyOptions): Promise<{ parts: number }> {
  const parts = replyParts(markdown, options.maxPartLength);
  let chatId = target.chatId;
  const threadId = target.threadId === undefined ? undefined : Number(target.threadId);
  const replyTo = target.replyToMessageId === undefined ? undefined : Number(target.replyToMessageId);

  for (let index = options.fromPart ?? 0; index < parts.length; index++) {
    const html = parts[index] ?? "";
    if (htmlToPlainText(html).trim() !== "") {
      const common = {
        ...(threadId === undefined || Number.isNaN(threadId) ? {} : { message_thread_id: threadId }),
        // The user may delete their message while the model thinks: still deliver the answer.
        ...(index === 0 && replyTo !== undefined && !Number.isNaN(replyTo)
          ? { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }
          : {}),
        ...(options.linkPreviews === true ? {} : { link_preview_options: { is_disabled: true } }),
        ...(index === parts.length - 1 ? options.lastPart : {}),
      };
      let unconfirmed = false;
      const onRequest = options.onPartRequest;
      const wire: WireListener | undefined = onRequest && ((onWire, outcome) => onRequest(index, onWire, outcome));
      try {
        try {
          await carryingPart(wire, () => api.sendMessage(chatId, html, { ...common, parse_mode: "HTML" }, toApiSignal(options.signal)));
        } catch (error) {
          const movedTo = migratedTo(error);
          if (movedTo === undefined) throw error;
          const decision = (await options.onChatMigrated?.(chatId, movedTo)) ?? "continue";
          options.logger.info({ fromChatId: chatId, toChatId: movedTo, decision }, "telegram group was upgraded to a supergroup; the reply follows the new id");
          if (decision === "stop") throw new ChatMovedError(`telegram chat ${chatId} moved to ${movedTo}; its session delivers this reply`, { retryAfterMs: 0 });
          chatId = movedTo;
          await carryingPart(wire, () => api.sendMessage(chatId, html, { ...common, parse_mode: "HTML" }, toApiSignal(options.signal)));
        }
      } catch (error) {
        if (error instanceof ChatMovedError) throw error;
        if (outcomeUnknown(error)) unconfirmed = true;
        else if (!refusesFormatting(error)) throw toTelegramError(error);
        // Telegram refused the formatted text: the reply is never lost, simpler forms follow.
        else unconfirmed = (await carryingPart(wire, () => sendSimpler(api, chatId, html, common, index, error.description, options))) === "unconfirmed";
        if (unconfirmed) options.logger.warn({ chatId, part: index, err: describeError(error) }, "telegram part's outcome unknown (sent, perhaps, answer lost); not sent again");
      }
      if (unconfirmed) {
        await options.onPartSent?.(index, { last: index === parts.length - 1, unconfirmed: true });
        continue;
      }
    }
    await options.onPartSent?.(index, { last: index === parts.length - 1 });
  }
  return { parts: parts.length };
}

/** A 400 about the text itself (its formatting), not about the chat. */
function refusesFormatting(error: unknown): error is GrammyError {
  return error instanceof GrammyError && error.error_code === 400 && error.parameters.migrate_to_chat_id === undefined && !chatRefuses(error.description);
}

/**
 * Sends a refused part in its simpler forms, one after another, until one is accepted.
 * "unconfirmed": a form's outcome is unknown (see `outcomeUnknown`), so no further form is
 * tried. "given-up": Telegram refused even the plain text with a 400 that is not about the
 * chat (text it will not take at all): that part alone is given up, with one error line, and
 * the reply goes on with its next part — only a chat that refuses ends a reply.
 */
async function sendSimpler(api: Api, chatId: string, html: string, common: Record<string, unknown>, part: number, description: string, options: SendReplyOptions): Promise<"sent" | "unconfirmed" | "given-up"> {
  const forms = simplerForms(html);
  for (const [at, form] of forms.entries()) {
    options.logger.warn({ chatId, part, description, form: form.form }, "telegram refused the formatted text; sending it simpler");
    try {
      await api.sendMessage(chatId, form.text, form.html ? { ...common, parse_mode: "HTML" } : common, toApiSignal(options.signal));
      return "sent";
    } catch (error) {
      if (outcomeUnknown(error)) return "unconfirmed";
      if (!refusesFormatting(error)) throw toTelegramError(error);
      description = error.description;
      if (at === forms.length - 1) {
        options.logger.error({ chatId, part, description }, "telegram refused every form of a part, plain text included; the part is given up, the reply goes on");
        return "given-up";
      }
    }
  }
  return "sent";
}

/** The new chat id when Telegram says the group became a supergroup. */
export function migratedTo(error: unknown): string | undefined {
  if (!(error instanceof GrammyError) || error.error_code !== 400) return undefined;
  const id = error.parameters.migrate_to_chat_id;
  return id === undefined ? undefined : String(id);
}

/**
 * Names a failed Bot API call for what the caller must do: retry later, or give up. The grammY
 * error goes along as `cause` only: pino logs a cause's message and stack, never its fields,
 * and those fields hold the payload (a webhook secret) or the fetch error (whose message
 * quotes the URL, token included).
 */
export function toTelegramError(error: unknown): Error {
  if (error instanceof GrammyError) {
    // A server that is not quite Telegram's may answer without the Bot API's fields.
    const message = typeof error.error_code === "number"
      ? `telegram ${error.method}: ${error.error_code} ${error.description}`
      : `telegram ${error.method}: the Bot API server answered without an error code or description (not a Bot API answer)`;
    const retryAfter = error.parameters.retry_after;
    if (error.error_code === 429 || error.error_code >= 500) {
      return new RetryableError(message, { cause: error, ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter * 1000 }) });
    }
    return new PermanentError(message, { cause: error });
  }
  if (error instanceof HttpError) return new RetryableError(error.message, { cause: error });
  return error instanceof Error ? error : new Error(String(error));
}

/** What a log line may say about an error: never the inner fetch error (its message quotes the URL, token included). */
export function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof GrammyError) return { name: error.name, method: error.method, code: error.error_code, description: error.description };
  if (error instanceof HttpError) return { name: error.name, message: error.message };
  if (error instanceof RetryableError || error instanceof PermanentError) return { name: error.name, message: error.message };
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { message: String(error) };
}
