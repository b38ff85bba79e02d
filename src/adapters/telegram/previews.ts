/**
 * Live previews on Telegram (docs/streaming.md): one message, sent silently
 * (`disable_notification`) as a reply to the user's message and edited as the turn goes on, as
 * plain text (a half-written answer is not valid Markdown). The final answer is sent as a new,
 * notifying message and the preview deleted (`replaceFinal` in the adapter); a preview-only
 * reply (/stop) is edited into it (`editFinal`).
 *
 * Preview calls use their own Api without auto-retry: a 429 on a preview must back off the
 * previews (the renderer skips to the latest update later), not wait inside the call.
 *
 * A create that went out but is not answered by its deadline made a message on Telegram more
 * often than not (a loaded Bot API answers late, it does not drop the call), and Telegram gives
 * no way to find that message again: so its request is not dropped at the deadline but kept
 * up to LATE_ANSWER_MS, and the message id it brings is handed to the renderer (`late`), which
 * keeps it as the preview or deletes it. Only a create whose answer never comes (a reset) can
 * leave a status message behind.
 */
import { GrammyError, type Api, type Transformer } from "grammy";
import type { LateCreate, PreviewPort, ReplyTarget } from "../channel-adapter.js";
import { PermanentError, RetryableError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { chatRefuses, simplerForms } from "./fallback.js";
import { describeError, toApiSignal, toTelegramError } from "./send-reply.js";
import { TELEGRAM_MESSAGE_LIMIT } from "./split.js";

/** A preview longer than one message shows its beginning (the final's first part) and an ellipsis. */
export function clipPreview(text: string, limit = TELEGRAM_MESSAGE_LIMIT): string {
  if (text.length <= limit) return text;
  let cut = limit - 2;
  // Never split a surrogate pair.
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  return `${text.slice(0, cut)} …`;
}

const NOT_MODIFIED = /message is not modified/i;
/** The message can no longer take this edit: deleted, too old, not ours. */
const EDIT_REFUSED = /message to edit not found|message can't be edited|MESSAGE_ID_INVALID|message identifier is not specified/i;

/** How long a preview create's answer is still awaited after its deadline (grammY's own request timeout on the previews' Api). */
export const LATE_ANSWER_MS = 60_000;

/** Signals of preview calls whose request was handed on to the network (past the send budget). */
const wentOut = new WeakSet<object>();

/**
 * The previews' Api's innermost transformer (installed first): marks the call's signal once its
 * request leaves, so a create whose deadline came before that is known to have made nothing.
 */
export const markWentOut: Transformer = (previous, method, payload, signal) => {
  if (signal) wentOut.add(signal);
  return previous(method, payload, signal);
};

/** Telegram's limits: about 1 message/s per chat, 20/min in groups (edits count): leave room for the final. */
export function previewIntervalMs(target: ReplyTarget): number {
  return Number(target.chatId) < 0 ? 3_000 : 1_000;
}

export class TelegramPreviews implements PreviewPort {
  constructor(private readonly api: Api, private readonly logger: Logger) {}

  minIntervalMs(target: ReplyTarget): number {
    return previewIntervalMs(target);
  }

  async create(target: ReplyTarget, text: string, signal: AbortSignal, _previewId?: string, late?: LateCreate): Promise<string> {
    const threadId = target.threadId === undefined ? undefined : Number(target.threadId);
    const replyTo = target.replyToMessageId === undefined ? undefined : Number(target.replyToMessageId);
    const send = (callSignal: AbortSignal) => this.api.sendMessage(target.chatId, clipPreview(text), {
      ...(threadId === undefined || Number.isNaN(threadId) ? {} : { message_thread_id: threadId }),
      ...(replyTo === undefined || Number.isNaN(replyTo) ? {} : { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }),
      link_preview_options: { is_disabled: true },
      // A status never buzzes a phone: the answer that replaces it does.
      disable_notification: true,
    }, toApiSignal(callSignal)).then((sent) => String(sent.message_id));
    if (!late) {
      try {
        return await send(signal);
      } catch (error) {
        throw toPreviewError(error);
      }
    }
    // The request runs on past `signal` (to LATE_ANSWER_MS, or until the gateway closes); the
    // caller is answered at `signal` all the same.
    const drop = new AbortController();
    const callSignal = AbortSignal.any([drop.signal, late.signal, AbortSignal.timeout(LATE_ANSWER_MS)]);
    const sending = send(callSignal);
    let onDeadline: (() => void) | undefined;
    const deadline = new Promise<"deadline">((resolve) => {
      onDeadline = () => resolve("deadline");
      if (signal.aborted) resolve("deadline");
      else signal.addEventListener("abort", onDeadline, { once: true });
    });
    let outcome: string;
    try {
      outcome = await Promise.race([sending, deadline]);
    } catch (error) {
      throw toPreviewError(error);
    } finally {
      if (onDeadline) signal.removeEventListener("abort", onDeadline);
    }
    if (outcome !== "deadline") return outcome;
    if (!wentOut.has(callSignal)) {
      // Still waiting for the budget's answer: it never reached Telegram, and now never will.
      drop.abort();
      sending.catch(() => undefined);
      // A refusal with no wait (as the Discord adapter's RequestNotSent): freed, not `lost`.
      throw new RetryableError(`telegram sendMessage (preview in ${target.chatId}): not sent before its deadline`, { retryAfterMs: 0 });
    }
    sending.then(
      (messageId) => late.arrived(messageId),
      (error: unknown) => this.logger.debug({ chatId: target.chatId, err: describeError(error) }, "telegram preview create: no late answer either"),
    );
    throw new RetryableError(`telegram sendMessage (preview in ${target.chatId}): no answer before its deadline; its answer is still awaited`);
  }

  async edit(target: ReplyTarget, messageId: string, text: string, signal: AbortSignal): Promise<void> {
    try {
      await this.api.editMessageText(target.chatId, Number(messageId), clipPreview(text), { link_preview_options: { is_disabled: true } }, toApiSignal(signal));
    } catch (error) {
      if (error instanceof GrammyError && NOT_MODIFIED.test(error.description)) return;
      throw toPreviewError(error);
    }
  }

  async remove(target: ReplyTarget, messageId: string): Promise<void> {
    try {
      await this.api.deleteMessage(target.chatId, Number(messageId));
    } catch (error) {
      this.logger.debug({ err: describeError(error) }, "telegram preview not deleted");
    }
  }
}

function toPreviewError(error: unknown): Error {
  if (error instanceof GrammyError && error.error_code === 400 && EDIT_REFUSED.test(error.description)) {
    return new PermanentError(`telegram ${error.method}: ${error.error_code} ${error.description}`, { cause: error });
  }
  return toTelegramError(error);
}

/**
 * A preview-only reply's text (HTML) into the preview message. → false when Telegram refuses the
 * edit for good (deleted, 48 hours old, the chat refuses): the caller sends nothing (or the part
 * as a new message). "Not modified" is success (a resumed final whose edit had landed). Any other
 * 400 refuses the formatting: the simpler forms follow, as for a sent part (fallback.ts). Other
 * failures throw (the delivery retries).
 */
export async function editFinal(api: Api, target: ReplyTarget, messageId: string, html: string, extra: Record<string, unknown>, logger: Logger): Promise<boolean> {
  const common = { link_preview_options: { is_disabled: true }, ...extra };
  const forms = [{ text: html, html: true, form: "html" }, ...simplerForms(html)];
  for (const [at, form] of forms.entries()) {
    try {
      await api.editMessageText(target.chatId, Number(messageId), form.text, form.html ? { ...common, parse_mode: "HTML" } : common);
      return true;
    } catch (error) {
      if (!(error instanceof GrammyError) || error.error_code !== 400) throw toTelegramError(error);
      if (NOT_MODIFIED.test(error.description)) return true;
      if (EDIT_REFUSED.test(error.description) || chatRefuses(error.description) || at === forms.length - 1) {
        logger.info({ chatId: target.chatId, description: error.description }, "telegram preview not editable");
        return false;
      }
      logger.warn({ chatId: target.chatId, description: error.description, form: forms[at + 1]?.form }, "telegram refused the formatted edit; editing it simpler");
    }
  }
  return false;
}
