/**
 * The Telegram adapter (SPEC §6): grammY in, normalised messages to the ingress, replies out.
 * Long polling with @grammyjs/runner by default; webhook mode (for several gateway replicas)
 * when a webhook URL is configured. Access control, dedupe and persistence are the ingress's.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Bot, webhookCallback, type Transformer } from "grammy";
import type { Update, UserFromGetMe } from "grammy/types";
import { run, sequentialize, type RunnerHandle } from "@grammyjs/runner";
import { autoRetry } from "@grammyjs/auto-retry";
import type {
  ChannelAdapter,
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
import { describeError, sendReply, toApiSignal, toTelegramError } from "./send-reply.js";
import { DEFAULT_PART_LENGTH } from "./split.js";
import { TELEGRAM_COMMANDS, toInboundMessage, truncationNoticeText, type Intake } from "./to-inbound-message.js";
import { answerPress, inlineKeyboard, replaceMessage, toInboundAction } from "./actions.js";

export const TELEGRAM_WEBHOOK_PATH = "/telegram/webhook";

/** Messages and button presses; edits are ignored on purpose (docs/telegram.md), so not even fetched. */
const ALLOWED_UPDATES = ["message", "callback_query"] as const;

type HttpHandler = (request: IncomingMessage, response: ServerResponse) => void;

export interface TelegramAdapterOptions {
  token: string;
  /** Bot API root, without a trailing slash. @defaultValue "https://api.telegram.org" */
  apiRoot?: string;
  /** Public URL Telegram posts updates to; unset: long polling. */
  webhookUrl?: string;
  /** Secret Telegram sends in X-Telegram-Bot-Api-Secret-Token; required with `webhookUrl`. */
  webhookSecret?: string;
  /** Inbound text longer than this is truncated, with a notice to the user. */
  maxMessageChars: number;
  logger: Logger;
  /** getMe's answer, to skip the call (tests, cold starts of webhook replicas). */
  botInfo?: UserFromGetMe;
  /** Long-poll timeout of getUpdates in seconds. @defaultValue 30 */
  pollingTimeoutSeconds?: number;
  /** Timeout of one Bot API request (long polls get their own timeout on top). @defaultValue 60 */
  requestTimeoutSeconds?: number;
  /** How often the typing indicator is re-sent; Telegram shows it for about 5 s. @defaultValue 4000 */
  typingIntervalMs?: number;
  /** A typing indicator never outlives this, even if turn-finished is lost. @defaultValue 600000 */
  typingMaxMs?: number;
  /** Longest part of a reply, tags included (Telegram's limit is 4096). @defaultValue 4000 */
  maxPartLength?: number;
  /**
   * Polling only: pauses between attempts of a failing `ingress.submit`. The runner has already
   * confirmed the update to Telegram, so these retries are the message's only second chance.
   * (In webhook mode a failure answers 500 and Telegram re-delivers.) @defaultValue [500, 2000, 5000]
   */
  submitRetryDelaysMs?: readonly number[];
  /** How long `stop()` waits for notices and typing calls in flight. @defaultValue 2000 */
  stopGraceMs?: number;
}

interface TypingLoop {
  timer: NodeJS.Timeout;
  inFlight: boolean;
}

export class TelegramAdapter implements ChannelAdapter {
  readonly platform = "telegram" as const;
  private readonly bot: Bot;
  private readonly logger: Logger;
  private readonly options: TelegramAdapterOptions;
  private readonly mode: "polling" | "webhook";
  private readonly typing = new Map<string, TypingLoop>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly abort = new AbortController();
  private ingress: IngressPort | undefined;
  private runner: RunnerHandle | undefined;
  private routes: Map<string, HttpHandler> | undefined;
  private state: "new" | "starting" | "running" | "stopped" = "new";
  private pollingHealthy = true;

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
    this.bot.api.config.use(this.watchIntake());
    // One update per chat at a time, so a chat's messages reach the ingress in order (Telegram
    // does the same for webhooks; the runner alone would run a batch concurrently).
    this.bot.use(sequentialize((context) => (context.chat ? String(context.chat.id) : undefined)));
    this.bot.use((context) => this.handleUpdate(context.update));
    this.bot.catch((error) => {
      this.logger.error({ updateId: error.ctx.update.update_id, err: describeError(error.error) }, "telegram update failed");
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
      await this.runner?.stop();
      throw new Error("telegram adapter was stopped while starting");
    }
    this.state = "running";
  }

