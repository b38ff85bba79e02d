/**
 * The Telegram adapter (SPEC §6): grammY in, normalised messages to the ingress, replies out.
 * Long polling (polling.ts: an update is confirmed only once stored) by default; webhook mode
 * (for several gateway replicas) when a webhook URL is configured (connect.ts). Updates are
 * handled by intake.ts. Access control, dedupe and persistence are the ingress's.
 */
import { GrammyError, type Bot } from "grammy";
import type { BotCommandScope } from "grammy/types";
import type { ChannelAdapter, ChatMoveResult, IngressPort, OutboundReply, ReplyTarget, SendOptions, TurnActivity } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { createBot, previewApi } from "./bot.js";
import { connectPolling, connectWebhook, webhookRoutes, type HttpHandler } from "./connect.js";
import { UpdateIntake } from "./intake.js";
import type { Poller } from "./polling.js";
import { describeError, replyParts, sendReply, toApiSignal, toTelegramError } from "./send-reply.js";
import { editFinal, TelegramPreviews } from "./previews.js";
import { DEFAULT_PART_LENGTH } from "./split.js";
import { TELEGRAM_MENU_SCOPES, telegramCommands } from "./to-inbound-message.js";
import { sendDocuments } from "./send-documents.js";
import { sendVoiceReply } from "./send-voice.js";
import { inlineKeyboard, replaceMessage } from "./actions.js";
import { TypingIndicators } from "./typing.js";
import { AckReactions } from "./reactions.js";
import { PressAnswers } from "./press-answers.js";
import type { WebhookHealth } from "./webhook.js";
import type { TelegramAdapterOptions } from "./options.js";
import type { SendBudget, SendPriority, SendRefusalListener } from "../../core/send-budget.js";
import { withSendPriority } from "../send-priority.js";
import { sendOverPreview } from "../preview-final.js";
import { DEFAULT_TELEGRAM_SEND_LIMITS } from "./send-budget.js";

export type { TelegramAdapterOptions } from "./options.js";
export { TELEGRAM_WEBHOOK_PATH } from "./connect.js";
export { SUBMIT_FAILED_NOTICE } from "./intake.js";

/** A button press's inbound message id (actions.ts): `cb:<callback query id>`. */
const isPress = (messageId: string): boolean => messageId.startsWith("cb:");

export class TelegramAdapter implements ChannelAdapter {
  readonly platform = "telegram" as const;
  private readonly bot: Bot;
  private readonly logger: Logger;
  private readonly options: TelegramAdapterOptions;
  private readonly mode: "polling" | "webhook";
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly abort = new AbortController();
  private readonly typing: TypingIndicators;
  readonly previews: TelegramPreviews;
  private readonly reactions: AckReactions | undefined;
  private readonly intake: UpdateIntake;
  private readonly presses: PressAnswers;
  /** Old chat id → new one, for notices to a group that became a supergroup. */
  private readonly migrations = new Map<string, string>();
  private ingress: IngressPort | undefined;
  private poller: Poller | undefined;
  private webhookHealth: WebhookHealth | undefined;
  private routes: Map<string, HttpHandler> | undefined;
  private state: "new" | "starting" | "running" | "stopped" = "new";
  private startupHealthy = true;
  private sendBudget: SendBudget | undefined;
  private onBudgetRefused: SendRefusalListener | undefined;
  /** Calls the send budget refused (previews and typing skipped, replies handed back), by priority. */
  readonly budgetRefusals: Record<SendPriority, number> = { final: 0, notice: 0, preview: 0, typing: 0 };

