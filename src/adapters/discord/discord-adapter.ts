import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import { Client, DiscordAPIError, Events, GatewayIntentBits, Partials, Status, type Interaction, type Message, type SendableChannels } from "discord.js";
import { PermanentError, errorMessage } from "../../errors.js";
import { silentLogger, type Logger } from "../../logger.js";
import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions, TurnActivity } from "../channel-adapter.js";
import { buttonRow, replaceMessage, toInboundAction } from "./actions.js";
import { syncCommandsQuietly } from "./commands.js";
import { takeSlashCommand } from "./slash-commands.js";
import { InteractionReplies } from "./interactions.js";
import { DEFAULT_BACKFILL_LIMITS, runBackfill, type BackfillLimits } from "./backfill.js";
import { Intake } from "./intake.js";
import { DiscordPreviews, editFinal, removeReplaced } from "./previews.js";
import { NO_MENTIONS, sendParts, toSendError } from "./send-reply.js";
import { sendDocuments } from "./send-documents.js";
import { splitMessage } from "./split.js";
import { TypingIndicators } from "./typing.js";
import { createHash } from "node:crypto";
import type { SendBudget, SendPriority } from "../../core/send-budget.js";
import { withSendPriority } from "../send-priority.js";
import { budgetedRequest } from "./send-budget.js";

/** The acknowledgement reaction (ACK_REACTIONS). */
const ACK_EMOJI = "👀";

export interface DiscordAdapterOptions {
  /** Bot token (DISCORD_BOT_TOKEN). Never logged. */
  token: string;
  /** REST root; the gateway URL comes from its `/gateway/bot`. @defaultValue "https://discord.com/api" */
  apiRoot?: string;
  /** Channel ids answered without a mention (DISCORD_ALWAYS_ON_CHANNELS); threads inherit. @defaultValue [] */
  alwaysOnChannels?: readonly string[];
  /**
   * Channels caught up after a reconnect, with their threads (ALLOWED_DISCORD_CHANNELS and the
   * always-on ones); DMs are caught up regardless. @defaultValue alwaysOnChannels
   */
  backfillChannels?: readonly string[];
  /** Longer inbound text is truncated with a notice (MAX_MESSAGE_CHARS). @defaultValue 16000 */
  maxMessageChars?: number;
  /** In guild channels the reply pings the person who asked (DISCORD_PING_ON_REPLY); never in DMs. @defaultValue true */
  pingOnReply?: boolean;
  /** React 👀 to a message once the ingress took it (ACK_REACTIONS). @defaultValue false */
  ackReactions?: boolean;
  /** Register the command registry as global slash commands at start, by difference (docs/discord.md). @defaultValue true */
  slashCommands?: boolean;
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
  /** A text attachment (a long paste's message.txt) must be downloaded within this. @defaultValue 10000 */
  textFileTimeoutMs?: number;
  /** Deadline of one ingress attempt (a store that never answers is logged and retried). @defaultValue 10000 */
  submitAttemptTimeoutMs?: number;
  /** @defaultValue DEFAULT_BACKFILL_LIMITS (6 h, 100 per channel, DMs of the last 7 days, 100 of them) */
  backfillLimits?: Partial<BackfillLimits>;
  /** Live messages wait at most this long behind a backfill before going ahead anyway. @defaultValue 30000 */
  backfillHoldMs?: number;
  /** The send budget's size: the bot's REST requests in any second (DISCORD_REQUESTS_PER_SECOND). @defaultValue 45 */
  requestsPerSecond?: number;
}

/**
 * The bot's id for its send budget: a Discord token starts with the bot's user id in base64;
 * anything else is named by a digest. Never the token itself.
 */
function budgetIdOf(token: string): string {
  const id = Buffer.from(token.split(".")[0] ?? "", "base64").toString("utf8");
  return /^\d{5,25}$/.test(id) ? id : createHash("sha256").update(token).digest("hex").slice(0, 16);
}

