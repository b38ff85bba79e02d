/**
 * The Telegram adapter (SPEC §6): grammY in, normalised messages to the ingress, replies out.
 * Long polling (polling.ts: an update is confirmed only once stored) by default; webhook mode
 * (for several gateway replicas) when a webhook URL is configured. Access control, dedupe and
 * persistence are the ingress's.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Api, Bot, webhookCallback } from "grammy";
import type { Message, Update } from "grammy/types";
import { autoRetry } from "@grammyjs/auto-retry";
import type {
  ChannelAdapter,
  ChatMoveResult,
  IngressPort,
  InboundMessage,
  OutboundReply,
  ReplyTarget,
  SendOptions,
  SubmitResult,
  TurnActivity,
} from "../channel-adapter.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { IntakeMemory } from "./intake-memory.js";
import { Poller } from "./polling.js";
import { describeError, replyParts, sendReply, toApiSignal, toTelegramError } from "./send-reply.js";
import { editFinal, TelegramPreviews } from "./previews.js";
import { DEFAULT_PART_LENGTH } from "./split.js";
import { TELEGRAM_COMMANDS, toInboundMessage, truncationNoticeText, type Intake } from "./to-inbound-message.js";
import { answerPress, inlineKeyboard, replaceMessage, toInboundAction } from "./actions.js";
import { TypingIndicators } from "./typing.js";
import { hostOf, serveWebhook, WebhookHealth } from "./webhook.js";
import { retrying } from "./retrying.js";
import type { TelegramAdapterOptions } from "./options.js";

export type { TelegramAdapterOptions } from "./options.js";

export const TELEGRAM_WEBHOOK_PATH = "/telegram/webhook";

/** Messages and button presses; edits are ignored on purpose (docs/telegram.md), so not even fetched. */
const ALLOWED_UPDATES = ["message", "callback_query", "my_chat_member"] as const;

/** What the user reads when their message could not be stored after every retry. */
export const SUBMIT_FAILED_NOTICE = "Sorry, I couldn't take that message just now. Please send it again in a moment.";

