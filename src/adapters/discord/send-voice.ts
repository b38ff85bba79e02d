/**
 * A voice reply (`OutboundReply.voice`, docs/media.md) on Discord: a voice message (flag
 * IS_VOICE_MESSAGE, one `voice-message.ogg` attachment with its duration and waveform — Discord
 * allows no text with it), then the text's parts when the text is to be seen. Part 0 is the
 * voice; the text's parts are 1…n. Where voice messages are not allowed (50173: the channel's
 * permissions; 50160/50161: Discord refused the voice message's form) the audio goes as an
 * ordinary .ogg attachment instead. The voice message carries a nonce of its own
 * (`enforce_nonce`), so a retried send does not post it twice.
 */
import { DiscordAPIError, MessageFlags, RESTJSONErrorCodes, type SendableChannels } from "discord.js";
import type { OutboundReply, PartSent, ReplyVoice } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { NO_MENTIONS, partNonce, toSendError } from "./send-reply.js";

type OnPartSent = (partIndex: number, sent: PartSent) => Promise<void>;

/** Where Discord will not take a voice message, but takes the same audio as a file. */
const NOT_AS_VOICE_MESSAGE: ReadonlySet<unknown> = new Set([
  RESTJSONErrorCodes.YouCannotSendVoiceMessagesInThisChannel,
  RESTJSONErrorCodes.VoiceMessagesMustHaveASingleAudioAttachment,
  RESTJSONErrorCodes.VoiceMessagesMustHaveSupportingMetadata,
]);

export interface SendVoiceOptions {
  fromPart: number;
  onPartSent: OnPartSent;
  /** The voice message replies to this message (the user's). */
  replyToMessageId?: string | undefined;
  logger: Logger;
  /** Sends the reply's text from its part `fromPart` on (the adapter's own text path). */
  sendText(fromPart: number, onPartSent: OnPartSent): Promise<void>;
}

export async function sendVoiceReply(channel: SendableChannels, reply: OutboundReply & { voice: ReplyVoice }, options: SendVoiceOptions): Promise<void> {
  const textAfter = reply.voice.withText;
  if (options.fromPart === 0) {
    await sendVoiceMessage(channel, reply, options);
    await options.onPartSent(0, { last: !textAfter });
  }
  if (textAfter) await options.sendText(Math.max(0, options.fromPart - 1), (index, sent) => options.onPartSent(index + 1, sent));
}

async function sendVoiceMessage(channel: SendableChannels, reply: OutboundReply & { voice: ReplyVoice }, options: SendVoiceOptions): Promise<void> {
  const { voice } = reply;
  const audio = Buffer.from(voice.base64, "base64");
  const common = {
    allowedMentions: NO_MENTIONS,
    // Its own key: the text parts that follow use the reply id with their own indices.
    nonce: partNonce(`${reply.replyId}/voice`, 0),
    enforceNonce: true,
    ...(options.replyToMessageId === undefined ? {} : { reply: { messageReference: options.replyToMessageId, failIfNotExists: false } }),
  };
  try {
    await channel.send({
      ...common,
      flags: MessageFlags.IsVoiceMessage,
      files: [{ attachment: audio, name: "voice-message.ogg", contentType: "audio/ogg", duration: voice.durationS, waveform: voice.waveform }],
    });
    return;
  } catch (error) {
    if (!(error instanceof DiscordAPIError) || !NOT_AS_VOICE_MESSAGE.has(error.code)) throw toSendError(error, `send a voice message to channel ${channel.id}`);
    options.logger.info({ channelId: channel.id, code: error.code }, "discord refused a voice message here; the audio goes as a file");
  }
  try {
    await channel.send({ ...common, files: [{ attachment: audio, name: "answer.ogg", contentType: "audio/ogg" }] });
  } catch (error) {
    throw toSendError(error, `send the voice reply's audio to channel ${channel.id}`);
  }
}
