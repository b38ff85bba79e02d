import type { Message, User } from "discord.js";
import type { InboundMessage } from "../channel-adapter.js";

/**
 * Discord message → InboundMessage, or the reason it is not for the bot. Two steps so the
 * decision is a pure function of plain data: `describeMessage` reads what matters off a
 * discord.js Message (no I/O), `toInboundMessage` decides.
 */

/** The facts about one Discord message that decide whether and how it reaches the ingress. */
export interface DiscordMessageFacts {
  id: string;
  /** The channel it was posted in; for a thread, the thread's id (a thread is a channel). */
  channelId: string;
  /** The thread's parent channel when posted in a thread; null otherwise. */
  threadParentId: string | null;
  isDirectMessage: boolean;
  author: {
    id: string;
    username: string;
    globalName: string | null;
    isBot: boolean;
    /** Discord's own system user (official announcements). */
    isSystem: boolean;
  };
  /** The author's nickname in this guild, when set. */
  memberNickname: string | null;
  content: string;
  createdTimestamp: number;
  /** Join notices, pins, thread-created notices and the like. */
  isSystemMessage: boolean;
  /**
   * Whether the bot itself is mentioned: `message.mentions.has(bot, { ignoreEveryone: true,
   * ignoreRoles: true })`, so neither @everyone/@here nor a role the bot holds counts.
   */
  mentionsBot: boolean;
  /** Users mentioned in the text, to render `<@id>` as `@name` for the agent. */
  mentionedUsers: ReadonlyArray<{ id: string; name: string }>;
  /** Author of the message this one replies to, when it is a reply. */
  repliedToUserId: string | null;
}

export interface InboundRules {
  botUserId: string;
  /** Channels answered without a mention; a thread inherits its parent's setting. */
  alwaysOnChannels: ReadonlySet<string>;
  /** Longer text is cut to this many characters (the adapter tells the user). */
  maxMessageChars: number;
}

/**
 * For thread messages `parentChatId` holds the parent channel: the ingress checks
 * ALLOWED_DISCORD_CHANNELS against it, since users create threads at will.
 */
export type DiscordInboundMessage = InboundMessage;

export type IgnoreReason =
  | "own-message"
  | "bot-author"
  | "system-message"
  | "not-addressed"
  | "empty";

export type InboundDecision =
  | { kind: "submit"; message: DiscordInboundMessage; /** Original length when the text was cut. */ truncatedFrom?: number }
  | { kind: "ignore"; reason: IgnoreReason };

export function toInboundMessage(facts: DiscordMessageFacts, rules: InboundRules): InboundDecision {
  if (facts.author.id === rules.botUserId) return { kind: "ignore", reason: "own-message" };
  if (facts.author.isBot) return { kind: "ignore", reason: "bot-author" };
  if (facts.author.isSystem || facts.isSystemMessage) return { kind: "ignore", reason: "system-message" };

  if (!facts.isDirectMessage && !isAddressed(facts, rules)) return { kind: "ignore", reason: "not-addressed" };

  const text = renderText(facts, rules.botUserId);
  // An attachment-only message, or a bare mention: nothing for the agent to answer.
  if (text === "") return { kind: "ignore", reason: "empty" };
  const truncated = truncate(text, rules.maxMessageChars);

  const message: DiscordInboundMessage = {
    platform: "discord",
    sessionKey: facts.isDirectMessage ? `dc:dm:${facts.author.id}` : `dc:${facts.channelId}`,
    messageId: facts.id,
    chatId: facts.channelId,
    userId: facts.author.id,
    userName: facts.memberNickname ?? facts.author.globalName ?? facts.author.username,
    chatType: facts.isDirectMessage ? "private" : "group",
    text: truncated,
    sentAt: facts.createdTimestamp,
    ...(facts.threadParentId === null ? {} : { parentChatId: facts.threadParentId }),
  };
  return truncated.length < text.length ? { kind: "submit", message, truncatedFrom: text.length } : { kind: "submit", message };
}

function isAddressed(facts: DiscordMessageFacts, rules: InboundRules): boolean {
  return (
    facts.mentionsBot ||
    facts.repliedToUserId === rules.botUserId ||
    rules.alwaysOnChannels.has(facts.channelId) ||
    (facts.threadParentId !== null && rules.alwaysOnChannels.has(facts.threadParentId))
  );
}

/** Drops the bot's own mention (and one following space) and names the other users. */
function renderText(facts: DiscordMessageFacts, botUserId: string): string {
  const names = new Map(facts.mentionedUsers.map((user) => [user.id, user.name]));
  return facts.content
    .replace(/<@!?(\d+)> ?/g, (mention, id: string) => {
      if (id === botUserId) return "";
      const name = names.get(id);
      return name === undefined ? mention : `@${name}${mention.endsWith(" ") ? " " : ""}`;
    })
    .trim();
}

function truncate(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const code = text.charCodeAt(maxChars - 1);
  // Never leave half of a surrogate pair at the end.
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? maxChars - 1 : maxChars);
}

/** Reads the facts off a discord.js Message; `bot` is the logged-in bot user (`client.user`). */
export function describeMessage(message: Message, bot: User): DiscordMessageFacts {
  const channel = message.channel;
  const mentionedUsers = [...message.mentions.users.values()].map((user) => ({
    id: user.id,
    name: message.mentions.members?.get(user.id)?.nickname ?? user.globalName ?? user.username,
  }));
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
    content: message.content,
    createdTimestamp: message.createdTimestamp,
    isSystemMessage: message.system,
    mentionsBot: message.mentions.has(bot, { ignoreEveryone: true, ignoreRoles: true }),
    mentionedUsers,
    repliedToUserId: message.mentions.repliedUser?.id ?? null,
  };
}
