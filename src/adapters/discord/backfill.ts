import { SnowflakeUtil, type Client, type Collection, type Message, type TextBasedChannel } from "discord.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { ChannelCursors } from "../channel-adapter.js";

/**
 * Catching up after a (re)connect. Discord does not redeliver: what was posted while the
 * gateway was down (a deploy, an outage longer than the resume window) is only in the channel
 * history. After every READY (a new gateway session) this fetches, per channel, what came
 * after the cursor the intake keeps in Redis, and hands it to the intake in order, so it takes
 * the normal path (decision, ingress, dedupe). A resumed session needs none of this: Discord
 * replays the missed events itself.
 *
 * Bounds (docs/discord.md): messages at most `maxAgeMs` old, at most `maxMessagesPerChannel`
 * (the newest) per channel, DMs active within `dmWindowMs`, at most `maxDmChannels` of them.
 */

export interface BackfillOptions {
  client: Client;
  cursors: ChannelCursors;
  /** Allowed and always-on channels: they, and their active threads, are caught up. */
  channelIds: ReadonlySet<string>;
  /** Queues one fetched message (the intake decides, submits and moves the cursor). */
  enqueue(message: Message): void;
  /** True once the adapter is stopping: the run ends early. */
  stopped(): boolean;
  logger: Logger;
  limits: BackfillLimits;
  now?: () => number;
}

export interface BackfillLimits {
  /** Older messages are left alone: an answer to a day-old question surprises more than it helps. @defaultValue 6 h */
  maxAgeMs: number;
  /** Discord returns at most 100 per request: one page, the newest. @defaultValue 100 */
  maxMessagesPerChannel: number;
  /** DM channels whose last handled message is older than this are not checked. @defaultValue 7 days */
  dmWindowMs: number;
  /** At most this many DM channels are checked, the most recently active first. @defaultValue 100 */
  maxDmChannels: number;
}

export const DEFAULT_BACKFILL_LIMITS: BackfillLimits = {
  maxAgeMs: 6 * 60 * 60_000,
  maxMessagesPerChannel: 100,
  dmWindowMs: 7 * 24 * 60 * 60_000,
  maxDmChannels: 100,
};

export interface BackfillReport {
  channels: number;
  messages: number;
  /** Channels with more new messages than the bound: only the newest were taken. */
  truncated: string[];
}

interface Target {
  channel: TextBasedChannel;
  /** Messages after this id are new; undefined: the channel has no cursor yet. */
  cursor: string | undefined;
  /** A thread created since the last run: everything in it is new (no cursor to start from). */
  isNewThread: boolean;
}

export async function runBackfill(options: BackfillOptions): Promise<BackfillReport> {
  const { cursors, logger } = options;
  const now = options.now?.() ?? Date.now();
  const known = await cursors.list("discord");
  // No cursor at all: the first run of this deployment. Nothing was missed; start counting.
  const firstRun = known.size === 0;
  const targets = [...(await channelTargets(options, known)), ...(await dmTargets(options, known, now))];
  const report: BackfillReport = { channels: 0, messages: 0, truncated: [] };
  const oldest = SnowflakeUtil.generate({ timestamp: now - options.limits.maxAgeMs }).toString();

  for (const target of targets) {
    if (options.stopped()) break;
    const channelId = target.channel.id;
    try {
      if (target.cursor === undefined && (firstRun || !target.isNewThread)) {
        // A channel seen for the first time (or newly allowed): its past is not ours to answer,
        // but from now on nothing in it may be missed, even if it is quiet until the next outage.
        await cursors.advance("discord", channelId, target.channel.lastMessageId ?? SnowflakeUtil.generate({ timestamp: now }).toString());
        continue;
      }
      const after = maxSnowflake(target.cursor ?? channelId, oldest);
      if (target.channel.lastMessageId && compareSnowflakes(target.channel.lastMessageId, after) <= 0) continue;
      const { messages, truncated } = await fetchAfter(target.channel, after, options.limits.maxMessagesPerChannel);
      report.channels += 1;
      report.messages += messages.length;
      if (truncated) report.truncated.push(channelId);
      for (const message of messages) options.enqueue(message);
    } catch (error) {
      logger.warn({ channelId, error: errorMessage(error) }, "backfill of a channel failed");
    }
  }
  return report;
}

