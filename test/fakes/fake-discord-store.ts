import { PERMISSION_BITS, permissionBits, withMemberOverwrite } from "./fake-discord-permissions.js";
import { compareSnowflakes, contentTypeFor, discordLength, GATEWAY_INTENTS, HUMAN_USER, IDS, KNOWN_USERS, parseMentions, snowflakeAt, snowflakeTime, type Payload } from "./fake-discord-world.js";

/**
 * The fake Discord's state: channels, their histories, permissions and uploaded files, and
 * how a user's message is built from a partial payload the way Discord builds it (mentions
 * parsed from the content, replies from the history, forwards as snapshots, files on the CDN).
 */

export interface FileUpload {
  name: string;
  content: string | Buffer;
  /** Discord derives it from the extension; null leaves it out, as for unknown extensions. */
  contentType?: string | null;
}

export interface UserMessageOptions {
  /** Files the user attached (a long paste arrives as `message.txt` with empty content). */
  files?: FileUpload[];
  /** The message this one replies to (same channel). */
  replyTo?: string;
  /** Whether the reply pings the replied-to author (the client's "@ On" toggle). @defaultValue false */
  pingReply?: boolean;
  /** Forwards this stored message: the new message carries a snapshot of it. */
  forward?: { channelId: string; messageId: string };
}

/**
 * What the bot may do in a channel, computed from the guild's roles and the channel's
 * permission overwrites (fake-discord-permissions.ts), which GUILD_CREATE and CHANNEL_UPDATE
 * carry to the client as Discord's do.
 */
export interface ChannelPermissions {
  /** VIEW_CHANNEL; without it every route on the channel answers 50001 Missing Access. */
  view: boolean;
  /** SEND_MESSAGES (SEND_MESSAGES_IN_THREADS); without it sends and typing answer 50013. */
  send: boolean;
  /** ADD_REACTIONS and READ_MESSAGE_HISTORY; without them a new reaction answers 50013. */
  react: boolean;
}

const FLAG_BITS: Record<keyof ChannelPermissions, bigint> = {
  view: PERMISSION_BITS.viewChannel,
  send: PERMISSION_BITS.sendMessages | PERMISSION_BITS.sendMessagesInThreads,
  react: PERMISSION_BITS.addReactions | PERMISSION_BITS.readMessageHistory,
};

const isThread = (channel: Payload): boolean => channel.type === 10 || channel.type === 11 || channel.type === 12;

export class DiscordStore {
  readonly channels = new Map<string, Payload>();
  /** Channel id → message id → message: the channel histories. */
  private readonly histories = new Map<string, Map<string, Payload>>();
  private readonly files = new Map<string, { body: Buffer; contentType: string | undefined }>();
  private lastSnowflake = 0n;

  constructor(readonly guilds: readonly Payload[], private readonly port: () => number) {
    for (const guild of guilds) {
      for (const channel of [...(guild.channels as Payload[]), ...(guild.threads as Payload[])]) this.channels.set(String(channel.id), structuredClone(channel));
    }
    this.channels.set(IDS.dmChannel, { id: IDS.dmChannel, type: 1, last_message_id: null, recipients: [HUMAN_USER] });
  }

  /** A stored message (what GET /channels/:id/messages/:id returns). */
  message(channelId: string, messageId: string): Payload | undefined {
    return this.histories.get(channelId)?.get(messageId);
  }

  /** A channel's history, oldest first. */
  history(channelId: string): Payload[] {
    return [...(this.histories.get(channelId)?.values() ?? [])].sort((a, b) => compareSnowflakes(String(a.id), String(b.id)));
  }

  /** Messages the bot created in a channel, as Discord stored them (with who they pinged). */
  botMessages(channelId: string): Payload[] {
    return [...(this.histories.get(channelId)?.values() ?? [])].filter((message) => (message.author as Payload).id === IDS.bot);
  }

