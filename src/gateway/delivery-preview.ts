/**
 * The preview a final takes over (docs/streaming.md), apart from delivery.ts's claim-send-record
 * loop: the durable preview record read, waited on while a preview write is in flight, and a
 * status whose create lost its answer found again where the platform can.
 */
import type { ChannelAdapter, SendOptions } from "../adapters/channel-adapter.js";
import type { OutboundReply } from "../core/channel.js";
import type { Logger } from "../logger.js";
import type { PreviewRecords } from "../session/previews.js";
import { PREVIEW_REQUEST_MS } from "./preview-renderer.js";

export interface PreviewTakeContext {
  previews: PreviewRecords;
  log: Logger;
  /** DeliveryWorkerOptions.onPreviewTaken. */
  onPreviewTaken?: ((previewId: string) => void) | undefined;
}

/**
 * The preview a reply takes over, from the durable record: waits while a preview write is in
 * flight (at most PREVIEW_REQUEST_MS), so no interim edit lands over the final. `skip`: a
 * preview-only reply whose preview never appeared. No record (`previewRecorded` false: the
 * outbox script closed it): nothing to ask.
 */
export async function takePreview(context: PreviewTakeContext, reply: OutboundReply, fromPart: number, previewRecorded: boolean, adapter: ChannelAdapter): Promise<{ preview?: SendOptions["preview"]; skip: boolean }> {
  const { previews, log } = context;
  if (reply.preview === undefined || !adapter.previews) return { skip: reply.previewOnly === true };
  const previewId = reply.preview;
  if (fromPart === 1 && reply.previewOnly !== true) {
    // Resumed after part 1: the status it replaced is deleted after part 1's record, so a
    // crash between the two leaves it behind. The record still names it (the final took it):
    // the adapter deletes it again. Only a resumed delivery pays this round trip.
    const taken = await previews.take(reply.sessionKey, previewId);
    if (taken.status !== "edit") return { skip: false };
    return { skip: false, preview: { messageId: taken.messageId, only: false, onRefused: () => previews.refused(reply.sessionKey, previewId) } };
  }
  if (fromPart > 0) return { skip: reply.previewOnly === true };
  if (!previewRecorded) {
    context.onPreviewTaken?.(previewId);
    return { skip: reply.previewOnly === true };
  }
  const taken = await previews.takeWhenFree(reply.sessionKey, previewId);
  context.onPreviewTaken?.(previewId);
  let messageId = taken.status === "edit" ? taken.messageId : undefined;
  if (taken.status === "lost") {
    // A preview create lost its answer: the platform may show a status message nobody
    // knows. Where the platform can find it again (Discord's nonce), the final takes it
    // over like any preview (and so deletes it); elsewhere (Telegram) the renderer deletes
    // it if its answer still comes, late; one never answered stays (docs/streaming.md).
    const recover = adapter.previews.recover;
    if (recover) {
      messageId = await recover.call(adapter.previews, reply.target, previewId, AbortSignal.timeout(PREVIEW_REQUEST_MS)).catch((error: unknown) => {
        log.warn({ sessionKey: reply.sessionKey, chatId: reply.target.chatId, previewId, err: error }, "preview-orphan-not-recovered");
        return undefined;
      });
    } else log.info({ sessionKey: reply.sessionKey, chatId: reply.target.chatId, previewId }, "preview-orphan-unrecoverable");
  }
  if (messageId === undefined) return { skip: reply.previewOnly === true };
  return {
    skip: false,
    preview: { messageId, only: reply.previewOnly === true, onRefused: () => previews.refused(reply.sessionKey, previewId) },
  };
}
