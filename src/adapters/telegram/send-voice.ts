/**
 * A voice reply (`OutboundReply.voice`, docs/media.md): the voice note first (sendVoice, the Ogg/Opus
 * upload Telegram plays as a voice message), then — when the text is to be seen — the text: as
 * the voice note's caption when it fits Telegram's 1,024 characters after parsing, else as the
 * reply's own text parts after the voice. Part 0 is the voice; the text's parts are 1…n.
 * A user whose privacy settings forbid voice notes (400 VOICE_MESSAGES_FORBIDDEN), a group
 * upgraded meanwhile, or a caption Telegram will not take: the text goes in the voice's place,
 * never lost. A send whose outcome is unknown counts as sent, as for text (send-reply.ts).
 */
import { GrammyError, InputFile, type Api } from "grammy";
import type { OutboundReply, PartSent, ReplyVoice } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { chatRefuses } from "./fallback.js";
import { carryingPart } from "./on-wire.js";
import { describeError, migratedTo, outcomeUnknown, replyParts, toApiSignal, toTelegramError } from "./send-reply.js";

/** Telegram's caption limit, in UTF-16 units after entity parsing. */
export const CAPTION_LIMIT = 1024;

type OnPartSent = (partIndex: number, sent: PartSent) => Promise<void>;

export interface SendVoiceOptions {
  fromPart: number;
  onPartSent: OnPartSent;
  logger: Logger;
  signal?: AbortSignal;
  /** Told when the voice note (part 0) is on the wire (SendOptions.onPartRequest), as a text part. */
  onPartRequest?: (partIndex: number, onWire: boolean) => void;
  /** Sends the reply's text from its part `fromPart` on (the adapter's own text path, with chat moves and buttons). */
  sendText(fromPart: number, onPartSent: OnPartSent): Promise<void>;
}

/** The caption that carries the whole text (HTML), when the text is shown and fits one. */
export function voiceCaption(reply: OutboundReply): string | undefined {
  if (!reply.voice?.withText || reply.actions?.length) return undefined;
  const parts = replyParts(reply.text, CAPTION_LIMIT);
  return parts.length === 1 ? parts[0] : undefined;
}

export async function sendVoiceReply(api: Api, reply: OutboundReply & { voice: ReplyVoice }, options: SendVoiceOptions): Promise<void> {
  const caption = voiceCaption(reply);
  const textAfter = reply.voice.withText && caption === undefined;
  if (options.fromPart === 0) {
    const outcome = await sendVoiceNote(api, reply, caption, options);
    if (outcome === "refused") {
      // Nothing of the voice reached the chat: the text takes its place when it would not follow anyway.
      if (!textAfter) await options.sendText(0, () => Promise.resolve());
    }
    await options.onPartSent(0, { last: !textAfter, ...(outcome === "unconfirmed" ? { unconfirmed: true as const } : {}) });
  }
  if (textAfter) await options.sendText(Math.max(0, options.fromPart - 1), (index, sent) => options.onPartSent(index + 1, sent));
}

async function sendVoiceNote(api: Api, reply: OutboundReply & { voice: ReplyVoice }, caption: string | undefined, options: SendVoiceOptions): Promise<"sent" | "unconfirmed" | "refused"> {
  const { target } = reply;
  const threadId = target.threadId === undefined ? undefined : Number(target.threadId);
  const replyTo = target.replyToMessageId === undefined ? undefined : Number(target.replyToMessageId);
  const common = {
    duration: Math.max(1, Math.round(reply.voice.durationS)),
    ...(threadId === undefined || Number.isNaN(threadId) ? {} : { message_thread_id: threadId }),
    ...(replyTo === undefined || Number.isNaN(replyTo) ? {} : { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } }),
  };
  const onRequest = options.onPartRequest;
  const send = (withCaption: Record<string, unknown>) => carryingPart(onRequest && ((onWire) => onRequest(0, onWire)), () =>
    api.sendVoice(target.chatId, new InputFile(Buffer.from(reply.voice.base64, "base64"), "voice.ogg"), { ...common, ...withCaption }, toApiSignal(options.signal)));
  try {
    await send(caption === undefined ? {} : { caption, parse_mode: "HTML" });
    return "sent";
  } catch (error) {
    if (outcomeUnknown(error)) {
      options.logger.warn({ chatId: target.chatId, err: describeError(error) }, "telegram voice note's outcome unknown (sent, perhaps, answer lost); not sent again");
      return "unconfirmed";
    }
    if (!(error instanceof GrammyError) || error.error_code !== 400) throw toTelegramError(error);
    if (migratedTo(error) !== undefined || /VOICE_MESSAGES_FORBIDDEN/i.test(error.description)) {
      options.logger.info({ chatId: target.chatId, err: describeError(error) }, "telegram refused the voice note; the text goes in its place");
      return "refused";
    }
    if (chatRefuses(error.description)) throw toTelegramError(error);
    // A caption Telegram will not parse (or any other 400 about this message): the text goes on its own.
    options.logger.warn({ chatId: target.chatId, err: describeError(error) }, "telegram refused the voice note as sent; the text goes in its place");
    return "refused";
  }
}
