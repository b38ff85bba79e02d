/**
 * What the fake Discord knows about its world: ids, users, the default guild, snowflakes, and
 * the rules Discord applies to message content (mentions parsed from the text, length counted
 * in code points). Nothing here comes from the code under test.
 */

export type Payload = Record<string, unknown>;

export const FAKE_TOKEN = "fake.discord.token-0123456789";

/** The gateway intents the fake enforces (bits of IDENTIFY's `intents`). */
export const GATEWAY_INTENTS = { guilds: 1 << 0, guildMessages: 1 << 9, directMessages: 1 << 12, messageContent: 1 << 15 } as const;

/** Snowflake-shaped ids shared by the fake's default world and the fixtures. */
export const IDS = {
  application: "100000000000000001",
  bot: "100000000000000001",
  guild: "200000000000000001",
  /** The role Discord creates for the bot when it joins a guild (managed, tags.bot_id). */
  botRole: "200000000000000002",
  /** An ordinary role, to show that only the bot's own role counts as a mention. */
  staffRole: "200000000000000003",
  textChannel: "300000000000000001",
  alwaysOnChannel: "300000000000000002",
  thread: "300000000000000003",
  dmChannel: "300000000000000004",
  user: "400000000000000001",
  otherUser: "400000000000000002",
  otherBot: "400000000000000003",
} as const;

export const BOT_USER = { id: IDS.bot, username: "longhaul", global_name: null, discriminator: "0", avatar: null, bot: true };
export const HUMAN_USER = { id: IDS.user, username: "ada", global_name: "Ada L.", discriminator: "0", avatar: null };
export const OTHER_USER = { id: IDS.otherUser, username: "bob", global_name: "Bob", discriminator: "0", avatar: null };
export const OTHER_BOT = { id: IDS.otherBot, username: "otherbot", global_name: null, discriminator: "0", avatar: null, bot: true };

/** Everyone the fake can resolve a `<@id>` to. */
export const KNOWN_USERS: ReadonlyMap<string, Payload> = new Map([BOT_USER, HUMAN_USER, OTHER_USER, OTHER_BOT].map((user) => [user.id, user]));

export const textChannel = (id: string, name: string): Payload => ({
  id, type: 0, guild_id: IDS.guild, name, position: 0, permission_overwrites: [], parent_id: null,
  topic: null, nsfw: false, last_message_id: null, rate_limit_per_user: 0,
});

export const threadChannel = (id: string, parentId: string, name: string): Payload => ({
  id, type: 11, guild_id: IDS.guild, parent_id: parentId, owner_id: IDS.user, name,
  last_message_id: null, message_count: 0, member_count: 1, rate_limit_per_user: 0, flags: 0,
  thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: "2026-01-01T00:00:00.000Z", locked: false },
});

const member = (roles: string[], nick: string | null = null): Payload => ({ nick, roles, joined_at: "2026-01-01T00:00:00.000Z", deaf: false, mute: false, flags: 0 });

const role = (id: string, name: string, extra: Payload = {}): Payload => ({
  id, name, permissions: "1071698660929", position: 1, color: 0, hoist: false, managed: false, mentionable: false, flags: 0, ...extra,
});

export const DEFAULT_GUILD: Payload = {
  id: IDS.guild, name: "Fake Guild", icon: null, owner_id: IDS.user, afk_timeout: 300, verification_level: 0,
  default_message_notifications: 0, explicit_content_filter: 0, mfa_level: 0, nsfw_level: 0, premium_tier: 0,
  preferred_locale: "en-US", features: [], emojis: [], stickers: [], unavailable: false, large: false,
  member_count: 3, joined_at: "2026-01-01T00:00:00.000Z", voice_states: [], presences: [], stage_instances: [],
  guild_scheduled_events: [], system_channel_flags: 0,
  roles: [
    role(IDS.guild, "@everyone", { position: 0 }),
    // What Discord creates when a bot with permissions joins: managed, tagged with the bot's id.
    role(IDS.botRole, "longhaul", { managed: true, tags: { bot_id: IDS.bot } }),
    role(IDS.staffRole, "staff", { mentionable: true }),
  ],
  members: [
    { user: BOT_USER, ...member([IDS.botRole]) },
    { user: HUMAN_USER, ...member([IDS.staffRole]) },
    { user: OTHER_USER, ...member([]) },
  ],
  channels: [textChannel(IDS.textChannel, "general"), textChannel(IDS.alwaysOnChannel, "ask-the-bot")],
  threads: [threadChannel(IDS.thread, IDS.textChannel, "a thread")],
};

/** Discord's epoch (2015-01-01) in Unix ms; a snowflake's top 42 bits are ms since then. */
export const DISCORD_EPOCH = 1_420_070_400_000n;

