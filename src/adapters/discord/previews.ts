/**
 * Live previews on Discord (docs/streaming.md): one message, a silent reply to the user's
 * message (SUPPRESS_NOTIFICATIONS, no ping), edited as the turn goes on; the final answer is
 * sent as new messages (they notify) and the preview deleted, a preview-only reply (/stop) is
 * edited into it. Preview requests
 * go through discord.js' REST with an abort signal, so a preview that would wait behind a rate
 * limit is dropped when its time is up (the renderer shows the latest update later) instead of
 * queueing; @discordjs/rest keeps the channel's buckets, which the final's sends share.
 */
import { DiscordAPIError, MessageFlags, Routes, type Client, type SendableChannels } from "discord.js";
import type { OutboundReply, PreviewPort, ReplyTarget } from "../channel-adapter.js";
import { PermanentError, RetryableError, errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { NO_MENTIONS, partNonce, toSendError } from "./send-reply.js";
import { RequestNotSent, traceSends, type SendTrace } from "./request-outcome.js";
import { withSendPriority } from "../send-priority.js";

/** Discord's limit is 2,000 characters (code points); a longer preview shows its beginning. */
export function clipDiscordPreview(text: string, limit = 2_000): string {
  const points = [...text];
  return points.length <= limit ? text : `${points.slice(0, limit - 2).join("")} …`;
}

/** Unknown Message, or a message the bot may not edit: the preview is gone for good. */
const GONE_CODES = new Set([10008, 50005]);

/** 5 messages per 5 s per channel, shared with the final: previews take at most one in 1.5 s. */
export const DISCORD_PREVIEW_INTERVAL_MS = 1_500;

export class DiscordPreviews implements PreviewPort {
  constructor(private readonly client: Client, private readonly logger: Logger) {}

  minIntervalMs(): number {
    return DISCORD_PREVIEW_INTERVAL_MS;
  }

  async create(target: ReplyTarget, text: string, signal: AbortSignal, previewId?: string): Promise<string> {
    const replyTo = target.replyToMessageId;
    const trace: SendTrace = { sent: false };
    try {
      const created = (await traceSends(trace, () => withSendPriority("preview", () => this.client.rest.post(Routes.channelMessages(target.chatId), {
        body: {
          content: clipDiscordPreview(text),
          // A status never notifies (no ping, @silent): the answer that replaces it does.
          allowed_mentions: { parse: [], replied_user: false },
          flags: MessageFlags.SuppressNotifications,
          // A create retried after a lost answer returns the message it already made.
          ...(previewId === undefined ? {} : { nonce: partNonce(`preview:${previewId}`, 0), enforce_nonce: true }),
          ...(replyTo === undefined ? {} : { message_reference: { message_id: replyTo, fail_if_not_exists: false } }),
        },
        signal,
      })))) as { id: string };
      return created.id;
    } catch (error) {
      // Aborted before it left (its time ran out behind a busy channel in discord.js's queue): no
      // message can exist, so the renderer frees the preview instead of recording the create as
      // one whose answer was lost (which the final would then have to recover).
      if (!trace.sent && !(error instanceof RetryableError || error instanceof PermanentError)) {
        throw new RequestNotSent(`preview in channel ${target.chatId}: not sent (${errorMessage(error)})`, { cause: error });
      }
      // discord.js sends a request aborted on the way again, and that second try, its caller
      // gone, is not sent (RequestNotSent): but the first went out and was never answered, so
      // Discord may have made the message. Not a refusal: the record keeps it `lost`, and the
      // next create or the final finds it by its nonce instead of leaving it beside the final.
      if (error instanceof RequestNotSent && (trace.unanswered ?? 0) > 0) {
        throw new RetryableError(`preview in channel ${target.chatId}: sent, no answer before its deadline`, { cause: error });
      }
      throw toPreviewError(error, `preview in channel ${target.chatId}`);
    }
  }

  /** The create with the same nonce returns the message a lost create made (Discord keeps nonces for a few minutes). */
  recover(target: ReplyTarget, previewId: string, signal: AbortSignal): Promise<string> {
    return this.create(target, "⏳", signal, previewId);
  }

  async edit(target: ReplyTarget, messageId: string, text: string, signal: AbortSignal): Promise<void> {
    try {
      await withSendPriority("preview", () => this.client.rest.patch(Routes.channelMessage(target.chatId, messageId), {
        body: { content: clipDiscordPreview(text), allowed_mentions: { parse: [] } },
        signal,
      }));
    } catch (error) {
      throw toPreviewError(error, `edit preview ${messageId}`);
    }
  }

  async remove(target: ReplyTarget, messageId: string): Promise<void> {
    await this.client.rest.delete(Routes.channelMessage(target.chatId, messageId)).catch((error: unknown) =>
      this.logger.debug({ error: String(error) }, "discord preview not deleted"));
  }
}

/** Deletes a replaced preview; one already gone is fine, any other refusal is logged (the answer is out). */
export async function removeReplaced(client: Client, channelId: string, messageId: string, logger: Logger): Promise<void> {
  try {
    await client.rest.delete(Routes.channelMessage(channelId, messageId));
  } catch (error) {
    if (error instanceof DiscordAPIError && error.code === 10008) return;
    logger.info({ channelId, messageId, error: String(error) }, "discord preview not deleted after its final was sent");
  }
}

function toPreviewError(error: unknown, action: string): Error {
  if (error instanceof DiscordAPIError && typeof error.code === "number" && GONE_CODES.has(error.code)) {
    return new PermanentError(`${action}: Discord answered ${error.status} code ${error.code}`, { cause: error });
  }
  return toSendError(error, action);
}

/**
 * The final's first part into the preview message. → false when Discord refuses the edit for
 * good (deleted): the caller sends the part as a new message. Other failures throw.
 */
export async function editFinal(channel: SendableChannels, reply: OutboundReply, messageId: string, content: string, extra: { components?: readonly unknown[] }): Promise<boolean> {
  if (!("messages" in channel)) return false;
  try {
    await channel.messages.edit(messageId, { content, allowedMentions: NO_MENTIONS, ...(extra.components ? { components: extra.components as never } : {}) });
    return true;
  } catch (error) {
    if (error instanceof DiscordAPIError && typeof error.code === "number" && GONE_CODES.has(error.code)) return false;
    throw toSendError(error, `edit the preview of ${reply.replyId}`);
  }
}
