/**
 * Buttons on Discord: approval requests go out with message components; a press arrives as an
 * INTERACTION_CREATE, becomes an InboundMessage with `action`, is stored by the ingress and
 * only then acknowledged (a deferred update; Discord wants it within 3 s and never delivers
 * the press again), and the outcome later replaces the request in place (components removed).
 */
import { ButtonStyle, ComponentType, type ButtonInteraction, type ChatInputCommandInteraction, type MessageCreateOptions, type SendableChannels } from "discord.js";
import type { InboundMessage, OutboundReply, ReplyAction } from "../channel-adapter.js";
import { NO_MENTIONS } from "./send-reply.js";

/** One action row of buttons; custom_id is the action id (Discord allows 100 characters). */
export function buttonRow(actions: readonly ReplyAction[]): NonNullable<MessageCreateOptions["components"]> {
  return [{
    type: ComponentType.ActionRow,
    components: actions.map((action) => ({
      type: ComponentType.Button,
      style: action.style === "danger" ? ButtonStyle.Danger : ButtonStyle.Primary,
      label: action.label,
      customId: action.id,
    })),
  }];
}

/** A press on one of our buttons, as a message for the ingress. */
export function toInboundAction(interaction: ButtonInteraction): InboundMessage {
  return { ...fromInteraction(interaction, interaction.customId), action: { id: interaction.customId, sourceMessageId: interaction.message.id } };
}

/** A slash command, as the message a user would have typed (`/name text`) for the same code path. */
export function toInboundCommand(interaction: ChatInputCommandInteraction, text: string): InboundMessage {
  return fromInteraction(interaction, text);
}

function fromInteraction(interaction: ButtonInteraction | ChatInputCommandInteraction, text: string): InboundMessage {
  const channel = interaction.channel;
  const isDirectMessage = interaction.guildId === null;
  const threadParentId = channel?.isThread() ? channel.parentId : null;
  const user = interaction.user;
  const member = interaction.member;
  const nickname = member && "nick" in member && typeof member.nick === "string" ? member.nick : undefined;
  return {
    platform: "discord",
    sessionKey: isDirectMessage ? `dc:dm:${user.id}` : `dc:${interaction.channelId}`,
    // Interaction ids are unique: a replayed dispatch is a duplicate at the ingress.
    messageId: `ix:${interaction.id}`,
    chatId: interaction.channelId,
    userId: user.id,
    userName: nickname ?? user.globalName ?? user.username,
    chatType: isDirectMessage ? "private" : "group",
    text,
    sentAt: interaction.createdTimestamp,
    ...(threadParentId ? { parentChatId: threadParentId } : {}),
  };
}

/** Replaces `reply.replaces` with the reply's text, buttons removed. → false when it cannot (gone, too long). */
export async function replaceMessage(channel: SendableChannels, reply: OutboundReply, maxLength: number): Promise<boolean> {
  if (reply.replaces === undefined || reply.text.length > maxLength || !("messages" in channel)) return false;
  try {
    await channel.messages.edit(reply.replaces, { content: reply.text, components: [], allowedMentions: NO_MENTIONS });
    return true;
  } catch {
    return false;
  }
}