  constructor(options: TelegramAdapterOptions) {
    if (options.webhookUrl !== undefined && options.webhookSecret === undefined) {
      throw new Error("TELEGRAM_WEBHOOK_SECRET is required with TELEGRAM_WEBHOOK_URL: without it anyone could post updates to the webhook");
    }
    this.options = options;
    this.mode = options.webhookUrl === undefined ? "polling" : "webhook";
    this.logger = options.logger.child({ adapter: "telegram" });
    const budget = {
      budget: () => this.sendBudget,
      // The token's first part is the bot's id; the token itself never leaves the adapter.
      bot: options.token.split(":")[0] ?? "bot",
      limits: options.sendLimits ?? DEFAULT_TELEGRAM_SEND_LIMITS,
      onRefused: (priority: SendPriority) => {
        this.budgetRefusals[priority]++;
        this.onBudgetRefused?.(priority);
      },
    };
    this.bot = createBot(options, this.logger, () => {
      this.startupHealthy = false;
    }, budget);
    this.presses = new PressAnswers(this.bot.api, this.logger, options.pressAnswerHoldMs ?? 5_000, (call) => this.track(call));
    this.intake = new UpdateIntake({
      api: this.bot.api,
      logger: this.logger,
      mode: this.mode,
      maxMessageChars: options.maxMessageChars,
      ...(options.submitRetryDelaysMs ? { submitRetryDelaysMs: options.submitRetryDelaysMs } : {}),
      ...(options.submitAttemptTimeoutMs !== undefined ? { submitAttemptTimeoutMs: options.submitAttemptTimeoutMs } : {}),
      botInfo: () => this.bot.botInfo,
      ingress: () => this.ingress,
      stopped: () => this.state === "stopped",
      moveChat: (fromChatId, toChatId) => this.moveChat(fromChatId, toChatId),
      notify: (target, text, reason) => this.notify(target, text, reason),
      holdPress: (messageId, queryId) => this.presses.hold(messageId, queryId),
      ...(options.ackReactions === true ? { acknowledge: (target: ReplyTarget, messageId: string) => this.reactions?.acknowledge(target, messageId) } : {}),
    });
    this.bot.use((context) => {
      this.webhookHealth?.received();
      return this.intake.handleUpdate(context.update);
    });
    this.previews = new TelegramPreviews(previewApi(options, budget), this.logger);
    this.reactions = options.ackReactions === true ? new AckReactions(previewApi(options), this.logger, (call) => this.track(call)) : undefined;
    this.typing = new TypingIndicators({
      api: this.bot.api,
      logger: this.logger,
      intervalMs: options.typingIntervalMs ?? 4000,
      maxMs: options.typingMaxMs ?? 600_000,
      signal: this.abort.signal,
      track: (call) => this.track(call),
    });
  }

  useSendBudget(budget: SendBudget, onRefused?: SendRefusalListener): void {
    this.sendBudget = budget;
    this.onBudgetRefused = onRefused;
  }

  get httpRoutes(): ReadonlyMap<string, HttpHandler> | undefined {
    return this.routes;
  }

  /** The bot's @username (known once started). */
  get username(): string | undefined {
    return this.bot.isInited() ? this.bot.botInfo.username : undefined;
  }

  async start(ingress: IngressPort): Promise<void> {
    if (this.state !== "new") throw new Error(`telegram adapter cannot start: it is ${this.state}`);
    this.state = "starting";
    this.ingress = ingress;
    try {
      await this.startIntake();
    } catch (error) {
      if (this.state === "starting") this.state = "new";
      this.routes = undefined;
      // Never rethrow grammY's error itself: its fields hold the token-bearing URL or the payload.
      throw toTelegramError(error);
    }
    if (this.state !== "starting") {
      // stop() ran while we were starting: undo what started.
      await this.poller?.stop(0);
      throw new Error("telegram adapter was stopped while starting");
    }
    this.state = "running";
  }

  private async startIntake(): Promise<void> {
    // grammY retries getMe on network errors until it gets an answer (logged by bot.ts): a
    // gateway started while Telegram is unreachable waits for it; stop() cancels the wait.
    await this.bot.init(toApiSignal(this.abort.signal));
    this.startupHealthy = true;
    const me = this.bot.botInfo;
    if (!me.can_read_all_group_messages) {
      // Telegram never delivers the later parts of a split paste nor an album's other items to a
      // privacy-mode bot in a group (they neither mention it nor start with "/").
      this.logger.warn({ username: me.username }, "privacy mode is on: in groups the bot sees only commands, mentions and replies to it, so the rest of a long paste and an album's other photos never reach it; turn it off with BotFather /setprivacy (then remove and re-add the bot to each group), or make the bot a group admin");
    }
    // One menu per scope from the command registry: private chats, groups, group admins.
    for (const { scope, menu } of TELEGRAM_MENU_SCOPES) this.track(this.syncMenu(scope, telegramCommands(menu)));
    const connection = { me, bot: this.bot, options: this.options, logger: this.logger, signal: this.abort.signal };
    if (this.mode === "webhook" && this.options.webhookUrl !== undefined) {
      this.routes = webhookRoutes(this.bot, this.options, () => this.state === "running", this.logger);
      this.webhookHealth = await connectWebhook(connection, this.options.webhookUrl);
      return;
    }
    this.poller = await connectPolling(connection);
  }

