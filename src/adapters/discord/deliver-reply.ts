/**
 * One reply out (ChannelAdapter.send): through its interaction when it answers one, as new
 * messages replacing a live preview, edited into the preview (a preview-only reply), as the
 * replacement of an earlier message, as a voice message and its text (send-voice.ts), or as plain
 * parts and files — in that order of preference. A private reply to an interaction that can no
 * longer carry it is dropped: it never becomes a channel message.
 * Keeps the session's typing indicator until the reply's last part is out or refused for good.
 */
import type { Client, SendableChannels } from "discord.js";
import { PermanentError } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { OutboundReply, SendOptions } from "../channel-adapter.js";
import { sendOverPreview } from "../preview-final.js";
import { buttonRow, replaceMessage } from "./actions.js";
import type { InteractionReplies } from "./interactions.js";
import { editFinal, removeReplaced } from "./previews.js";
import { sendParts } from "./send-reply.js";
import { sendDocuments } from "./send-documents.js";
import { sendVoiceReply } from "./send-voice.js";
import { splitMessage } from "./split.js";
import type { TypingIndicators } from "./typing.js";

export interface ReplySenderPorts {
  client: Client;
  logger: Logger;
  typing: TypingIndicators;
  interactions: InteractionReplies;
  resolveChannel(channelId: string): Promise<SendableChannels>;
  /** Whether a reply pings the person it answers in this channel (DISCORD_PING_ON_REPLY). */
  pingsIn(channel: SendableChannels): boolean;
}

export class ReplySender {
  constructor(private readonly ports: ReplySenderPorts) {}

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    const { typing, logger, interactions, client } = this.ports;
    const parts = splitMessage(reply.text);
    if (parts.length === 0) {
      logger.warn({ replyId: reply.replyId }, "empty reply not sent");
      typing.stop(reply.sessionKey);
      return;
    }
    let channel: SendableChannels;
    try {
      channel = await this.ports.resolveChannel(reply.target.chatId);
    } catch (error) {
      typing.stop(reply.sessionKey);
      throw error;
    }
    const carrier = options.preview ? undefined : interactions.carrier(reply);
    if (carrier) {
      // The answer to a slash command (or a private one to a button press) goes through its interaction.
      const next = await interactions.deliver(carrier, reply, parts, options.fromPart, options.onPartSent, options.onPartRequest);
      if (next >= parts.length + (reply.documents?.length ?? 0)) {
        typing.stop(reply.sessionKey);
        return;
      }
      return this.send(reply, { fromPart: next, onPartSent: options.onPartSent, ...(options.onNoncedPart ? { onNoncedPart: options.onNoncedPart } : {}) });
    }
    if (reply.private === true && !options.preview && reply.inReplyTo.length > 0 && reply.inReplyTo.every((id) => id.startsWith("ix:"))) {
      // For the asker alone (a refusal, /usage…), promised privately by their interaction, which
      // is gone (a gateway restart, the token's 15 minutes, Discord's 401/404): not to the channel.
      logger.info({ replyId: reply.replyId, channelId: reply.target.chatId, interactions: reply.inReplyTo, fromPart: options.fromPart }, "private reply to a discord interaction that can no longer carry it: dropped, never sent to the channel");
      typing.stop(reply.sessionKey);
      return options.onPartSent(options.fromPart, { last: true });
    }
    if (options.preview) {
      // Sending the final as new messages also unarchives a thread archived meanwhile, where an
      // edit would be refused (50083). A retried part 1 is not posted twice: each has a nonce.
      const { messageId } = options.preview;
      const components = reply.actions?.length && parts.length === 1 ? buttonRow(reply.actions) : undefined;
      const decided = await sendOverPreview(options.preview, options, {
        send: (fromPart, onPartSent) => this.send(reply, { fromPart, onPartSent, ...(options.onNoncedPart ? { onNoncedPart: options.onNoncedPart } : {}) }),
        remove: () => removeReplaced(client, channel.id, messageId, logger),
        edit: () => editFinal(channel, reply, messageId, parts[0] ?? "", components ? { components } : {}),
        finished: () => typing.stop(reply.sessionKey),
      });
      if (decided) return;
    }
    if (reply.voice) {
      const { voice, ...text } = reply;
      try {
        await sendVoiceReply(channel, { ...reply, voice }, {
          fromPart: options.fromPart, onPartSent: options.onPartSent, logger,
          replyToMessageId: [reply.target.replyToMessageId, reply.inReplyTo.at(-1)].find((id) => id !== undefined && !id.startsWith("ix:")),
          sendText: (fromPart, onPartSent) => this.send(text, { fromPart, onPartSent, ...(options.onNoncedPart ? { onNoncedPart: (index: number) => options.onNoncedPart?.(index + 1) } : {}) }),
        });
      } finally {
        typing.stop(reply.sessionKey);
      }
      return;
    }
    if (reply.replaces !== undefined && options.fromPart === 0 && (await replaceMessage(channel, reply, 2_000))) {
      await options.onPartSent(0, { last: true });
      return;
    }
    await this.sendPlain(channel, reply, parts, options);
  }

  /** The parts, then the files, as new messages (each with a nonce: a retried one is not posted twice). */
  private async sendPlain(channel: SendableChannels, reply: OutboundReply, parts: string[], options: SendOptions): Promise<void> {
    const { typing, logger } = this.ports;
    const documents = reply.documents ?? [];
    try {
      await sendParts(channel, parts, {
        ...(reply.actions?.length ? { lastPart: { components: buttonRow(reply.actions) } } : {}),
        // An interaction (`ix:`) is no message to reply to.
        replyToMessageId: [reply.target.replyToMessageId, reply.inReplyTo.at(-1)].find((id) => id !== undefined && !id.startsWith("ix:")),
        pingRepliedUser: this.ports.pingsIn(channel),
        fromPart: options.fromPart,
        // The files go out after the text: its last part is the reply's last only without them.
        onPartSent: (partIndex, sent) => {
          const last = sent.last && documents.length === 0;
          if (last) typing.stop(reply.sessionKey);
          return options.onPartSent(partIndex, { last });
        },
        nonceKey: reply.replyId,
        onNoncedPart: options.onNoncedPart,
      });
      if (documents.length > 0) {
        await sendDocuments(channel, documents, { firstPart: parts.length, fromPart: options.fromPart, onPartSent: options.onPartSent, nonceKey: reply.replyId, onNoncedPart: options.onNoncedPart });
        typing.stop(reply.sessionKey);
      }
    } catch (error) {
      // Refused for good (no access, archived thread): nothing is coming, stop "typing".
      if (error instanceof PermanentError) typing.stop(reply.sessionKey);
      throw error;
    }
    if (options.fromPart >= parts.length + documents.length) typing.stop(reply.sessionKey);
    logger.debug({ replyId: reply.replyId, parts: parts.length, fromPart: options.fromPart }, "reply sent");
  }
}
