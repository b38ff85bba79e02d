import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { Client, Events, GatewayIntentBits, Partials, Status, type Interaction, type Message, type SendableChannels } from "discord.js";
import { PermanentError, errorMessage } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions, SubmitResult, TurnActivity } from "../channel-adapter.js";
import { NO_MENTIONS, sendParts, toSendError } from "./send-reply.js";
import { buttonRow, replaceMessage, toInboundAction } from "./actions.js";
import { splitMessage } from "./split.js";
import { describeMessage, toInboundMessage, type DiscordInboundMessage, type InboundRules } from "./to-inbound-message.js";

export interface DiscordAdapterOptions {
  /** Bot token (DISCORD_BOT_TOKEN). Never logged. */
  token: string;
  /** REST root; the gateway URL comes from its `/gateway/bot`. @defaultValue "https://discord.com/api" */
  apiRoot?: string;
  /** Channel ids answered without a mention (DISCORD_ALWAYS_ON_CHANNELS); threads inherit. @defaultValue [] */
  alwaysOnChannels?: readonly string[];
  /** Longer inbound text is truncated with a notice (MAX_MESSAGE_CHARS). @defaultValue 16000 */
  maxMessageChars?: number;
  /** @defaultValue silentLogger */
  logger?: Logger;
  /** Discord shows "typing" for 10 s per call; refresh before it lapses. @defaultValue 8000 */
  typingIntervalMs?: number;
  /** Stop typing anyway after this long, in case turn-finished never comes. @defaultValue 600000 */
  typingTimeoutMs?: number;
  /**
   * Pauses between attempts when the ingress throws. The gateway never redelivers a message,
   * so a failed submit is retried here before the user is asked to send it again.
   * @defaultValue [250, 1000, 4000]
   */
  submitRetryDelaysMs?: readonly number[];
}

/** Gateway close codes after which discord.js gives up, with what the operator must fix. */
const CLOSE_HINTS: Record<number, string> = {
  4004: "the bot token was rejected: check DISCORD_BOT_TOKEN",
  4013: "invalid intents",
  4014: "enable the Message Content intent for the bot in the Discord Developer Portal",
};

const SUBMIT_FAILED_NOTICE = "Sorry, I couldn't take that message just now. Please send it again in a moment.";

interface TypingLoop {
  interval: NodeJS.Timeout;
  timeout: NodeJS.Timeout;
}

/**
 * The Discord side of longhaul: one gateway connection (one shard) that hands addressed
 * messages to the ingress, and the REST client that sends replies. See docs/discord.md.
 */
export class DiscordAdapter implements ChannelAdapter {
  readonly platform = "discord" as const;

  private readonly client: Client;
  private readonly token: string;
  private readonly logger: Logger;
  private readonly alwaysOnChannels: ReadonlySet<string>;
  private readonly maxMessageChars: number;
  private readonly typingIntervalMs: number;
  private readonly typingTimeoutMs: number;
  private readonly submitRetryDelaysMs: readonly number[];
  private readonly typingLoops = new Map<string, TypingLoop>();
  /** Per-session chains: a session's messages reach the ingress in the order Discord sent them. */
  private readonly sessionChains = new Map<string, Promise<void>>();
  private ingress: IngressPort | undefined;
  private stopping: Promise<void> | undefined;