  /**
   * Sets one scope's menu, only when Telegram holds a different one: every gateway start (each
   * replica, each restart) would otherwise rewrite all three. A failure leaves the old menu; the
   * commands still work when typed.
   */
  private async syncMenu(scope: BotCommandScope, commands: Array<{ command: string; description: string }>): Promise<void> {
    const signal = toApiSignal(this.abort.signal);
    try {
      const current = await this.bot.api.getMyCommands({ scope }, signal).catch(() => undefined);
      const same = current !== undefined && current.length === commands.length
        && current.every((entry, index) => entry.command === commands[index]?.command && entry.description === commands[index]?.description);
      if (same) {
        this.logger.debug({ scope: scope.type }, "telegram command menu unchanged");
        return;
      }
      await this.bot.api.setMyCommands(commands, { scope }, signal);
    } catch (error) {
      this.logger.warn({ scope: scope.type, err: describeError(error) }, "setMyCommands failed; commands still work when typed");
    }
  }

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    // Which part is on the wire, through every path below (record-before-exit: SendOptions.onPartRequest).
    const wire = options.onPartRequest ? { onPartRequest: options.onPartRequest } : {};
    if (this.presses.holds(reply.inReplyTo)) {
      // The reply to a button press: the presser's alone (the wrong person pressed) is shown to
      // them as an alert, not to the chat; any other stops the spinner and goes out as usual.
      if (reply.private === true && options.fromPart === 0 && (await this.presses.answer(reply.inReplyTo, reply.text))) {
        return options.onPartSent(0, { last: true });
      }
      await this.presses.answer(reply.inReplyTo);
    }
    if (reply.private === true && reply.inReplyTo.length > 0 && reply.inReplyTo.every(isPress)) {
      // The presser's alone, but no alert could carry it (the press's hold ran out, another
      // gateway holds it, or Telegram refused the answer): sent to the chat, everyone would read it.
      this.logger.info({ chatId: reply.target.chatId, replyId: reply.replyId }, "private answer to a button press not shown (no alert could carry it); not sent to the chat");
      return options.onPartSent(0, { last: true });
    }
    if (options.preview) {
      const { messageId } = options.preview;
      const decided = await sendOverPreview(options.preview, options, {
        send: (fromPart, onPartSent) => this.send(reply, { fromPart, onPartSent, ...wire }),
        remove: () => this.removePreview(reply.target.chatId, Number(messageId)),
        edit: () => {
          const parts = replyParts(reply.text, this.options.maxPartLength ?? DEFAULT_PART_LENGTH);
          const keyboard = reply.actions?.length && parts.length === 1 ? { reply_markup: inlineKeyboard(reply.actions) } : {};
          return editFinal(this.bot.api, reply.target, messageId, parts[0] ?? "", keyboard, this.logger);
        },
        finished: () => {
          if (reply.kind === "answer") this.typing.stop(reply.sessionKey);
        },
      });
      if (decided) return;
    }
    if (reply.voice) {
      const { voice, ...text } = reply;
      await sendVoiceReply(this.bot.api, { ...reply, voice }, {
        fromPart: options.fromPart, onPartSent: options.onPartSent, logger: this.logger, ...wire,
        // The text's parts are reported by send-voice.ts under the reply's indices, both reports alike.
        sendText: (fromPart, reports) => this.send(text, { fromPart, ...reports }),
      });
      if (reply.kind === "answer") this.typing.stop(reply.sessionKey);
      return;
    }
    if (reply.replaces !== undefined && options.fromPart === 0 && (await replaceMessage(this.bot.api, reply, this.logger))) {
      return options.onPartSent(0, { last: true });
    }
    const documents = reply.documents?.length ?? 0;
    const { parts } = await sendReply(this.bot.api, reply.target, reply.text, {
      fromPart: options.fromPart,
      // The files go out after the text: its last part is the reply's last only without them.
      onPartSent: (partIndex, sent) => options.onPartSent(partIndex, { ...sent, last: sent.last && documents === 0 }),
      maxPartLength: this.options.maxPartLength ?? DEFAULT_PART_LENGTH,
      linkPreviews: this.options.linkPreviews ?? false,
      // The reply came from the old chat's session: once that session moved, the moved outbox
      // (rewritten to the new id) is delivered by the new session; this delivery stops.
      onChatMigrated: async (fromChatId, toChatId) => {
        const result = await this.moveChat(fromChatId, toChatId);
        return (result === "moved" || result === "already-moved") && reply.sessionKey === sessionKeyOf(fromChatId) ? "stop" : "continue";
      },
      logger: this.logger,
      ...(reply.actions?.length ? { lastPart: { reply_markup: inlineKeyboard(reply.actions) } } : {}),
      ...wire,
    });
    if (reply.documents && documents > 0) await sendDocuments(this.bot.api, reply.target, reply.documents, { firstPart: parts, fromPart: options.fromPart, onPartSent: options.onPartSent, logger: this.logger, ...wire });
    // The answer is out: Telegram clears "typing…" when our message arrives; keep it cleared.
    if (reply.kind === "answer" && parts > 0) this.typing.stop(reply.sessionKey);
  }

  /**
   * Deletes a replaced preview; one already gone (deleted by the user, or by an earlier
   * attempt: a delivery resumed at part 2 asks again) is fine. Any other refusal (a status
   * older than 48 hours) is logged: the answer is out either way.
   */
  private async removePreview(chatId: string, messageId: number): Promise<void> {
    try {
      await this.bot.api.deleteMessage(this.migrations.get(chatId) ?? chatId, messageId);
    } catch (error) {
      const gone = error instanceof GrammyError && /message to delete not found/i.test(error.description);
      this.logger[gone ? "debug" : "info"]({ chatId, messageId, err: describeError(error) }, "telegram preview not deleted after its final was sent");
    }
  }

  onActivity(activity: TurnActivity): void {
    try {
      if (activity.type === "turn-started" && this.state === "running") {
        const chatId = this.migrations.get(activity.target.chatId) ?? activity.target.chatId;
        this.typing.start(activity.sessionKey, { ...activity.target, chatId });
      } else if (activity.type === "turn-finished") this.typing.stop(activity.sessionKey);
    } catch (error) {
      this.logger.debug({ err: describeError(error) }, "typing indicator failed");
    }
  }

  async stop(): Promise<void> {
    if (this.state === "stopped") return;
    const wasStarting = this.state === "starting";
    this.state = "stopped";
    if (wasStarting) this.abort.abort();
    this.typing.stopAll();
    this.track(this.presses.releaseAll());
    this.webhookHealth?.stop();
    const graceMs = this.options.stopGraceMs ?? 2000;
    // Updates still being stored when the grace ends stay unconfirmed: Telegram re-delivers them.
    await this.poller?.stop(graceMs);
    const grace = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    this.abort.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  isConnected(): boolean {
    if (this.state !== "running") return false;
    if (this.poller) return this.poller.healthy && this.startupHealthy;
    return this.webhookHealth?.healthy ?? true;
  }

  private async moveChat(fromChatId: string, toChatId: string): Promise<ChatMoveResult | "unsupported"> {
    this.migrations.set(fromChatId, toChatId);
    const move = this.ingress?.moveChat;
    if (!move) return "unsupported";
    return move.call(this.ingress, { platform: "telegram", fromChatId, toChatId, fromSessionKey: sessionKeyOf(fromChatId), toSessionKey: sessionKeyOf(toChatId) });
  }

  /**
   * Sends a notice outside the reply pipeline (greeting, unsupported media, access and rate
   * notices). Not awaited by the update handler: the webhook must be acknowledged as soon as
   * the message is durable, and a notice stuck behind a 429 must not make Telegram re-deliver.
   */
  private notify(target: ReplyTarget, text: string, reason: string): void {
    const chatId = this.migrations.get(target.chatId) ?? target.chatId;
    this.track(
      withSendPriority("notice", () => sendReply(this.bot.api, { ...target, chatId }, text, {
        signal: this.abort.signal,
        linkPreviews: this.options.linkPreviews ?? false,
        onChatMigrated: async (from, to) => {
          this.migrations.set(from, to);
          return "continue";
        },
        logger: this.logger,
      })).catch((error: unknown) => this.logger.warn({ chatId: target.chatId, reason, err: describeError(error) }, "telegram notice not delivered")),
    );
  }

  private track(promise: Promise<unknown>): void {
    this.inFlight.add(promise);
    const forget = () => this.inFlight.delete(promise);
    promise.then(forget, forget);
  }
}

/** Session keys of Telegram chats without topics (SPEC §2); a basic group has no topics. */
const sessionKeyOf = (chatId: string) => `tg:${chatId}`;