export const snowflakeAt = (unixMs: number, sequence = 0n): string => (((BigInt(unixMs) - DISCORD_EPOCH) << 22n) | (sequence & 0x3fffffn)).toString();
export const snowflakeTime = (id: string): number => Number((BigInt(id) >> 22n) + DISCORD_EPOCH);
export const compareSnowflakes = (a: string, b: string): number => {
  const difference = BigInt(a) - BigInt(b);
  return difference === 0n ? 0 : difference < 0n ? -1 : 1;
};

/**
 * Discord's API is Python 3 and measures `content` in code points (discord-api-docs #1315):
 * an emoji outside the BMP counts once, though it takes two UTF-16 units.
 */
export const discordLength = (text: string): number => {
  let count = 0;
  for (const _codePoint of text) count += 1;
  return count;
};

/** What Discord parses out of message content: user and role mentions, @everyone/@here. */
export interface ParsedMentions {
  userIds: string[];
  roleIds: string[];
  everyone: boolean;
}

export function parseMentions(content: string, guildRoleIds: ReadonlySet<string>): ParsedMentions {
  const userIds = unique([...content.matchAll(/<@!?(\d{17,20})>/g)].map((match) => match[1] ?? "")).filter((id) => KNOWN_USERS.has(id));
  const roleIds = unique([...content.matchAll(/<@&(\d{17,20})>/g)].map((match) => match[1] ?? "")).filter((id) => guildRoleIds.has(id));
  return { userIds, roleIds, everyone: /@(everyone|here)\b/.test(content) };
}

const unique = (items: string[]): string[] => [...new Set(items)];

/** Content types Discord's CDN reports for the extensions the tests use. */
export function contentTypeFor(filename: string): string | undefined {
  const extension = filename.slice(filename.lastIndexOf(".") + 1).toLowerCase();
  const types: Record<string, string> = {
    txt: "text/plain; charset=utf-8", md: "text/markdown; charset=utf-8", py: "text/x-python; charset=utf-8",
    csv: "text/csv; charset=utf-8", json: "application/json; charset=utf-8", png: "image/png", jpg: "image/jpeg",
    pdf: "application/pdf", ogg: "audio/ogg",
  };
  return types[extension];
}

/**
 * Discord's message bucket: 5 messages per 5 s per channel, the window starting at its first
 * request. Reports what the X-RateLimit-* headers carry.
 */
export class ChannelBuckets {
  static readonly LIMIT = 5;
  static readonly WINDOW_MS = 5_000;
  private readonly buckets = new Map<string, { resetAt: number; used: number }>();

  /** Takes one request from the channel's bucket, or says how long to wait. */
  take(channelId: string, now = Date.now()): { allowed: boolean; remaining: number; resetAt: number } {
    let bucket = this.buckets.get(channelId);
    if (!bucket || now >= bucket.resetAt) {
      bucket = { resetAt: now + ChannelBuckets.WINDOW_MS, used: 0 };
      this.buckets.set(channelId, bucket);
    }
    if (bucket.used >= ChannelBuckets.LIMIT) return { allowed: false, remaining: 0, resetAt: bucket.resetAt };
    bucket.used += 1;
    return { allowed: true, remaining: ChannelBuckets.LIMIT - bucket.used, resetAt: bucket.resetAt };
  }

  static headers(state: { remaining: number; resetAt: number }, now = Date.now()): Record<string, string> {
    return {
      "x-ratelimit-limit": String(ChannelBuckets.LIMIT),
      "x-ratelimit-remaining": String(state.remaining),
      "x-ratelimit-reset": (state.resetAt / 1000).toFixed(3),
      "x-ratelimit-reset-after": (Math.max(0, state.resetAt - now) / 1000).toFixed(3),
      // One bucket hash for the route; the channel id (major parameter) makes it per channel.
      "x-ratelimit-bucket": "fake-channel-messages",
    };
  }
}

/**
 * The embed Discord makes of a Tenor link (a GIF from its GIF picker): type gifv, the page's URL,
 * the still thumbnail and the MP4, each with Discord's media-proxy URL.
 */
export function gifvEmbed(pageUrl: string, proxyRoot = "https://images-ext-1.discordapp.net/external/x"): Payload {
  const slug = pageUrl.split("/").at(-1) ?? "gif";
  const media = `https://media.tenor.com/AbCdEfGh/${slug}`;
  return {
    type: "gifv", url: pageUrl, provider: { name: "Tenor", url: "https://tenor.co" },
    thumbnail: { url: `${media}.png`, proxy_url: `${proxyRoot}/${slug}.png`, width: 498, height: 373, flags: 0 },
    video: { url: `${media}.mp4`, proxy_url: `${proxyRoot}/${slug}.mp4`, width: 498, height: 373, flags: 0 },
  };
}
