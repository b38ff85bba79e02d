/**
 * The files of a reply (`OutboundReply.documents`): one sendDocument each, a multipart upload
 * through grammY's InputFile, after the reply's text. Each is one part of the reply, so a
 * resumed delivery skips the files that went out. A file Telegram refuses with a 400 or 413 that is
 * not about the chat (an empty file, a name it will not take, over 50 MB) is given up alone, with one error line,
 * and the reply goes on with its next file: only a chat that refuses ends a reply (fallback.ts).
 */
import { GrammyError, InputFile, type Api } from "grammy";
import type { PartSent, ReplyDocument, ReplyTarget, RequestOutcome } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { chatRefuses } from "./fallback.js";
import { carryingPart } from "./on-wire.js";
import { outcomeUnknown, toApiSignal, toTelegramError } from "./send-reply.js";

export interface SendDocumentsOptions {
  /** Part index of the first document (the reply's text parts come first). */
  firstPart: number;
  /** Parts below this index were delivered before and are skipped. */
  fromPart: number;
  onPartSent(partIndex: number, sent: PartSent): Promise<void>;
  signal?: AbortSignal;
  logger: Logger;
  /** Told when the upload of part `partIndex` is on the wire (SendOptions.onPartRequest), as a text part. */
  onPartRequest?: (partIndex: number, onWire: boolean, outcome?: RequestOutcome) => void;
}

export async function sendDocuments(api: Api, target: ReplyTarget, documents: readonly ReplyDocument[], options: SendDocumentsOptions): Promise<void> {
  const threadId = target.threadId === undefined ? undefined : Number(target.threadId);
  for (const [index, document] of documents.entries()) {
    const part = options.firstPart + index;
    if (part < options.fromPart) continue;
    let unconfirmed = false;
    try {
      const onRequest = options.onPartRequest;
      await carryingPart(onRequest && ((onWire, outcome) => onRequest(part, onWire, outcome)), () =>
        api.sendDocument(target.chatId, new InputFile(Buffer.from(document.base64, "base64"), document.filename), {
          ...(threadId === undefined || Number.isNaN(threadId) ? {} : { message_thread_id: threadId }),
        }, toApiSignal(options.signal)));
    } catch (error) {
      if (error instanceof GrammyError && (error.error_code === 400 || error.error_code === 413) && error.parameters.migrate_to_chat_id === undefined && !chatRefuses(error.description)) {
        options.logger.error({ chatId: target.chatId, part, file: document.filename, description: error.description }, "telegram refused a file of the reply; the file is given up, the reply goes on");
        await options.onPartSent(part, { last: index === documents.length - 1 });
        continue;
      }
      // Sent, perhaps (the answer was lost): never sent again, as a text part (send-reply.ts).
      if (!outcomeUnknown(error)) throw toTelegramError(error);
      unconfirmed = true;
    }
    await options.onPartSent(part, { last: index === documents.length - 1, ...(unconfirmed ? { unconfirmed: true as const } : {}) });
  }
}
