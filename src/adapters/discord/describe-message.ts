import { EmbedType, MessageReferenceType, type Attachment, type Collection, type Embed, type Message, type User } from "discord.js";
import type { AttachmentFacts, DiscordMessageFacts } from "./to-inbound-message.js";
import type { GifFacts } from "./gifs.js";

/**
 * Reads the facts `planInbound` decides on off a discord.js Message: no I/O, only the message
 * and the client's cache. `bot` is the logged-in bot user (`client.user`).
 */
export function describeMessage(message: Message, bot: User): DiscordMessageFacts {
  const channel = message.channel;
  const mentionedUsers = [...message.mentions.users.values()].map((user) => ({
    id: user.id,
    name: message.mentions.members?.get(user.id)?.nickname ?? user.globalName ?? user.username,
  }));
  const forwarded = message.reference?.type === MessageReferenceType.Forward ? message.messageSnapshots.first() : undefined;
  return {
    id: message.id,
    channelId: message.channelId,
    threadParentId: channel.isThread() ? channel.parentId : null,
    isDirectMessage: message.guildId === null,
    author: {
      id: message.author.id,
      username: message.author.username,
      globalName: message.author.globalName,
      isBot: message.author.bot,
      isSystem: message.author.system,
    },
    memberNickname: message.member?.nickname ?? null,
    content: forwarded ? forwarded.content : message.content,
    createdTimestamp: message.createdTimestamp,
    isSystemMessage: message.system,
    mentionsBot: message.mentions.has(bot, { ignoreEveryone: true, ignoreRoles: true }),
    botRoleId: message.guild?.roles.botRoleFor(bot)?.id ?? null,
    mentionedUsers,
    repliedToUserId: message.mentions.repliedUser?.id ?? null,
    replyReference: message.reference?.type === MessageReferenceType.Default && message.reference.messageId !== undefined
      ? { channelId: message.reference.channelId, messageId: message.reference.messageId }
      : null,
    forwardedFrom: message.reference?.type === MessageReferenceType.Forward ? forwardOrigin(message) : null,
    attachments: attachmentFacts(forwarded ? forwarded.attachments : message.attachments),
    stickers: [...(forwarded ? forwarded.stickers : message.stickers).values()].map((sticker) => sticker.name),
    gifs: gifFacts(forwarded ? forwarded.embeds : message.embeds),
  };
}

/** The `gifv` embeds (Tenor, GIPHY): the link and the still thumbnail, through Discord's media proxy when it gives one. */
function gifFacts(embeds: readonly Embed[]): GifFacts[] {
  return embeds
    .filter((embed) => embed.data.type === EmbedType.GIFV && typeof embed.url === "string")
    .map((embed) => {
      const thumbnail = embed.thumbnail;
      const url = thumbnail?.proxyURL ?? thumbnail?.url;
      return { url: embed.url as string, thumbnail: url ? { url, width: thumbnail?.width ?? null, height: thumbnail?.height ?? null } : null };
    });
}

/** Discord's forward snapshots carry no author: name the channel (and server) it came from. */
function forwardOrigin(message: Message): string {
  const reference = message.reference;
  const source = reference ? message.client.channels.cache.get(reference.channelId) : undefined;
  if (source && !source.isDMBased() && "name" in source) {
    const guild = source.guild;
    return guild.id === message.guildId ? `#${source.name}` : `#${source.name} (${guild.name})`;
  }
  if (source?.isDMBased() || reference?.guildId === undefined) return "a direct message";
  return "another server";
}

function attachmentFacts(attachments: Collection<string, Attachment>): AttachmentFacts[] {
  return [...attachments.values()].map((attachment) => ({
    id: attachment.id,
    name: attachment.name,
    size: attachment.size,
    contentType: attachment.contentType,
    url: attachment.url,
    width: attachment.width,
    height: attachment.height,
  }));
}