  /**
   * Allows or denies the bot `permissions` with a member overwrite on the channel (a thread's
   * parent: threads have none of their own); returns the changed channel, for CHANNEL_UPDATE.
   */
  setPermissions(channelId: string, permissions: Partial<ChannelPermissions>): Payload | undefined {
    const channel = this.channels.get(channelId);
    const target = channel && isThread(channel) ? this.channels.get(String(channel.parent_id)) : channel;
    if (target?.guild_id === undefined) return undefined;
    let allow = 0n;
    let deny = 0n;
    for (const [flag, bits] of Object.entries(FLAG_BITS)) {
      const wanted = permissions[flag as keyof ChannelPermissions];
      if (wanted === true) allow |= bits;
      if (wanted === false) deny |= flag === "react" ? PERMISSION_BITS.addReactions : bits;
    }
    const changed = withMemberOverwrite(target, IDS.bot, allow, deny);
    this.channels.set(String(target.id), changed);
    return changed;
  }

  file(path: string): { body: Buffer; contentType: string | undefined } | undefined {
    return this.files.get(path);
  }

  /** Time-ordered ids, as Discord's: later messages always have larger ids. */
  snowflake(): string {
    const next = BigInt(snowflakeAt(Date.now()));
    this.lastSnowflake = next > this.lastSnowflake ? next : this.lastSnowflake + 1n;
    return this.lastSnowflake.toString();
  }

  permissionsOf(channelId: string): ChannelPermissions {
    const channel = this.channels.get(channelId);
    const guild = this.guildOf(channel);
    if (!channel || !guild) return { view: true, send: true, react: true };
    const parent = isThread(channel) ? this.channels.get(String(channel.parent_id)) : undefined;
    const bits = permissionBits(guild, channel, parent, IDS.bot);
    const has = (wanted: bigint): boolean => (bits & wanted) === wanted;
    return {
      view: has(PERMISSION_BITS.viewChannel),
      send: has(isThread(channel) ? PERMISSION_BITS.sendMessagesInThreads : PERMISSION_BITS.sendMessages),
      react: has(FLAG_BITS.react),
    };
  }

  guildOf(channel: Payload | undefined): Payload | undefined {
    return channel?.guild_id === undefined ? undefined : this.guilds.find((guild) => guild.id === channel.guild_id);
  }

  guildCreate(guild: Payload): Payload {
    const channels = [...this.channels.values()].filter((channel) => channel.guild_id === guild.id);
    return {
      ...guild,
      channels: channels.filter((channel) => channel.type !== 11 && channel.type !== 12),
      threads: channels.filter((channel) => (channel.type === 11 || channel.type === 12) && !(channel.thread_metadata as Payload).archived),
    };
  }

  private memberOf(guild: Payload, userId: string): Payload | undefined {
    const found = (guild.members as Payload[]).find((member) => (member.user as Payload).id === userId);
    if (!found) return undefined;
    const { user: _user, ...member } = found;
    return member;
  }