/** Gateway close codes after which discord.js gives up, with what the operator must fix. */
const CLOSE_HINTS: Record<number, string> = {
  4004: "the bot token was rejected: check DISCORD_BOT_TOKEN",
  4010: "invalid shard: check the shard settings",
  4011: "sharding required: the bot is in too many servers (2,500+) for one gateway connection; run it with several shards",
  4012: "invalid API version: update discord.js",
  4013: "invalid intents",
  4014: "disallowed intents: enable the Message Content intent for the bot in the Discord Developer Portal (Bot → Privileged Gateway Intents)",
};

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
  private readonly watchedChannels: ReadonlySet<string>;
  /** Channels that refused the acknowledgement reaction. */
  private readonly noReactions = new Set<string>();
  private readonly interactions: InteractionReplies;
  /** The slash command sync started at login; shutdown waits for it (bounded). */
  private commandSync: Promise<void> = Promise.resolve();
  private ingress: IngressPort | undefined;
  private intake: Intake | undefined;
  private backfilling: Promise<void> = Promise.resolve();
  private stopping: Promise<void> | undefined;
  /** The close code after which the gateway gave up, to name the fix if login fails. */
  private closeCode: number | undefined;
  private sendBudget: SendBudget | undefined;
  /** REST calls the send budget refused (previews and typing skipped, replies handed back), by priority. */
  readonly budgetRefusals: Record<SendPriority, number> = { final: 0, notice: 0, preview: 0, typing: 0 };

  constructor(options: DiscordAdapterOptions) {
    this.options = options;
    this.token = options.token;
    this.logger = (options.logger ?? silentLogger).child({ adapter: "discord" });
    const botId = budgetIdOf(options.token);
    this.watchedChannels = new Set([...(options.backfillChannels ?? []), ...(options.alwaysOnChannels ?? [])]);
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
        // Every REST call asks the bot's send budget first (shared by all gateways through Redis).
        makeRequest: budgetedRequest({
          budget: () => this.sendBudget,
          bot: () => botId,
          perSecond: options.requestsPerSecond ?? 45,
          onRefused: (priority) => {
            this.budgetRefusals[priority]++;
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
    this.client.on(Events.MessageCreate, (message) => this.intake?.receive(message));
    // Every READY is a new session (first login, or after Discord refused a resume): what was
    // posted in between is only in the channel history.
    this.client.on(Events.ShardReady, (shardId) => this.startBackfill(shardId));
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

  useSendBudget(budget: SendBudget): void {
    this.sendBudget = budget;
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
      isWatched: (facts) => facts.isDirectMessage || this.watchedChannels.has(facts.channelId) || (facts.threadParentId !== null && this.watchedChannels.has(facts.threadParentId)),
      // No text of maxMessageChars characters takes more than 4 bytes each in UTF-8.
      maxTextFileBytes: maxMessageChars * 4,
      textFileTimeoutMs: this.options.textFileTimeoutMs ?? 10_000,
      submitRetryDelaysMs: this.options.submitRetryDelaysMs ?? [250, 1_000, 4_000],
      ...(this.options.submitAttemptTimeoutMs === undefined ? {} : { attemptTimeoutMs: this.options.submitAttemptTimeoutMs }),
      notify: (message, text, kind) => this.replyNotice(message, text, kind),
      ...(this.options.ackReactions === true ? { acknowledge: (message: Message) => this.acknowledge(message) } : {}),
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

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    const parts = splitMessage(reply.text);
    if (parts.length === 0) {
      this.logger.warn({ replyId: reply.replyId }, "empty reply not sent");
      this.typing.stop(reply.sessionKey);
      return;
    }
    let channel: SendableChannels;
    try {
      channel = await this.resolveChannel(reply.target.chatId);
    } catch (error) {
      this.typing.stop(reply.sessionKey);
      throw error;
    }
    const carrier = options.preview ? undefined : this.interactions.carrier(reply);
    if (carrier) {
      // The answer to a slash command (or a private one to a button press) goes through its interaction.
      const next = await this.interactions.deliver(carrier, reply, parts, options.fromPart, options.onPartSent);
      if (next >= parts.length + (reply.documents?.length ?? 0)) {
        this.typing.stop(reply.sessionKey);
        return;
      }
      return this.send(reply, { fromPart: next, onPartSent: options.onPartSent });
    }
    if (options.preview && !options.preview.only && options.fromPart <= 1) {
      // The final replaces the live preview: an edit never notifies, so the answer goes out as
      // new messages (with a nonce: a retried part 1 is not posted twice) and the silent status
      // is deleted once part 1 is out and recorded (even as the last part: the deletion
      // follows); the delivery that resumes at part 2 after a crash deletes it instead. Sending
      // also unarchives a thread archived meanwhile, where an edit would be refused (50083).
      const { messageId } = options.preview;
      if (options.fromPart === 1) {
        await removeReplaced(this.client, channel.id, messageId, this.logger);
        return this.send(reply, { fromPart: 1, onPartSent: options.onPartSent });
      }
      return this.send(reply, {
        fromPart: 0,
        onPartSent: async (partIndex, sent) => {
          if (partIndex !== 0) return options.onPartSent(partIndex, sent);
          await options.onPartSent(0, { ...sent, last: false });
          await removeReplaced(this.client, channel.id, messageId, this.logger);
        },
      });
    }
    if (options.preview && options.fromPart === 0) {
      // A preview-only reply (/stop) takes the live preview over: it is edited into it.
      const components = reply.actions?.length && parts.length === 1 ? buttonRow(reply.actions) : undefined;
      if (await editFinal(channel, reply, options.preview.messageId, parts[0] ?? "", components ? { components } : {})) {
        const done = options.preview.only || parts.length === 1;
        await options.onPartSent(0, { last: done });
        if (done) {
          this.typing.stop(reply.sessionKey);
          return;
        }
        return this.send(reply, { fromPart: 1, onPartSent: options.onPartSent });
      }
      await options.preview.onRefused();
      if (options.preview.only) return;
    }
    if (reply.replaces !== undefined && options.fromPart === 0 && (await replaceMessage(channel, reply, 2_000))) {
      await options.onPartSent(0, { last: true });
      return;
    }
    const documents = reply.documents ?? [];
    try {
      await sendParts(channel, parts, {
        ...(reply.actions?.length ? { lastPart: { components: buttonRow(reply.actions) } } : {}),
        // An interaction (`ix:`) is no message to reply to.
        replyToMessageId: [reply.target.replyToMessageId, reply.inReplyTo.at(-1)].find((id) => id !== undefined && !id.startsWith("ix:")),
        pingRepliedUser: this.pingsIn(channel),
        fromPart: options.fromPart,
        // The files go out after the text: its last part is the reply's last only without them.
        onPartSent: (partIndex, sent) => {
          const last = sent.last && documents.length === 0;
          if (last) this.typing.stop(reply.sessionKey);
          return options.onPartSent(partIndex, { last });
        },
        nonceKey: reply.replyId,
      });
      if (documents.length > 0) {
        await sendDocuments(channel, documents, { firstPart: parts.length, fromPart: options.fromPart, onPartSent: options.onPartSent, nonceKey: reply.replyId });
        this.typing.stop(reply.sessionKey);
      }
    } catch (error) {
      // Refused for good (no access, archived thread): nothing is coming, stop "typing".
      if (error instanceof PermanentError) this.typing.stop(reply.sessionKey);
      throw error;
    }
    if (options.fromPart >= parts.length + documents.length) this.typing.stop(reply.sessionKey);
    this.logger.debug({ replyId: reply.replyId, parts: parts.length, fromPart: options.fromPart }, "reply sent");
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
    await Promise.race([Promise.all([this.backfilling, this.commandSync]), sleep(5_000, undefined, { ref: false })]);
    // Let messages already handed over finish reaching the ingress.
    await this.intake?.close();
    await this.client.destroy();
    this.logger.info("discord stopped");
  }

  /** One backfill at a time; live messages wait behind it (at most backfillHoldMs) to keep order. */
  private startBackfill(shardId: number): void {
    const intake = this.intake;
    const run = this.backfilling.then(() => this.backfill(shardId));
    this.backfilling = run;
    if (intake) {
      const holdMs = this.options.backfillHoldMs ?? 30_000;
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          this.logger.warn({ shardId, holdMs }, "discord backfill still running; live messages no longer wait for it");
          resolve();
        }, holdMs);
        timer.unref();
      });
      void intake.hold(Promise.race([run, limit]).finally(() => clearTimeout(timer)));
    }
  }

  private async backfill(shardId: number): Promise<void> {
    const intake = this.intake;
    const cursors = this.ingress?.cursors;
    if (!intake || !cursors || this.stopping) return;
    try {
      const report = await runBackfill({
        client: this.client,
        cursors,
        channelIds: this.watchedChannels,
        enqueue: (message) => intake.enqueue(message),
        stopped: () => this.stopping !== undefined,
        logger: this.logger,
        limits: { ...DEFAULT_BACKFILL_LIMITS, ...this.options.backfillLimits },
      });
      const log = report.truncated.length > 0 ? this.logger.warn.bind(this.logger) : this.logger.info.bind(this.logger);
      log({ shardId, ...report }, report.truncated.length > 0 ? "discord backfill hit its bound; only the newest messages were caught up" : "discord backfill done");
    } catch (error) {
      this.logger.warn({ shardId, error: errorMessage(error) }, "discord backfill failed");
    }
  }

  /**
   * A button press or a slash command: stored first, acknowledged after (issue 28 item 7).
   * Discord never delivers an interaction again, so an acknowledgement sent before the press is
   * stored would tell the user "done" for a press a gateway crash then loses. Unacknowledged,
   * the user's client says "This interaction failed" and the button is still there to press
   * again. A store slower than Discord's 3 s costs the same message for a press that was taken
   * (logged). A reply through the interaction waits for its acknowledgement.
   */
  private onInteraction(interaction: Interaction): void {
    const intake = this.intake;
    if (!intake || this.stopping) return;
    if (interaction.isChatInputCommand()) return takeSlashCommand(interaction, { intake, interactions: this.interactions, logger: this.logger });
    if (!interaction.isButton()) return;
    try {
      const inbound = toInboundAction(interaction);
      let acknowledge: (done: Promise<unknown>) => void = () => undefined;
      this.interactions.remember(inbound.messageId, {
        id: interaction.id, applicationId: interaction.applicationId, token: interaction.token, createdAt: interaction.createdTimestamp, kind: "button", ephemeral: false,
        acknowledged: new Promise((resolve) => { acknowledge = resolve; }),
      });
      void intake.submitInOrder(inbound).then(async (result) => {
        this.logger.debug({ messageId: inbound.messageId, channelId: inbound.chatId, status: result?.status }, "button press submitted");
        if (result === undefined) return acknowledge(Promise.resolve());
        const done = interaction.deferUpdate().catch((error: unknown) =>
          this.logger.warn({ interactionId: interaction.id, channelId: inbound.chatId, status: result.status, error: errorMessage(error) }, "interaction not acknowledged (the press was stored)"));
        acknowledge(done);
        await done;
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
    if (guild) this.intake?.closeChats([...guild.channels.cache.keys()], "removed from the guild");
  }

  /** DISCORD_PING_ON_REPLY: in guild channels the reply pings the asker; a DM notifies anyway. */
  private pingsIn(channel: SendableChannels): boolean {
    return (this.options.pingOnReply ?? true) && !channel.isDMBased();
  }

  /**
   * 👀 on a message the ingress took (ACK_REACTIONS), fire and forget. A channel that refuses
   * it (no Add Reactions permission, reactions blocked, no access) is not asked again.
   */
  private acknowledge(message: Message): void {
    if (this.noReactions.has(message.channelId)) return;
    message.react(ACK_EMOJI).catch((error: unknown) => {
      if (error instanceof DiscordAPIError && error.status >= 400 && error.status < 500 && error.status !== 429) {
        this.noReactions.add(message.channelId);
        this.logger.info({ channelId: message.channelId, code: error.code }, "discord channel refuses the acknowledgement reaction; not reacting there any more");
        return;
      }
      this.logger.debug({ channelId: message.channelId, error: errorMessage(error) }, "acknowledgement reaction not added");
    });
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
