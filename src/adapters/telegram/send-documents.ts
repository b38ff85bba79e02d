/**
 * The files of a reply (`OutboundReply.documents`): one sendDocument each, a multipart upload
 * through grammY's InputFile, after the reply's text. Each is one part of the reply, so a
 * resumed delivery skips the files that went out.
 */
import { InputFile, type Api } from "grammy";
import type { PartSent, ReplyDocument, ReplyTarget } from "../channel-adapter.js";
import { outcomeUnknown, toApiSignal, toTelegramError } from "./send-reply.js";

export interface SendDocumentsOptions {
  /** Part index of the first document (the reply's text parts come first). */
  firstPart: number;
  /** Parts below this index were delivered before and are skipped. */
  fromPart: number;
  onPartSent(partIndex: number, sent: PartSent): Promise<void>;
  signal?: AbortSignal;
}

export async function sendDocuments(api: Api, target: ReplyTarget, documents: readonly ReplyDocument[], options: SendDocumentsOptions): Promise<void> {
  const threadId = target.threadId === undefined ? undefined : Number(target.threadId);
  for (const [index, document] of documents.entries()) {
    const part = options.firstPart + index;
    if (part < options.fromPart) continue;
    let unconfirmed = false;
    try {
      await api.sendDocument(target.chatId, new InputFile(Buffer.from(document.base64, "base64"), document.filename), {
        ...(threadId === undefined || Number.isNaN(threadId) ? {} : { message_thread_id: threadId }),
      }, toApiSignal(options.signal));
    } catch (error) {
      // Sent, perhaps (the answer was lost): never sent again, as a text part (send-reply.ts).
      if (!outcomeUnknown(error)) throw toTelegramError(error);
      unconfirmed = true;
    }
    await options.onPartSent(part, { last: index === documents.length - 1, ...(unconfirmed ? { unconfirmed: true as const } : {}) });
  }
}