  buildUserMessage(given: Payload & { channel_id: string }, options: UserMessageOptions): Payload {
    // `{ id: undefined }` means "let Discord choose", not "no id".
    const partial = Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined)) as Payload & { channel_id: string };
    const channel = this.channels.get(partial.channel_id);
    if (!channel) throw new Error(`fake: no channel ${partial.channel_id}`);
    const guild = this.guildOf(channel);
    const content = typeof partial.content === "string" ? partial.content : "";
    // The client turns longer text into a message.txt attachment; the API refuses it.
    if (discordLength(content) > 2000) throw new Error(`fake: a user message holds at most 2,000 characters (got ${discordLength(content)}); send it as files: [message.txt]`);
    const id = typeof partial.id === "string" ? partial.id : this.snowflake();
    const author = (partial.author as Payload | undefined) ?? HUMAN_USER;
    const reference = this.referenceFor(partial, options);
    const referenced = reference?.type === 0 ? this.referencedMessage(partial, String(reference.message_id)) : undefined;
    const mentions = this.mentionsFor(content, guild, partial, options.pingReply === true ? (referenced?.author as Payload | undefined) : undefined);
    const attachments = (options.files ?? []).map((file) => this.upload(partial.channel_id, file));
    const message: Payload = {
      id, author, content: "", timestamp: new Date(snowflakeTime(id)).toISOString(), edited_timestamp: null,
      tts: false, attachments, embeds: [], pinned: false, type: reference?.type === 0 ? 19 : 0, flags: 0,
      ...(guild ? { guild_id: guild.id, member: (partial.member as Payload | undefined) ?? this.memberOf(guild, String(author.id)) } : {}),
      ...(channel.type === 1 ? { channel_type: 1 } : {}),
      ...partial,
      ...(attachments.length > 0 ? { attachments } : {}),
      ...mentions,
      ...(reference ? { message_reference: reference } : {}),
      ...(reference?.type === 0 ? { referenced_message: referenced ? oneLevel(referenced) : null } : {}),
      ...(options.forward ? this.snapshotOf(options.forward) : {}),
    };
    return message;
  }

  private referenceFor(partial: Payload, options: UserMessageOptions): Payload | undefined {
    const given = partial.message_reference as Payload | undefined;
    const channelId = partial.channel_id as string;
    const guildId = this.channels.get(channelId)?.guild_id;
    if (options.forward) {
      const source = this.channels.get(options.forward.channelId);
      return { type: 1, message_id: options.forward.messageId, channel_id: options.forward.channelId, ...(source?.guild_id ? { guild_id: source.guild_id } : {}) };
    }
    const messageId = options.replyTo ?? (given ? String(given.message_id) : undefined);
    if (messageId === undefined) return undefined;
    return { type: 0, message_id: messageId, channel_id: channelId, ...(guildId ? { guild_id: guildId } : {}) };
  }

  /**
   * The replied-to message from the channel's history. A payload that brings its own
   * `referenced_message` (a fixture) adds it to the history, as a message from before the fake
   * started; Discord sends null when the message was deleted.
   */
  private referencedMessage(partial: Payload & { channel_id: string }, messageId: string): Payload | undefined {
    const stored = this.message(partial.channel_id, messageId);
    if (stored) return stored;
    const given = partial.referenced_message as Payload | null | undefined;
    if (!given || given.id !== messageId) return undefined;
    const imported = { ...given, channel_id: partial.channel_id };
    this.store(imported);
    return imported;
  }

  /** Mentions as Discord parses them; a payload that claims different ones is a test bug. */
  private mentionsFor(content: string, guild: Payload | undefined, partial: Payload, pinged: Payload | undefined): Payload {
    const roleIds = new Set(((guild?.roles as Payload[] | undefined) ?? []).map((role) => String(role.id)));
    const parsed = parseMentions(content, roleIds);
    const userIds = [...new Set([...parsed.userIds, ...(pinged ? [String(pinged.id)] : [])])];
    const claimed = partial.mentions as Payload[] | undefined;
    if (claimed && !sameIds(claimed.map((user) => String(user.id)), userIds)) {
      throw new Error(`fake: payload claims mentions ${claimed.map((user) => user.id).join(",")}, content mentions ${userIds.join(",")}`);
    }
    const claimedRoles = partial.mention_roles as string[] | undefined;
    if (claimedRoles && !sameIds(claimedRoles, parsed.roleIds)) throw new Error(`fake: payload claims mention_roles ${claimedRoles.join(",")}, content mentions ${parsed.roleIds.join(",")}`);
    const mentions = userIds.map((id) => {
      const user = KNOWN_USERS.get(id) as Payload;
      const member = guild ? this.memberOf(guild, id) : undefined;
      return member ? { ...user, member } : user;
    });
    return { mentions, mention_roles: parsed.roleIds, mention_everyone: parsed.everyone };
  }

  private snapshotOf(source: { channelId: string; messageId: string }): Payload {
    const original = this.message(source.channelId, source.messageId);
    if (!original) throw new Error(`fake: cannot forward unknown message ${source.messageId}`);
    const { type, content, embeds, attachments, timestamp, edited_timestamp, flags, mentions, mention_roles } = original;
    return {
      content: "",
      // HAS_SNAPSHOT
      flags: 1 << 14,
      message_snapshots: [{ message: { type, content, embeds, attachments, timestamp, edited_timestamp, flags, mentions, mention_roles, sticker_items: [], components: [] } }],
    };
  }

  /** A picture behind Discord's media proxy (an embed's thumbnail): served at `<root>/<name>`; returns the root. */
  proxied(name: string, body: Buffer, contentType: string): string {
    this.files.set(`/cdn/external/${name}`, { body, contentType });
    return `http://127.0.0.1:${this.port()}/cdn/external`;
  }

  private upload(channelId: string, file: FileUpload): Payload {
    const id = this.snowflake();
    const body = Buffer.isBuffer(file.content) ? file.content : Buffer.from(file.content, "utf8");
    const contentType = file.contentType === null ? undefined : (file.contentType ?? contentTypeFor(file.name));
    const path = `/cdn/attachments/${channelId}/${id}/${encodeURIComponent(file.name)}`;
    this.files.set(path, { body, contentType });
    const url = `http://127.0.0.1:${this.port()}${path}?ex=0&is=0&hm=fake`;
    // Discord reports a picture's dimensions (read here off a PNG's header).
    const png = body.length >= 24 && body.subarray(1, 4).toString("latin1") === "PNG" ? { width: body.readUInt32BE(16), height: body.readUInt32BE(20) } : {};
    return { id, filename: file.name, size: body.length, url, proxy_url: url, ...(contentType ? { content_type: contentType } : {}), ...png };
  }

  /** A deleted message: gone from the history; edits of it answer Unknown Message. */
  remove(channelId: string, messageId: string): void {
    this.histories.get(channelId)?.delete(messageId);
  }

  store(message: Payload): void {
    const channelId = String(message.channel_id);
    let history = this.histories.get(channelId);
    if (!history) {
      history = new Map();
      this.histories.set(channelId, history);
    }
    history.set(String(message.id), message);
    const channel = this.channels.get(channelId);
    if (channel && (channel.last_message_id === null || compareSnowflakes(String(message.id), String(channel.last_message_id)) > 0)) channel.last_message_id = message.id;
  }

  /** What a session sees of an event, given its intents (Discord's rules for the four we use). */
  visibleTo(event: string, data: unknown, intents: number): unknown {
    if (event === "GUILD_CREATE" || event.startsWith("THREAD_")) return intents & GATEWAY_INTENTS.guilds ? data : undefined;
    if (event !== "MESSAGE_CREATE" || typeof data !== "object" || data === null) return data;
    const message = data as Payload;
    const inGuild = message.guild_id !== undefined;
    if (!(intents & (inGuild ? GATEWAY_INTENTS.guildMessages : GATEWAY_INTENTS.directMessages))) return undefined;
    // Raw dispatches may be malformed on purpose: pass them through as they are.
    const mentionsBot = Array.isArray(message.mentions) && (message.mentions as Payload[]).some((user) => user?.id === IDS.bot);
    if (!inGuild || intents & GATEWAY_INTENTS.messageContent || mentionsBot || (message.author as Payload | undefined)?.id === IDS.bot) return data;
    return { ...message, content: "", embeds: [], attachments: [], message_snapshots: [] };
  }
}

/** Discord nests a replied-to message one level deep: its own `referenced_message` is left out. */
export const oneLevel = (message: Payload): Payload => {
  const { referenced_message: _nested, ...rest } = message;
  return rest;
};

const sameIds = (a: string[], b: string[]): boolean => a.length === b.length && a.every((id) => b.includes(id));