/** The allowed channels the client knows, and their active threads (fetched: the cache may lag). */
async function channelTargets(options: BackfillOptions, known: ReadonlyMap<string, string>): Promise<Target[]> {
  const targets: Target[] = [];
  const guilds = new Set<string>();
  for (const channelId of options.channelIds) {
    const channel = options.client.channels.cache.get(channelId);
    if (!channel?.isTextBased() || channel.isDMBased()) continue;
    if (!channel.isThread()) guilds.add(channel.guildId);
    targets.push({ channel, cursor: known.get(channelId), isNewThread: false });
  }
  for (const guildId of guilds) {
    const guild = options.client.guilds.cache.get(guildId);
    if (!guild) continue;
    try {
      const { threads } = await guild.channels.fetchActiveThreads();
      for (const thread of threads.values()) {
        if (options.channelIds.has(thread.id) || thread.parentId === null || !options.channelIds.has(thread.parentId)) continue;
        targets.push({ channel: thread, cursor: known.get(thread.id), isNewThread: !known.has(thread.id) });
      }
    } catch (error) {
      options.logger.warn({ guildId, error: errorMessage(error) }, "active threads not fetched for backfill");
    }
  }
  return targets;
}

/**
 * DM channels cannot be listed by a bot: the ones to check are those with a cursor that are
 * not guild channels, most recently active first, within the DM window.
 */
async function dmTargets(options: BackfillOptions, known: ReadonlyMap<string, string>, now: number): Promise<Target[]> {
  const since = now - options.limits.dmWindowMs;
  const candidates = [...known.entries()]
    .filter(([channelId, cursor]) => !isGuildChannel(options.client, channelId) && SnowflakeUtil.timestampFrom(cursor) >= since)
    .sort(([, a], [, b]) => compareSnowflakes(b, a))
    .slice(0, options.limits.maxDmChannels);
  const targets: Target[] = [];
  for (const [channelId, cursor] of candidates) {
    try {
      const channel = await options.client.channels.fetch(channelId);
      if (channel?.isDMBased() && channel.isTextBased()) targets.push({ channel, cursor, isNewThread: false });
    } catch (error) {
      options.logger.debug({ channelId, error: errorMessage(error) }, "DM channel not fetched for backfill");
    }
  }
  return targets;
}

const isGuildChannel = (client: Client, channelId: string): boolean => {
  const channel = client.channels.cache.get(channelId);
  return channel !== undefined && !channel.isDMBased();
};

/**
 * Messages after `after`, oldest first, at most `limit`: one request when that is all there
 * is; when a full page comes back there may be more, and the newest page is taken instead.
 */
async function fetchAfter(channel: TextBasedChannel, after: string, limit: number): Promise<{ messages: Message[]; truncated: boolean }> {
  let page: Collection<string, Message> = await channel.messages.fetch({ after, limit, cache: true });
  let truncated = false;
  if (page.size >= limit) {
    page = (await channel.messages.fetch({ limit, cache: true })).filter((message) => compareSnowflakes(message.id, after) > 0);
    truncated = true;
  }
  return { messages: [...page.values()].sort((a, b) => compareSnowflakes(a.id, b.id)), truncated };
}

export const compareSnowflakes = (a: string, b: string): number => {
  const difference = BigInt(a) - BigInt(b);
  return difference === 0n ? 0 : difference < 0n ? -1 : 1;
};

const maxSnowflake = (a: string, b: string): string => (compareSnowflakes(a, b) >= 0 ? a : b);
