import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { Client, Events, GatewayIntentBits, Partials, Status, type Interaction, type Message, type SendableChannels } from "discord.js";
import { PermanentError, errorMessage } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions, TurnActivity } from "../channel-adapter.js";
import { syncCommandsQuietly } from "./commands.js";
import { takeSlashCommand } from "./slash-commands.js";
import { takeButtonPress } from "./button-presses.js";
import { InteractionReplies } from "./interactions.js";
import { CatchUp } from "./catch-up.js";
import { Intake } from "./intake.js";
import { DiscordPreviews } from "./previews.js";
import { ReplySender } from "./deliver-reply.js";
import { NO_MENTIONS, sendParts, toSendError } from "./send-reply.js";
import { splitMessage } from "./split.js";
import { TypingIndicators } from "./typing.js";
import { AckReactions } from "./reactions.js";
import { EmbedUpdates } from "./embed-updates.js";
import type { SendBudget, SendPriority, SendRefusalListener } from "../../core/send-budget.js";
import { withSendPriority } from "../send-priority.js";
import { budgetedRestOptions } from "./send-budget.js";
import { budgetIdOf, CLOSE_HINTS, type DiscordAdapterOptions } from "./options.js";

export type { DiscordAdapterOptions } from "./options.js";

/**
 * The Discord side of longhaul: one gateway connection (one shard) that hands messages to the
 * intake, catches up after every new session (backfill), and the REST client that sends
 * replies. See docs/discord.md.
 */
export class DiscordAdapter implements ChannelAdapter {
  readonly platform = "discord" as const;

  private readonly client: Client;
  private readonly token: string;
  private readonly logger: Logger;
  private readonly options: DiscordAdapterOptions;
  private readonly typing: TypingIndicators;
  readonly previews: DiscordPreviews;
  private readonly interactions: InteractionReplies;
  private readonly replies: ReplySender;
  private readonly catchUp: CatchUp;
  private readonly reactions: AckReactions | undefined;
  private readonly embedUpdates = new EmbedUpdates();
  /** The slash command sync started at login; shutdown waits for it (bounded). */
  private commandSync: Promise<void> = Promise.resolve();
  private ingress: IngressPort | undefined;
  private intake: Intake | undefined;
  private stopping: Promise<void> | undefined;
  /** The close code after which the gateway gave up, to name the fix if login fails. */
  private closeCode: number | undefined;
  private sendBudget: SendBudget | undefined;
  private onBudgetRefused: SendRefusalListener | undefined;
  /** REST calls the send budget refused (previews and typing skipped, replies handed back), by priority. */
  readonly budgetRefusals: Record<SendPriority, number> = { final: 0, notice: 0, preview: 0, typing: 0 };

