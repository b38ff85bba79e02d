/**
 * A voice reply (`OutboundReply.voice`, docs/media.md): the voice note first (sendVoice, the Ogg/Opus
 * upload Telegram plays as a voice message), then — when the text is to be seen — the text: as
 * the voice note's caption when it fits Telegram's 1,024 characters after parsing, else as the
 * reply's own text parts after the voice. Part 0 is the voice; the text's parts are 1…n.
 * A user whose privacy settings forbid voice notes (400 VOICE_MESSAGES_FORBIDDEN), a group
 * upgraded meanwhile, or a caption Telegram will not take: the text goes in the voice's place,
 * never lost — after the voice as usual when it was to follow it, else as parts 2…n+1. A send whose outcome is unknown counts as sent, as for text (send-reply.ts).
 */
import { GrammyError, InputFile, type Api } from "grammy";
import type { OutboundReply, PartSent, ReplyVoice, RequestOutcome } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { chatRefuses } from "./fallback.js";
import { carryingPart } from "./on-wire.js";
import { describeError, migratedTo, outcomeUnknown, replyParts, toApiSignal, toTelegramError } from "./send-reply.js";

/** The reply's part of the text's first part when the text follows the voice note (part 0). */
const TEXT_OFFSET = 1;

/**
 * The reply's part of the text's first part when the text goes in a refused voice note's place
 * (a reply whose text would not follow the voice). Not 1: a delivery resumed at part 1 follows a
 * voice note recorded as sent (its answer lost at a shutdown, say), after which nothing is left.
 */
const IN_PLACE_OFFSET = 2;

/** Telegram's caption limit, in UTF-16 units after entity parsing. */
export const CAPTION_LIMIT = 1024;

/** How a part's progress is reported (SendOptions): sent, and on the wire. */
export interface PartReports {
  onPartSent(partIndex: number, sent: PartSent): Promise<void>;
  onPartRequest?: ((partIndex: number, onWire: boolean, outcome?: RequestOutcome) => void) | undefined;
}

export interface SendVoiceOptions extends PartReports {
  fromPart: number;
  logger: Logger;
  signal?: AbortSignal;
  /**
   * Sends the reply's text from its text part `fromPart` on (the adapter's own text path, with
   * chat moves and buttons), reporting each text part to `reports` by its index in the text.
   */
  sendText(fromPart: number, reports: PartReports): Promise<void>;
}

/**
 * The text's part `index` as the reply's part `index + offset`, for both reports: what is
 * recorded as sent and what is recorded as on the wire at a shutdown must name the same part,
 * or a shutdown records the part before the one on the wire and the next gateway sends it again.
 */
function shifted(reports: PartReports, offset: number): PartReports {
  const { onPartRequest } = reports;
  return {
    onPartSent: (index, sent) => reports.onPartSent(index + offset, sent),
    ...(onPartRequest ? { onPartRequest: (index: number, onWire: boolean, outcome?: RequestOutcome) => onPartRequest(index + offset, onWire, outcome) } : {}),
  };
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
  if (!textAfter && options.fromPart >= IN_PLACE_OFFSET) {
    // A delivery resumed inside the text that took a refused voice note's place.
    await options.sendText(options.fromPart - IN_PLACE_OFFSET, shifted(options, IN_PLACE_OFFSET));
    return;
  }
  if (options.fromPart === 0) {
    const outcome = await sendVoiceNote(api, reply, caption, options);
    if (outcome === "refused" && !textAfter) {
      // Nothing of the voice reached the chat: the text takes its place (it would not follow
      // anyway), each part reported and recorded under its own index, so that a gateway stopped
      // between two parts hands the rest back instead of leaving the whole reply to be sent again.
      await options.sendText(0, shifted(options, IN_PLACE_OFFSET));
      return;
    }
    await options.onPartSent(0, { last: !textAfter, ...(outcome === "unconfirmed" ? { unconfirmed: true as const } : {}) });
  }
  if (textAfter) await options.sendText(Math.max(0, options.fromPart - TEXT_OFFSET), shifted(options, TEXT_OFFSET));
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
  const send = (withCaption: Record<string, unknown>) => carryingPart(onRequest && ((onWire, outcome) => onRequest(0, onWire, outcome)), () =>
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