type HttpHandler = (request: IncomingMessage, response: ServerResponse) => void;

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
  private readonly memory = new IntakeMemory();
  /** Old chat id → new one, for notices to a group that became a supergroup. */
  private readonly migrations = new Map<string, string>();
  /** Groups we stay silent in, logged once each. */
  private readonly silentGroups = new Set<string>();
  private ingress: IngressPort | undefined;
  private poller: Poller | undefined;
  private webhookHealth: WebhookHealth | undefined;
  private routes: Map<string, HttpHandler> | undefined;
  private state: "new" | "starting" | "running" | "stopped" = "new";
  private startupHealthy = true;

  constructor(options: TelegramAdapterOptions) {
    if (options.webhookUrl !== undefined && options.webhookSecret === undefined) {
      throw new Error("TELEGRAM_WEBHOOK_SECRET is required with TELEGRAM_WEBHOOK_URL: without it anyone could post updates to the webhook");
    }
    this.options = options;
    this.mode = options.webhookUrl === undefined ? "polling" : "webhook";
    this.logger = options.logger.child({ adapter: "telegram" });
    const pollingTimeout = options.pollingTimeoutSeconds ?? 30;
    this.bot = new Bot(options.token, {
      client: {
        apiRoot: (options.apiRoot ?? "https://api.telegram.org").replace(/\/+$/, ""),
        timeoutSeconds: Math.max(options.requestTimeoutSeconds ?? 60, pollingTimeout + 15),
      },
      ...(options.botInfo ? { botInfo: options.botInfo } : {}),
    });
    // 429 retry_after and 5xx are retried here (bounded); network errors are rethrown because
    // auto-retry's network loop ignores maxRetryAttempts (STACK §2.3) and would hold a reply
    // for up to an hour: the reply sender's job retries instead, resuming at the failed part.
    this.bot.api.config.use(autoRetry({ maxRetryAttempts: 3, maxDelaySeconds: 30, rethrowHttpErrors: true }));
    this.bot.api.config.use(async (previous, method, payload, signal) => {
      // grammY retries getMe at start on network errors: log each failure with our logger.
      if (method !== "getMe") return previous(method, payload, signal);
      try {
        return await previous(method, payload, signal);
      } catch (error) {
        if (!signal?.aborted) {
          this.startupHealthy = false;
          this.logger.warn({ err: describeError(error) }, "getMe failed; retrying");
        }
        throw error;
      }
    });
    this.bot.use((context) => this.handleUpdate(context.update));
    // Previews get an Api of their own, without auto-retry: a 429 backs off the previews only.
    this.previews = new TelegramPreviews(new Api(options.token, {
      apiRoot: (options.apiRoot ?? "https://api.telegram.org").replace(/\/+$/, ""),
      timeoutSeconds: options.requestTimeoutSeconds ?? 60,
    }), this.logger);
    this.typing = new TypingIndicators({
      api: this.bot.api,
      logger: this.logger,
      intervalMs: options.typingIntervalMs ?? 4000,
      maxMs: options.typingMaxMs ?? 600_000,
      signal: this.abort.signal,
      track: (call) => this.track(call),
    });
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
    // grammY retries getMe on network errors until it gets an answer (logged above): a
    // gateway started while Telegram is unreachable waits for it; stop() cancels the wait.
    await this.bot.init(toApiSignal(this.abort.signal));
    this.startupHealthy = true;
    const me = this.bot.botInfo;
    if (!me.can_read_all_group_messages) {
      this.logger.info({ username: me.username }, "privacy mode is on: in groups the bot sees commands, mentions and replies to it (all it needs)");
    }
    this.track(
      this.bot.api
        .setMyCommands([...TELEGRAM_COMMANDS], undefined, toApiSignal(this.abort.signal))
        .catch((error: unknown) => this.logger.warn({ err: describeError(error) }, "setMyCommands failed; commands still work when typed")),
    );

    if (this.mode === "webhook" && this.options.webhookUrl !== undefined) {
      const callback = webhookCallback(this.bot, "http", { secretToken: this.options.webhookSecret ?? "" });
      this.routes = new Map([[TELEGRAM_WEBHOOK_PATH, (request, response) => serveWebhook(callback, request, response, this.state === "running", this.logger)]]);
      await this.bot.api.setWebhook(this.options.webhookUrl, {
        secret_token: this.options.webhookSecret ?? "",
        allowed_updates: [...ALLOWED_UPDATES],
        drop_pending_updates: false,
      });
      this.webhookHealth = new WebhookHealth({ api: this.bot.api, url: this.options.webhookUrl, intervalMs: this.options.webhookCheckIntervalMs ?? 60_000, logger: this.logger, signal: this.abort.signal });
      this.webhookHealth.start();
      this.logger.info({ username: me.username, path: TELEGRAM_WEBHOOK_PATH }, "telegram webhook set");
      return;
    }
    await this.refusePollingOverWebhook();
    this.poller = new Poller({
      api: this.bot.api,
      timeoutSeconds: this.options.pollingTimeoutSeconds ?? 30,
      allowedUpdates: ALLOWED_UPDATES,
      handle: (update) => this.bot.handleUpdate(update),
      conflictGiveUpMs: this.options.conflictGiveUpMs ?? 300_000,
      onFatal: (error) => this.options.onFatal?.(error),
      logger: this.logger,
    });
    this.poller.start();
    this.logger.info({ username: me.username }, "telegram long polling started");
  }

  /**
   * A webhook set for this token means another deployment serves it in webhook mode: polling
   * would need deleteWebhook, which silently disconnects that deployment. So we refuse, unless
   * the operator says this gateway takes over (TELEGRAM_FORCE_POLLING).
   */
  private async refusePollingOverWebhook(): Promise<void> {
    const info = await this.bot.api.getWebhookInfo(toApiSignal(this.abort.signal));
    const url = info.url ?? "";
    if (url === "") return;
    if (!this.options.forcePolling) {
      throw new Error(
        `a webhook is set for this bot (host ${hostOf(url)}): another deployment may serve it, so long polling will not delete it. ` +
          "Set TELEGRAM_WEBHOOK_URL to serve the webhook here, or TELEGRAM_FORCE_POLLING=1 to take over with long polling.",
      );
    }
    this.logger.warn({ webhookHost: hostOf(url) }, "TELEGRAM_FORCE_POLLING: deleting the webhook set for this bot and polling instead");
    await this.bot.api.deleteWebhook({ drop_pending_updates: false }, toApiSignal(this.abort.signal));
  }

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    if (options.preview && options.fromPart === 0) {
      // The final takes the live preview over: part 1 is edited into it, the rest is sent.
      const parts = replyParts(reply.text, this.options.maxPartLength ?? DEFAULT_PART_LENGTH);
      const keyboard = reply.actions?.length && parts.length === 1 ? { reply_markup: inlineKeyboard(reply.actions) } : {};
      if (await editFinal(this.bot.api, reply.target, options.preview.messageId, parts[0] ?? "", keyboard, this.logger)) {
        await options.onPartSent(0);
        if (options.preview.only || parts.length === 1) {
          if (reply.kind === "answer") this.typing.stop(reply.sessionKey);
          return;
        }
        return this.send(reply, { fromPart: 1, onPartSent: options.onPartSent });
      }
      await options.preview.onRefused();
      if (options.preview.only) return;
    }
    if (reply.replaces !== undefined && options.fromPart === 0 && (await replaceMessage(this.bot.api, reply, this.logger))) {
      return options.onPartSent(0);
    }
    const { parts } = await sendReply(this.bot.api, reply.target, reply.text, {
      fromPart: options.fromPart,
      onPartSent: options.onPartSent,
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
    });
    // The answer is out: Telegram clears "typing…" when our message arrives; keep it cleared.
    if (reply.kind === "answer" && parts > 0) this.typing.stop(reply.sessionKey);
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

  private async handleUpdate(update: Update): Promise<void> {
    this.webhookHealth?.received();
    if (update.callback_query) return this.handlePress(update.callback_query);
    const me = this.bot.botInfo;
    let intake: Intake;
    try {
      intake = toInboundMessage(update, {
        bot: { id: me.id, username: me.username },
        maxMessageChars: this.options.maxMessageChars,
        continuesPaste: (message) => this.memory.continuesPaste(message),
        continuesAlbum: (mediaGroupId) => this.memory.continuesAlbum(mediaGroupId),
      });
    } catch (error) {
      // An update shaped unlike the Bot API's: skipped, not failed. Failing would make Telegram
      // re-deliver it to the webhook again and again, holding up the chat's later messages.
      intake = { kind: "malformed", reason: errorMessage(error) };
    }
    switch (intake.kind) {
      case "malformed":
        this.logger.warn({ updateId: update.update_id, reason: intake.reason }, "malformed telegram update skipped");
        return;
      case "ignore":
        this.logger.debug({ updateId: update.update_id, reason: intake.reason }, "telegram update ignored");
        return;
      case "migrate": {
        const result = await this.withRetries(`migrate ${intake.fromChatId}`, () => this.moveChat(intake.fromChatId, intake.toChatId));
        this.logger.info({ fromChatId: intake.fromChatId, toChatId: intake.toChatId, result }, "telegram group upgraded to a supergroup");
        return;
      }
      case "chat-closed": {
        const closed = this.ingress?.chatClosed;
        if (closed) await this.withRetries(`chat closed ${intake.chatId}`, () => closed.call(this.ingress, "telegram", intake.chatId));
        this.logger.info({ chatId: intake.chatId, status: intake.status }, "telegram chat closed for the bot");
        return;
      }
      case "answer-directly":
        // An album is several updates; its uncaptioned items get one notice between them.
        if (!this.memory.firstOfAlbum(intake.mediaGroupId)) return;
        this.notify(intake.target, intake.text, intake.reason);
        return;
      case "message": {
        this.memory.firstOfAlbum(intake.mediaGroupId);
        if (intake.message.attachments) this.memory.rememberAlbum(intake.mediaGroupId);
        const result = await this.submit(intake.message, intake.target);
        if (result === undefined) return;
        this.logger.debug({ sessionKey: intake.message.sessionKey, messageId: intake.message.messageId, status: result.status }, "telegram message submitted");
        if (result.status === "accepted" && intake.message.mayContinue && update.message) this.memory.rememberPastePart(update.message);
        this.afterSubmit(result, intake, update.message);
        return;
      }
    }
  }

  /** A button press goes through the ingress like a message; the spinner stops once it is stored. */
  private async handlePress(query: NonNullable<Update["callback_query"]>): Promise<void> {
    const message = toInboundAction(query);
    if (!message) return answerPress(this.bot.api, query, false, this.logger);
    const target: ReplyTarget = { platform: "telegram", chatId: message.chatId, ...(message.threadId ? { threadId: message.threadId } : {}) };
    let result: SubmitResult | undefined;
    try {
      result = await this.submit(message, target);
    } catch (error) {
      await answerPress(this.bot.api, query, false, this.logger);
      throw error;
    }
    await answerPress(this.bot.api, query, result?.status === "accepted" || result?.status === "duplicate", this.logger);
    if ((result?.status === "denied" || result?.status === "rate-limited") && result.notice) this.notify(target, result.notice, result.status);
  }

  private afterSubmit(result: SubmitResult, intake: Extract<Intake, { kind: "message" }>, message: Message | undefined): void {
    const target = intake.target;
    switch (result.status) {
      case "accepted":
        if (intake.truncatedFrom !== undefined) this.notify(target, truncationNoticeText(intake.truncatedFrom, this.options.maxMessageChars), "truncated");
        return;
      case "duplicate":
        return;
      case "denied":
      case "rate-limited":
        if (result.notice) this.notify(target, result.notice, result.status);
        else if (result.status === "denied" && intake.message.chatType === "group" && !this.silentGroups.has(target.chatId)) {
          // Silent rather than leaving: an operator who forgot the allowlist fixes it without re-adding the bot.
          this.silentGroups.add(target.chatId);
          const title = message && "title" in message.chat ? message.chat.title : undefined;
          this.logger.warn({ chatId: target.chatId, title }, "telegram group is not allowed: staying silent there (add its id to ALLOWED_TELEGRAM_CHATS to serve it)");
        }
        return;
    }
  }

  /**
   * Submits with bounded retries. Polling: the update is not confirmed to Telegram until this
   * resolves, so a failing Redis holds it; when every attempt failed, the user is told and
   * undefined is returned (the update is then confirmed: it was answered, with an apology).
   * Webhook: one attempt; a failure answers 500 and Telegram re-delivers.
   */
  private async submit(message: InboundMessage, target: ReplyTarget): Promise<SubmitResult | undefined> {
    const ingress = this.ingress;
    if (!ingress) throw new Error("telegram adapter received an update before start()");
    if (this.mode === "webhook") return ingress.submit(message);
    try {
      return await this.withRetries(message.messageId, () => ingress.submit(message));
    } catch (error) {
      if (this.state === "stopped") throw error;
      this.logger.error({ sessionKey: message.sessionKey, messageId: message.messageId, err: describeError(error) }, "message could not be stored; the user is asked to send it again");
      this.notify(target, SUBMIT_FAILED_NOTICE, "submit-failed");
      return undefined;
    }
  }

  private withRetries<T>(what: string, attempt: () => Promise<T>): Promise<T> {
    return retrying(what, attempt, {
      delaysMs: this.mode === "webhook" ? [] : (this.options.submitRetryDelaysMs ?? [500, 2000, 5000, 10000]),
      attemptTimeoutMs: this.options.submitAttemptTimeoutMs ?? 10_000,
      // Stopping: leave the update unconfirmed; the next process gets it again.
      stopped: () => this.state === "stopped",
      logger: this.logger,
    });
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
      sendReply(this.bot.api, { ...target, chatId }, text, {
        signal: this.abort.signal,
        linkPreviews: this.options.linkPreviews ?? false,
        onChatMigrated: async (from, to) => {
          this.migrations.set(from, to);
          return "continue";
        },
        logger: this.logger,
      }).catch((error: unknown) => this.logger.warn({ chatId: target.chatId, reason, err: describeError(error) }, "telegram notice not delivered")),
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