  private async startIntake(): Promise<void> {
    // grammY retries getMe on network errors until it gets an answer (logged by watchIntake):
    // a gateway started while Telegram is unreachable waits for it; stop() cancels the wait.
    await this.bot.init(toApiSignal(this.abort.signal));
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
      this.routes = new Map([[TELEGRAM_WEBHOOK_PATH, (request, response) => this.serveWebhook(callback, request, response)]]);
      await this.bot.api.setWebhook(this.options.webhookUrl, {
        secret_token: this.options.webhookSecret ?? "",
        allowed_updates: [...ALLOWED_UPDATES],
        drop_pending_updates: false,
      });
      this.logger.info({ username: me.username, path: TELEGRAM_WEBHOOK_PATH }, "telegram webhook set");
      return;
    }
    // A webhook left over from webhook mode would make every getUpdates fail with 409.
    await this.bot.api.deleteWebhook({ drop_pending_updates: false }).catch((error: unknown) => {
      this.logger.warn({ err: describeError(error) }, "deleteWebhook failed; polling may conflict with an old webhook");
    });
    this.runner = run(this.bot, {
      runner: {
        fetch: { timeout: this.options.pollingTimeoutSeconds ?? 30, allowed_updates: [...ALLOWED_UPDATES] },
        // Failures are logged through watchIntake() with our logger instead of console.error.
        silent: true,
      },
    });
    this.runner.task()?.catch((error: unknown) => {
      this.pollingHealthy = false;
      this.logger.fatal({ err: describeError(error) }, "telegram polling stopped: a wrong token (401) or another poller on this token (409)");
    });
    this.logger.info({ username: me.username }, "telegram long polling started");
  }

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    if (reply.replaces !== undefined && options.fromPart === 0 && (await replaceMessage(this.bot.api, reply, this.logger))) {
      return options.onPartSent(0);
    }
    const { parts } = await sendReply(this.bot.api, reply.target, reply.text, {
      fromPart: options.fromPart,
      onPartSent: options.onPartSent,
      maxPartLength: this.options.maxPartLength ?? DEFAULT_PART_LENGTH,
      logger: this.logger,
      ...(reply.actions?.length ? { lastPart: { reply_markup: inlineKeyboard(reply.actions) } } : {}),
    });
    // The answer is out: Telegram clears "typing…" when our message arrives; keep it cleared.
    if (reply.kind === "answer" && parts > 0) this.stopTyping(reply.sessionKey);
  }

  onActivity(activity: TurnActivity): void {
    try {
      if (activity.type === "turn-started" && this.state === "running") this.startTyping(activity.sessionKey, activity.target);
      else if (activity.type === "turn-finished") this.stopTyping(activity.sessionKey);
    } catch (error) {
      this.logger.debug({ err: describeError(error) }, "typing indicator failed");
    }
  }

  async stop(): Promise<void> {
    if (this.state === "stopped") return;
    const wasStarting = this.state === "starting";
    this.state = "stopped";
    if (wasStarting) this.abort.abort();
    for (const key of [...this.typing.keys()]) this.stopTyping(key);
    if (this.runner?.isRunning()) await this.runner.stop();
    const grace = new Promise<void>((resolve) => setTimeout(resolve, this.options.stopGraceMs ?? 2000).unref());
    await Promise.race([Promise.allSettled([...this.inFlight]), grace]);
    this.abort.abort();
    await Promise.allSettled([...this.inFlight]);
  }

  isConnected(): boolean {
    if (this.state !== "running") return false;
    return this.runner === undefined ? true : this.runner.isRunning() && this.pollingHealthy;
  }

  private async handleUpdate(update: Update): Promise<void> {
    if (update.callback_query) return this.handlePress(update.callback_query);
    const me = this.bot.botInfo;
    let intake: Intake;
    try {
      intake = toInboundMessage(update, { bot: { id: me.id, username: me.username }, maxMessageChars: this.options.maxMessageChars });
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
      case "answer-directly":
        this.notify(intake.target, intake.text, intake.reason);
        return;
      case "message": {
        const result = await this.submit(intake.message);
        this.logger.debug({ sessionKey: intake.message.sessionKey, messageId: intake.message.messageId, status: result.status }, "telegram message submitted");
        this.afterSubmit(result, intake.target, intake.truncatedFrom);
        return;
      }
    }
  }

  /** A button press goes through the ingress like a message; the spinner stops once it is stored. */
  private async handlePress(query: NonNullable<Update["callback_query"]>): Promise<void> {
    const message = toInboundAction(query);
    if (!message) return answerPress(this.bot.api, query, false, this.logger);
    let result: SubmitResult;
    try {
      result = await this.submit(message);
    } catch (error) {
      await answerPress(this.bot.api, query, false, this.logger);
      throw error;
    }
    await answerPress(this.bot.api, query, result.status === "accepted" || result.status === "duplicate", this.logger);
    if ((result.status === "denied" || result.status === "rate-limited") && result.notice) {
      this.notify({ platform: "telegram", chatId: message.chatId, ...(message.threadId ? { threadId: message.threadId } : {}) }, result.notice, result.status);
    }
  }

  private afterSubmit(result: SubmitResult, target: ReplyTarget, truncatedFrom: number | undefined): void {
    switch (result.status) {
      case "accepted":
        if (truncatedFrom !== undefined) this.notify(target, truncationNoticeText(truncatedFrom, this.options.maxMessageChars), "truncated");
        return;
      case "duplicate":
        return;
      case "denied":
      case "rate-limited":
        if (result.notice) this.notify(target, result.notice, result.status);
        return;
    }
  }

  private async submit(message: InboundMessage): Promise<SubmitResult> {
    const ingress = this.ingress;
    if (!ingress) throw new Error("telegram adapter received an update before start()");
    const delays = this.mode === "webhook" ? [] : (this.options.submitRetryDelaysMs ?? [500, 2000, 5000]);
    for (let attempt = 0; ; attempt++) {
      try {
        return await ingress.submit(message);
      } catch (error) {
        const delay = delays[attempt];
        if (delay === undefined || this.state === "stopped") throw error;
        this.logger.warn({ sessionKey: message.sessionKey, messageId: message.messageId, attempt: attempt + 1, err: describeError(error) }, "ingress submit failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }

  /**
   * Sends a notice outside the reply pipeline (greeting, unsupported media, access and rate
   * notices). Not awaited by the update handler: the webhook must be acknowledged as soon as
   * the message is durable, and a notice stuck behind a 429 must not make Telegram re-deliver.
   */
  private notify(target: ReplyTarget, text: string, reason: string): void {
    this.track(
      sendReply(this.bot.api, target, text, { signal: this.abort.signal, logger: this.logger }).catch((error: unknown) =>
        this.logger.warn({ chatId: target.chatId, reason, err: describeError(error) }, "telegram notice not delivered"),
      ),
    );
  }

  private serveWebhook(callback: (request: IncomingMessage, response: ServerResponse) => Promise<unknown>, request: IncomingMessage, response: ServerResponse): void {
    if (this.state !== "running") {
      // Shutting down: Telegram retries, reaching a replica that is still up.
      response.writeHead(503).end();
      return;
    }
    callback(request, response).catch((error: unknown) => {
      const malformed = error instanceof SyntaxError;
      this.logger[malformed ? "warn" : "error"]({ err: describeError(error) }, malformed ? "webhook body is not JSON" : "webhook update not accepted; Telegram will re-deliver it");
      if (!response.headersSent) response.writeHead(malformed ? 400 : 500);
      if (!response.writableEnded) response.end();
    });
  }

  /**
   * Logs failures of the intake calls (getMe at start, getUpdates) with our logger, since
   * grammY and the runner retry them silently, and tracks polling health for /healthz.
   */
  private watchIntake(): Transformer {
    return async (previous, method, payload, signal) => {
      if (method !== "getUpdates" && method !== "getMe") return previous(method, payload, signal);
      try {
        const result = await previous(method, payload, signal);
        if (!result.ok) {
          this.pollingHealthy = false;
          this.logger.warn({ code: result.error_code, description: result.description }, `${method} failed`);
        } else if (!this.pollingHealthy) {
          this.pollingHealthy = true;
          this.logger.info(`${method} works again`);
        }
        return result;
      } catch (error) {
        if (!signal?.aborted) {
          this.pollingHealthy = false;
          this.logger.warn({ err: describeError(error) }, `${method} failed; retrying`);
        }
        throw error;
      }
    };
  }

  private startTyping(sessionKey: string, target: ReplyTarget): void {
    this.stopTyping(sessionKey);
    const startedAt = Date.now();
    const maxMs = this.options.typingMaxMs ?? 600_000;
    const threadId = target.threadId === undefined ? undefined : Number(target.threadId);
    const tick = () => {
      if (Date.now() - startedAt > maxMs) return this.stopTyping(sessionKey);
      // A typing call stuck behind a 429 is not stacked with more of them.
      if (loop.inFlight) return;
      loop.inFlight = true;
      const call = this.bot.api
        .sendChatAction(target.chatId, "typing", threadId === undefined ? {} : { message_thread_id: threadId }, toApiSignal(this.abort.signal))
        .catch((error: unknown) => {
          this.logger.debug({ chatId: target.chatId, err: describeError(error) }, "sendChatAction failed");
          // Blocked, kicked, chat gone: stop trying for this turn.
          if (typeof error === "object" && error !== null && "error_code" in error && (error.error_code === 403 || error.error_code === 400)) {
            if (this.typing.get(sessionKey) === loop) this.stopTyping(sessionKey);
          }
        })
        .finally(() => {
          loop.inFlight = false;
        });
      this.track(call);
    };
    const loop: TypingLoop = { timer: setInterval(tick, this.options.typingIntervalMs ?? 4000), inFlight: false };
    loop.timer.unref();
    this.typing.set(sessionKey, loop);
    tick();
  }

  private stopTyping(sessionKey: string): void {
    const loop = this.typing.get(sessionKey);
    if (!loop) return;
    clearInterval(loop.timer);
    this.typing.delete(sessionKey);
  }

  private track(promise: Promise<unknown>): void {
    this.inFlight.add(promise);
    const forget = () => this.inFlight.delete(promise);
    promise.then(forget, forget);
  }
}
