/**
 * The Discord end-to-end harness: the fake Discord (REST + gateway) and the fake LLM around
 * the real pipeline — discord.js adapter, ingress, BullMQ on the private redis-server, worker,
 * delivery. Each harness has its own Redis key prefix (testEnv).
 */
import { readFileSync } from "node:fs";
import { afterEach, beforeEach, expect, vi } from "vitest";
import { loadConfig, type Config } from "../../config/index.js";
import { createAdapters } from "../../src/adapters/index.js";
import { createDiscordAdapter, type DiscordAdapter, type DiscordAdapterOptions } from "../../src/adapters/discord/index.js";
import type { ChannelAdapter } from "../../src/adapters/channel-adapter.js";
import type { ChatMessage } from "../../src/core/messages.js";
import { createRedis, type Redis } from "../../src/queue/index.js";
import { SessionStore } from "../../src/session/store.js";
import { DEFAULT_GUILD, FAKE_TOKEN, FakeDiscord, IDS, type Payload, type RecordedRequest } from "../fakes/fake-discord.js";
import { startFakeLlm, textOf, withoutStamp, type FakeLlm, type RecordedRequest as LlmRequest } from "../fakes/fake-llm.js";
import { testEnv } from "./config.js";
import { captureLogs, startPipeline, type Pipeline } from "./pipeline.js";

export { FAKE_TOKEN, IDS };

export type MessagePayload = Payload & { channel_id: string };

/** A channel of the fake guild that is not in ALLOWED_DISCORD_CHANNELS, and a thread under it. */
export const CLOSED_CHANNEL = "300000000000000009";
export const CLOSED_THREAD = "300000000000000010";

const guildChannels = DEFAULT_GUILD.channels as Payload[];
const guildThreads = DEFAULT_GUILD.threads as Payload[];
export const E2E_GUILD: Payload = {
  ...DEFAULT_GUILD,
  channels: [...guildChannels, { ...guildChannels[0], id: CLOSED_CHANNEL, name: "staff-only", position: 2 }],
  threads: [...guildThreads, { ...guildThreads[0], id: CLOSED_THREAD, parent_id: CLOSED_CHANNEL, name: "staff thread" }],
};

export const fixture = (name: string, overrides: Payload = {}): MessagePayload => ({
  ...(JSON.parse(readFileSync(new URL(`../fixtures/discord/${name}.json`, import.meta.url), "utf8")) as MessagePayload),
  ...overrides,
});

/** `<@bot> text` in a channel, shaped like the guild-mention fixture. */
export const mention = (channelId: string, id: string, text: string): MessagePayload =>
  fixture("guild-mention", { id, channel_id: channelId, content: `<@${IDS.bot}> ${text}` });

export const MESSAGES_PATH = /^\/channels\/(\d+)\/messages$/;

/**
 * Waits on a condition, long enough for a turn through queue, worker and delivery on a loaded
 * two-core machine: a process' first turn builds the tokenizer (seconds of CPU).
 */
export const until = <T>(check: () => T | Promise<T>, timeout = 45_000): Promise<T> => vi.waitFor(check, { timeout, interval: 20 });

/** For describe(): room for `until` plus set-up and tear-down. */
export const E2E_TIMEOUT = { timeout: 90_000 };

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The user-role texts of one LLM request, in order, each without its send-time stamp. */
export const userTexts = (request: LlmRequest | undefined): string[] =>
  (request?.body.messages ?? []).filter((message) => message.role === "user").map((message) => withoutStamp(textOf(message.content)));

/**
 * Closes the harness, then checks what everything the bot posted pinged: nobody but the
 * person a guild reply answers (nobody at all with DISCORD_PING_ON_REPLY off), never a role
 * or @everyone. For afterEach: whatever a test did, this must hold.
 */
export async function closeExpectingOnlyAskerPinged(e2e: DiscordE2E | undefined): Promise<void> {
  const pings = e2e?.pings() ?? [];
  const notifications = e2e?.fake.notifications ?? [];
  await e2e?.close();
  // A message the bot deleted since (a replaced status) is judged by whom it notified: nobody.
  for (const gone of notifications.filter((entry) => !e2e?.fake.message(entry.channelId, entry.messageId))) expect(gone.userIds).toEqual([]);
  for (const ping of pings.filter((entry) => entry.roles !== undefined)) {
    expect(ping.pinged).toEqual(ping.expected);
    expect(ping).toMatchObject({ roles: [], everyone: false, allowed: { parse: [] } });
  }
}

/**
 * For a describe block: before each test a fake Discord and a pipeline (`DiscordE2E.start(env)`,
 * `startPipeline()`), handed to `use`; after it, closed expecting only the asker pinged.
 */
export function pipelineForEachTest(use: (e2e: DiscordE2E) => void, env: Record<string, string | undefined> = {}): void {
  let current: DiscordE2E | undefined;
  beforeEach(async () => {
    current = await DiscordE2E.start(env);
    use(current);
    await current.startPipeline();
  });
  afterEach(async () => {
    await closeExpectingOnlyAskerPinged(current);
    current = undefined;
  });
}

export class DiscordE2E {
  readonly pipelines: Pipeline[] = [];
  readonly config: Config;
  #redis: Redis | undefined;

  private constructor(readonly fake: FakeDiscord, readonly llm: FakeLlm, readonly env: Record<string, string>) {
    this.config = loadConfig(env);
  }