  constructor(options: DiscordAdapterOptions) {
    this.options = options;
    this.token = options.token;
    this.logger = (options.logger ?? silentLogger).child({ adapter: "discord" });
    const botId = budgetIdOf(options.token);
    this.client = new Client({
      // 37377. MessageContent is privileged: enable it in the Developer Portal, or guild
      // messages that do not mention the bot arrive with empty content.
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent, GatewayIntentBits.DirectMessages],
      // DM channels are never cached ahead of time; without this partial DMs are dropped.
      partials: [Partials.Channel],
      allowedMentions: NO_MENTIONS,
      // The user may delete their message while the model thinks; reply without the reference.
      failIfNotExists: false,
      rest: {
        api: options.apiRoot ?? "https://discord.com/api",
        // Every REST call asks the bot's send budget first (shared by all gateways through Redis);
        // the hook also keeps discord.js's per-process global limit, counting only what it sends.
        ...budgetedRestOptions({
          budget: () => this.sendBudget,
          bot: () => botId,
          perSecond: options.requestsPerSecond ?? 45,
          onRefused: (priority) => {
            this.budgetRefusals[priority]++;
            this.onBudgetRefused?.(priority);
          },
        }),
      },
    });
    this.previews = new DiscordPreviews(this.client, this.logger);
    this.interactions = new InteractionReplies({ rest: this.client.rest, logger: this.logger });
    this.typing = new TypingIndicators({
      intervalMs: options.typingIntervalMs ?? 8_000,
      timeoutMs: options.typingTimeoutMs ?? 600_000,
      resolveChannel: (channelId) => this.resolveChannel(channelId),
      logger: this.logger,
    });
    this.replies = new ReplySender({
      client: this.client, logger: this.logger, typing: this.typing, interactions: this.interactions,
      resolveChannel: (channelId) => this.resolveChannel(channelId),
      pingsIn: (channel) => this.pingsIn(channel),
    });
    this.catchUp = new CatchUp({
      client: this.client,
      logger: this.logger,
      channelIds: new Set([...(options.backfillChannels ?? []), ...(options.alwaysOnChannels ?? [])]),
      ...(options.backfillLimits ? { limits: options.backfillLimits } : {}),
      holdMs: options.backfillHoldMs ?? 30_000,
      intake: () => this.intake,
      cursors: () => this.ingress?.cursors,
      stopped: () => this.stopping !== undefined,
    });
    this.reactions = options.ackReactions === true ? new AckReactions(this.logger) : undefined;
    this.client.on(Events.MessageCreate, (message) => this.intake?.receive(message));
    // A link's preview (a GIF's gifv embed) Discord adds after the message: a waiting intake reads it.
    this.client.on(Events.MessageUpdate, (_old, updated) => this.embedUpdates.updated(updated.id));
    // Every READY is a new session (first login, or after Discord refused a resume): what was
    // posted in between is only in the channel history.
    this.client.on(Events.ShardReady, (shardId) => this.catchUp.start(shardId));
    this.client.on(Events.InteractionCreate, (interaction) => this.onInteraction(interaction));
    // Chats the bot lost: what they scheduled goes (docs/reminders.md).
    this.client.on(Events.Raw, (packet: { t?: string | null; d?: unknown }) => this.onRawPacket(packet));
    this.client.on(Events.ChannelDelete, (channel) => {
      if (channel.isDMBased()) return;
      this.intake?.closeChats([channel.id, ...("threads" in channel ? channel.threads.cache.keys() : [])], "channel deleted");
    });
    this.client.on(Events.ThreadDelete, (thread) => this.intake?.closeChats([thread.id], "thread deleted"));
    this.client.on(Events.Error, (error) => this.logger.error({ error: errorMessage(error) }, "discord client error"));
    this.client.on(Events.ShardError, (error, shardId) => this.logger.warn({ shardId, error: errorMessage(error) }, "discord gateway error"));
    this.client.on(Events.ShardDisconnect, (event, shardId) => {
      this.closeCode = event.code;
      this.logger.error({ shardId, code: event.code, hint: CLOSE_HINTS[event.code] }, "discord gateway closed for good");
    });
    this.client.on(Events.ShardReconnecting, (shardId) => this.logger.info({ shardId }, "discord gateway reconnecting"));
    this.client.on(Events.ShardResume, (shardId, replayed) => this.logger.info({ shardId, replayed }, "discord gateway resumed"));
    this.client.on(Events.Warn, (warning) => this.logger.warn({ warning }, "discord client warning"));
    this.client.rest.on("rateLimited", (info) =>
      this.logger.debug({ route: info.route, retryAfterMs: info.retryAfter, global: info.global }, "discord rate limit hit; request queued"));
  }

  useSendBudget(budget: SendBudget, onRefused?: SendRefusalListener): void {
    this.sendBudget = budget;
    this.onBudgetRefused = onRefused;
  }

  async start(ingress: IngressPort): Promise<void> {
    if (this.intake) throw new Error("DiscordAdapter.start called twice");
    this.ingress = ingress;
    const maxMessageChars = this.options.maxMessageChars ?? 16_000;
    this.intake = new Intake({
      ingress,
      logger: this.logger,
      botUser: () => this.client.user,
      rules: { alwaysOnChannels: new Set(this.options.alwaysOnChannels ?? []), maxMessageChars },
      isWatched: (facts) => {
        const watched = this.catchUp.channelIds;
        return facts.isDirectMessage || watched.has(facts.channelId) || (facts.threadParentId !== null && watched.has(facts.threadParentId));
      },
      // No text of maxMessageChars characters takes more than 4 bytes each in UTF-8.
      maxTextFileBytes: maxMessageChars * 4,
      textFileTimeoutMs: this.options.textFileTimeoutMs ?? 10_000,
      submitRetryDelaysMs: this.options.submitRetryDelaysMs ?? [250, 1_000, 4_000],
      ...(this.options.submitAttemptTimeoutMs === undefined ? {} : { attemptTimeoutMs: this.options.submitAttemptTimeoutMs }),
      notify: (message, text, kind) => this.replyNotice(message, text, kind),
      ...(this.reactions ? { acknowledge: (message: Message) => this.reactions?.acknowledge(message) } : {}),
      embedsAdded: (message, ms) => this.embedUpdates.wait(message, ms),
      ...(this.options.gifEmbedWaitMs === undefined ? {} : { gifEmbedWaitMs: this.options.gifEmbedWaitMs }),
    });
    if (!ingress.cursors) this.logger.warn("the ingress keeps no channel cursors: messages posted while disconnected will not be caught up");
    const abort = new AbortController();
    const ready = once(this.client, Events.ClientReady, { signal: abort.signal });
    try {
      await this.client.login(this.token);
      await ready;
    } catch (error) {
      ready.catch(() => undefined);
      abort.abort();
      await this.client.destroy().catch(() => undefined);
      const hint = this.closeCode === undefined ? undefined : CLOSE_HINTS[this.closeCode];
      throw new PermanentError(`Discord login failed: ${errorMessage(error)}${hint ? ` (${hint})` : ""}`, { cause: error });
    }
    const user = this.client.user;
    this.logger.info({ botUserId: user?.id, botName: user?.username, guilds: this.client.guilds.cache.size }, "discord connected");
    if (this.options.slashCommands ?? true) this.commandSync = syncCommandsQuietly(this.client.rest, this.client.application?.id, this.logger);
  }

  send(reply: OutboundReply, options: SendOptions): Promise<void> {
    return this.replies.send(reply, options);
  }

  onActivity(activity: TurnActivity): void {
    try {
      if (activity.target.platform !== "discord" || this.stopping) return;
      if (activity.type === "turn-started") this.typing.start(activity.sessionKey, activity.target.chatId);
      else this.typing.stop(activity.sessionKey);
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
    this.typing.stopAll();
    // A backfill notices `stopping` between channels; one stuck on a dead dependency is not waited for long.
    await Promise.race([Promise.all([this.catchUp.settled, this.commandSync]), sleep(5_000, undefined, { ref: false })]);
    // Let messages already handed over finish reaching the ingress.
    await this.intake?.close();
    await this.client.destroy();
    this.logger.info("discord stopped");
  }

  /** A slash command or a button press: stored first, acknowledged after (slash-commands.ts, button-presses.ts). */
  private onInteraction(interaction: Interaction): void {
    const intake = this.intake;
    if (!intake || this.stopping) return;
    const ports = { intake, interactions: this.interactions, logger: this.logger };
    if (interaction.isChatInputCommand()) takeSlashCommand(interaction, ports);
    else if (interaction.isButton()) takeButtonPress(interaction, ports);
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
    if (guild) this.intake?.closeChats([...guild.channels.cache.keys()], "removed from the guild");
  }

  /** DISCORD_PING_ON_REPLY: in guild channels the reply pings the asker; a DM notifies anyway. */
  private pingsIn(channel: SendableChannels): boolean {
    return (this.options.pingOnReply ?? true) && !channel.isDMBased();
  }

  /** A notice straight from the adapter (access, rate limit, truncation, unreadable files), as a reply. */
  private async replyNotice(message: Message, text: string, kind: string): Promise<void> {
    try {
      const channel = message.channel.isSendable() ? message.channel : await this.resolveChannel(message.channelId);
      await withSendPriority("notice", () => sendParts(channel, splitMessage(text), {
        replyToMessageId: message.id, pingRepliedUser: this.pingsIn(channel), fromPart: 0, nonceKey: `${message.id}:${kind}`,
      }));
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
}