  constructor(options: DiscordAdapterOptions) {
    this.token = options.token;
    this.logger = (options.logger ?? silentLogger).child({ adapter: "discord" });
    this.alwaysOnChannels = new Set(options.alwaysOnChannels ?? []);
    this.maxMessageChars = options.maxMessageChars ?? 16_000;
    this.typingIntervalMs = options.typingIntervalMs ?? 8_000;
    this.typingTimeoutMs = options.typingTimeoutMs ?? 600_000;
    this.submitRetryDelaysMs = options.submitRetryDelaysMs ?? [250, 1_000, 4_000];
    this.client = new Client({
      // 37377. MessageContent is privileged: enable it in the Developer Portal, or guild
      // messages that do not mention the bot arrive with empty content.
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent, GatewayIntentBits.DirectMessages],
      // DM channels are never cached ahead of time; without this partial DMs are dropped.
      partials: [Partials.Channel],
      allowedMentions: NO_MENTIONS,
      // The user may delete their message while the model thinks; reply without the reference.
      failIfNotExists: false,
      rest: { api: options.apiRoot ?? "https://discord.com/api" },
    });
    this.client.on(Events.MessageCreate, (message) => this.onMessage(message));
    this.client.on(Events.InteractionCreate, (interaction) => this.onInteraction(interaction));
    // Chats the bot lost: what they scheduled goes (docs/reminders.md).
    this.client.on(Events.Raw, (packet: { t?: string | null; d?: unknown }) => this.onRawPacket(packet));
    this.client.on(Events.ChannelDelete, (channel) => {
      if (channel.isDMBased()) return;
      this.closeChats([channel.id, ...("threads" in channel ? channel.threads.cache.keys() : [])], "channel deleted");
    });
    this.client.on(Events.ThreadDelete, (thread) => this.closeChats([thread.id], "thread deleted"));
    this.client.on(Events.Error, (error) => this.logger.error({ error: errorMessage(error) }, "discord client error"));
    this.client.on(Events.ShardError, (error, shardId) => this.logger.warn({ shardId, error: errorMessage(error) }, "discord gateway error"));
    this.client.on(Events.ShardDisconnect, (event, shardId) =>
      this.logger.error({ shardId, code: event.code, hint: CLOSE_HINTS[event.code] }, "discord gateway closed for good"));
    this.client.on(Events.ShardReconnecting, (shardId) => this.logger.info({ shardId }, "discord gateway reconnecting"));
    this.client.on(Events.Warn, (warning) => this.logger.warn({ warning }, "discord client warning"));
    this.client.rest.on("rateLimited", (info) =>
      this.logger.debug({ route: info.route, retryAfterMs: info.retryAfter, global: info.global }, "discord rate limit hit; request queued"));
  }

  async start(ingress: IngressPort): Promise<void> {
    if (this.ingress) throw new Error("DiscordAdapter.start called twice");
    this.ingress = ingress;
    const abort = new AbortController();
    const ready = once(this.client, Events.ClientReady, { signal: abort.signal });
    try {
      await this.client.login(this.token);
      await ready;
    } catch (error) {
      ready.catch(() => undefined);
      abort.abort();
      await this.client.destroy().catch(() => undefined);
      throw new PermanentError(`Discord login failed: ${errorMessage(error)}`, { cause: error });
    }
    const user = this.client.user;
    this.logger.info({ botUserId: user?.id, botName: user?.username, guilds: this.client.guilds.cache.size }, "discord connected");
  }

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    const parts = splitMessage(reply.text);
    if (parts.length === 0) {
      this.logger.warn({ replyId: reply.replyId }, "empty reply not sent");
      this.stopTyping(reply.sessionKey);
      return;
    }
    const channel = await this.resolveChannel(reply.target.chatId);
    if (reply.replaces !== undefined && options.fromPart === 0 && (await replaceMessage(channel, reply, 2_000))) {
      await options.onPartSent(0);
      return;
    }
    await sendParts(channel, parts, {
      ...(reply.actions?.length ? { lastPart: { components: buttonRow(reply.actions) } } : {}),
      replyToMessageId: reply.target.replyToMessageId ?? reply.inReplyTo.at(-1),
      fromPart: options.fromPart,
      onPartSent: (partIndex) => {
        if (partIndex === parts.length - 1) this.stopTyping(reply.sessionKey);
        return options.onPartSent(partIndex);
      },
      nonceKey: reply.replyId,
    });
    if (options.fromPart >= parts.length) this.stopTyping(reply.sessionKey);
    this.logger.debug({ replyId: reply.replyId, parts: parts.length, fromPart: options.fromPart }, "reply sent");
  }

  onActivity(activity: TurnActivity): void {
    try {
      if (activity.target.platform !== "discord") return;
      if (activity.type === "turn-started") this.startTyping(activity.sessionKey, activity.target.chatId);
      else this.stopTyping(activity.sessionKey);
    } catch (error) {
      this.logger.debug({ error: errorMessage(error) }, "typing indicator failed");
    }
  }

  stop(): Promise<void> {
    this.stopping ??= this.shutdown();
    return this.stopping;
  }

  isConnected(): boolean {
    const shards = this.client.ws.shards;
    return this.stopping === undefined && this.client.isReady() && shards.size > 0 && shards.every((shard) => shard.status === Status.Ready);
  }

  private async shutdown(): Promise<void> {
    for (const sessionKey of [...this.typingLoops.keys()]) this.stopTyping(sessionKey);
    // Let messages already handed over finish reaching the ingress.
    await Promise.allSettled([...this.sessionChains.values()]);
    await this.client.destroy();
    this.logger.info("discord stopped");
  }

  /** discord.js does not await listeners: everything below is caught, nothing may throw. */
  private onMessage(message: Message): void {
    try {
      const bot = this.client.user;
      if (!this.ingress || this.stopping || !bot) return;
      const rules: InboundRules = { botUserId: bot.id, alwaysOnChannels: this.alwaysOnChannels, maxMessageChars: this.maxMessageChars };
      const decision = toInboundMessage(describeMessage(message, bot), rules);
      if (decision.kind === "ignore") {
        this.logger.trace({ messageId: message.id, channelId: message.channelId, reason: decision.reason }, "message ignored");
        return;
      }
      this.inSessionOrder(decision.message.sessionKey, () => this.deliver(message, decision.message, decision.truncatedFrom));
    } catch (error) {
      this.logger.warn({ messageId: message.id, error: errorMessage(error) }, "malformed discord message skipped");
    }
  }

  /** A button press: acknowledged at once (Discord's 3 s), then handed to the ingress in session order. */
  private onInteraction(interaction: Interaction): void {
    if (!interaction.isButton() || !this.ingress || this.stopping) return;
    try {
      const inbound = toInboundAction(interaction);
      const acknowledged = interaction.deferUpdate().catch((error: unknown) =>
        this.logger.warn({ interactionId: interaction.id, error: errorMessage(error) }, "interaction not acknowledged"));
      this.inSessionOrder(inbound.sessionKey, async () => {
        await acknowledged;
        const result = await this.submit(inbound);
        this.logger.debug({ messageId: inbound.messageId, status: result?.status }, "button press submitted");
      });
    } catch (error) {
      this.logger.warn({ interactionId: interaction.id, error: errorMessage(error) }, "malformed interaction skipped");
    }
  }

  /**
   * GUILD_DELETE without `unavailable`: the bot was removed from the guild, or it was deleted
   * (an outage sets `unavailable`). Read here, before discord.js handles the packet: it empties
   * the guild's channel cache before it emits guildDelete.
   */
  private onRawPacket(packet: { t?: string | null; d?: unknown }): void {
    if (packet.t !== "GUILD_DELETE") return;
    const data = packet.d as { id?: string; unavailable?: boolean } | undefined;
    if (!data?.id || data.unavailable) return;
    const guild = this.client.guilds.cache.get(data.id);
    if (guild) this.closeChats([...guild.channels.cache.keys()], "removed from the guild");
  }

  /** Tells the ingress, with the submit's retries; the gateway never sends the event again. */
  private closeChats(chatIds: readonly string[], reason: string): void {
    const ingress = this.ingress;
    const closed = ingress?.chatClosed;
    if (!closed || chatIds.length === 0) return;
    this.inSessionOrder(`closed:${chatIds[0]}`, async () => {
      for (const chatId of chatIds) await this.retried({ chatId }, "chat-closed not recorded", () => closed.call(ingress, "discord", chatId));
      this.logger.info({ chats: chatIds.length, reason }, "discord chats closed for the bot");
    });
  }

  private inSessionOrder(sessionKey: string, task: () => Promise<void>): void {
    const previous = this.sessionChains.get(sessionKey) ?? Promise.resolve();
    const next = previous.then(task).catch((error: unknown) =>
      this.logger.error({ sessionKey, error: errorMessage(error) }, "discord message handling failed"));
    this.sessionChains.set(sessionKey, next);
    void next.finally(() => {
      if (this.sessionChains.get(sessionKey) === next) this.sessionChains.delete(sessionKey);
    });
  }

  private async deliver(message: Message, inbound: DiscordInboundMessage, truncatedFrom: number | undefined): Promise<void> {
    const log = { messageId: inbound.messageId, sessionKey: inbound.sessionKey };
    const result = await this.submit(inbound);
    if (result === undefined) {
      await this.replyNotice(message, SUBMIT_FAILED_NOTICE, "submit-failed");
      return;
    }
    this.logger.debug({ ...log, status: result.status }, "message submitted");
    switch (result.status) {
      case "accepted":
        if (truncatedFrom !== undefined) {
          await this.replyNotice(message, `Your message was ${truncatedFrom} characters long; I only read the first ${inbound.text.length}.`, "truncated");
        }
        return;
      case "duplicate":
        return;
      case "denied":
      case "rate-limited":
        if (result.notice) await this.replyNotice(message, result.notice, result.status);
        return;
    }
  }

  /** Submits with retries; undefined when every attempt failed. */
  private async submit(inbound: DiscordInboundMessage): Promise<SubmitResult | undefined> {
    const ingress = this.ingress;
    if (!ingress) return undefined;
    return this.retried({ messageId: inbound.messageId }, "ingress submit failed", () => ingress.submit(inbound));
  }

  /** An ingress call, retried after each of submitRetryDelaysMs; undefined when every attempt failed. */
  private async retried<T>(context: Record<string, unknown>, failure: string, call: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await call();
      } catch (error) {
        const delay = this.submitRetryDelaysMs[attempt];
        this.logger.warn({ ...context, attempt: attempt + 1, error: errorMessage(error) }, failure);
        if (delay === undefined) return undefined;
        await sleep(delay);
      }
    }
  }

  /** A notice straight from the adapter (access, rate limit, truncation), as a reply. */
  private async replyNotice(message: Message, text: string, kind: string): Promise<void> {
    try {
      const channel = message.channel.isSendable() ? message.channel : await this.resolveChannel(message.channelId);
      await sendParts(channel, splitMessage(text), { replyToMessageId: message.id, fromPart: 0, nonceKey: `${message.id}:${kind}` });
    } catch (error) {
      this.logger.warn({ messageId: message.id, kind, error: errorMessage(error) }, "notice not sent");
    }
  }

  /** A channel from the cache, else from REST (after a restart, or a DM not seen yet). */
  private async resolveChannel(channelId: string): Promise<SendableChannels> {
    let channel;
    try {
      channel = this.client.channels.cache.get(channelId) ?? (await this.client.channels.fetch(channelId));
    } catch (error) {
      throw toSendError(error, `fetch channel ${channelId}`);
    }
    if (!channel?.isSendable()) throw new PermanentError(`Discord channel ${channelId} cannot take messages`);
    return channel;
  }

  private startTyping(sessionKey: string, channelId: string): void {
    this.stopTyping(sessionKey);
    if (this.stopping) return;
    const tick = (): void => void this.sendTyping(channelId);
    const interval = setInterval(tick, this.typingIntervalMs);
    const timeout = setTimeout(() => this.stopTyping(sessionKey), this.typingTimeoutMs);
    interval.unref();
    timeout.unref();
    this.typingLoops.set(sessionKey, { interval, timeout });
    tick();
  }

  private stopTyping(sessionKey: string): void {
    const loop = this.typingLoops.get(sessionKey);
    if (!loop) return;
    clearInterval(loop.interval);
    clearTimeout(loop.timeout);
    this.typingLoops.delete(sessionKey);
  }

  /** Fire-and-forget: a typing indicator is never worth an error. */
  private async sendTyping(channelId: string): Promise<void> {
    try {
      const channel = await this.resolveChannel(channelId);
      await channel.sendTyping();
    } catch (error) {
      this.logger.debug({ channelId, error: errorMessage(error) }, "typing indicator not sent");
    }
  }
}
