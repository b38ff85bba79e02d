/**
 * The files of a reply (`OutboundReply.documents`): one message with one attachment each (a
 * multipart upload), after the reply's text. Each is one part of the reply, with a nonce of its
 * own, so a resumed or retried delivery neither skips nor repeats a file.
 */
import type { SendableChannels } from "discord.js";
import type { PartSent, ReplyDocument } from "../channel-adapter.js";
import { NO_MENTIONS, partNonce, toSendError } from "./send-reply.js";

export interface SendDocumentsOptions {
  /** Part index of the first document (the reply's text parts come first). */
  firstPart: number;
  /** Parts below this index were delivered before and are skipped. */
  fromPart: number;
  onPartSent(partIndex: number, sent: PartSent): Promise<void>;
  /** Stable id of the reply: seeds each part's nonce. */
  nonceKey: string;
  /** Told before the request carrying part `partIndex` (with its nonce) goes out (SendOptions.onNoncedPart). */
  onNoncedPart?: ((partIndex: number) => void) | undefined;
}

export async function sendDocuments(channel: SendableChannels, documents: readonly ReplyDocument[], options: SendDocumentsOptions): Promise<void> {
  for (const [index, document] of documents.entries()) {
    const part = options.firstPart + index;
    if (part < options.fromPart) continue;
    options.onNoncedPart?.(part);
    try {
      await channel.send({
        files: [{ attachment: Buffer.from(document.base64, "base64"), name: document.filename, contentType: document.mime }],
        allowedMentions: NO_MENTIONS,
        nonce: partNonce(options.nonceKey, part),
        enforceNonce: true,
      });
    } catch (error) {
      throw toSendError(error, `send file ${document.filename} to channel ${channel.id}`);
    }
    await options.onPartSent(part, { last: index === documents.length - 1 });
  }
}