  /** Allowed: user IDS.user, the text and always-on channels (not the thread: its parent allows it). */
  static async start(envOverrides: Record<string, string | undefined> = {}, options: { guilds?: Payload[] } = {}): Promise<DiscordE2E> {
    const llm = await startFakeLlm();
    const fake = await FakeDiscord.start({ guilds: options.guilds ?? [E2E_GUILD] });
    const env = testEnv({
      LLM_BASE_URL: llm.url,
      DISCORD_BOT_TOKEN: FAKE_TOKEN,
      DISCORD_API_ROOT: fake.apiRoot,
      ALLOWED_DISCORD_USERS: IDS.user,
      ALLOWED_DISCORD_CHANNELS: `${IDS.textChannel},${IDS.alwaysOnChannel}`,
      DISCORD_ALWAYS_ON_CHANNELS: IDS.alwaysOnChannel,
      ...envOverrides,
    });
    return new DiscordE2E(fake, llm, env);
  }

  /**
   * A gateway (with a worker unless `worker: false`) whose Discord adapter is built from the
   * config as `main` builds it; `adapter` options build it directly instead (e.g. a faster typing refresh).
   */
  async startPipeline(options: { worker?: boolean; adapter?: Partial<DiscordAdapterOptions> } = {}): Promise<Pipeline> {
    const logs = captureLogs("debug", [FAKE_TOKEN]);
    const adapters: ChannelAdapter[] = options.adapter
      ? [createDiscordAdapter(this.config, logs.logger, options.adapter) as DiscordAdapter]
      : createAdapters(this.config, logs.logger, { onConsoleDrained: () => undefined });
    const pipeline = await startPipeline(this.config, adapters, { worker: options.worker ?? true, logs });
    this.pipelines.push(pipeline);
    return pipeline;
  }

  /** Every POST /channels/:id/messages so far, failed ones included. */
  messagePosts(): RecordedRequest[] {
    return this.fake.requestsTo("POST", MESSAGES_PATH);
  }

  /** Bodies of the messages the bot created, in order; only those in `channelId` when given. */
  sent(channelId?: string): Payload[] {
    return this.messagePosts()
      .filter((request) => request.status === 200 && (channelId === undefined || MESSAGES_PATH.exec(request.path)?.[1] === channelId))
      .map((request) => request.body as Payload);
  }

  /**
   * Every message the bot posted, with what Discord made of its allowed_mentions: who it
   * pinged. The invariant (DISCORD_PING_ON_REPLY on): a reply in a guild channel pings the
   * person it answers and no one else; nothing else pings anyone (with it off, nothing does).
   */
  pings(): Array<{ content: string; allowed: unknown; pinged: string[]; roles: unknown; everyone: unknown; expected: string[] }> {
    return this.messagePosts().filter((request) => request.status === 200).map((request) => {
      const body = request.body as Payload;
      const channelId = MESSAGES_PATH.exec(request.path)?.[1] ?? "";
      const stored = this.fake.botMessages(channelId).find((message) => message.nonce === body.nonce) ?? {};
      const referenced = stored.referenced_message as Payload | undefined;
      const inGuild = stored.guild_id !== undefined;
      return {
        content: String(body.content),
        allowed: body.allowed_mentions,
        pinged: ((stored.mentions as Payload[] | undefined) ?? []).map((user) => String(user.id)),
        roles: stored.mention_roles,
        everyone: stored.mention_everyone,
        // A status (preview) is silent: it pings nobody; the answer pings the asker.
        expected: referenced && inGuild && this.config.DISCORD_PING_ON_REPLY && (Number(body.flags ?? 0) & 4096) === 0 ? [String((referenced.author as Payload).id)] : [],
      };
    });
  }

  typingPosts(channelId: string): RecordedRequest[] {
    return this.fake.requestsTo("POST", new RegExp(`^/channels/${channelId}/typing$`));
  }

  async waitForSent(count: number, channelId?: string): Promise<Payload[]> {
    return until(() => {
      const sent = this.sent(channelId);
      if (sent.length < count) throw new Error(`${sent.length} of ${count} messages sent${channelId ? ` to ${channelId}` : ""}`);
      return sent;
    });
  }

  /** The session's stored transcript (what the worker committed under that session key). */
  async transcript(sessionKey: string): Promise<ChatMessage[]> {
    this.#redis ??= createRedis(this.config.REDIS_URL ?? "");
    return new SessionStore(this.#redis, this.config.REDIS_PREFIX).readTranscript(sessionKey);
  }

  /** Parsed log lines of every pipeline started so far with this `msg`. */
  logged(msg: string): Array<Record<string, unknown>> {
    return this.pipelines
      .flatMap((pipeline) => pipeline.logs.lines.join("").split("\n"))
      .filter((line) => line.trim() !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.msg === msg);
  }

  /** Closes everything, even when one part fails to close; then reports the first failure. */
  async close(): Promise<void> {
    const closers = [...this.pipelines.splice(0).map((pipeline) => () => pipeline.close()), async () => this.#redis?.disconnect(), () => this.fake.close(), () => this.llm.close()];
    const failures: unknown[] = [];
    for (const close of closers) await close().catch((error: unknown) => failures.push(error));
    if (failures.length > 0) throw failures[0];
  }
}
