/**
 * Updates in: each update becomes a submit to the ingress, a direct answer, a chat move, or
 * nothing (with the reason logged); a button press goes through the ingress like a message.
 * Submits are retried (polling), and the one notice an update may need is sent.
 */
import type { Api } from "grammy";
import type { Message, Update, UserFromGetMe } from "grammy/types";
import type { ChatMoveResult, IngressPort, InboundMessage, ReplyTarget, SubmitResult } from "../channel-adapter.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import { answerPress, toInboundAction } from "./actions.js";
import { IntakeMemory } from "./intake-memory.js";
import type { TelegramAdapterOptions } from "./options.js";
import { retrying } from "./retrying.js";
import { describeError } from "./send-reply.js";
import { showsOtherBot, toInboundMessage, truncationNoticeText, type Intake } from "./to-inbound-message.js";

/** What the user reads when their message could not be stored after every retry. */
export const SUBMIT_FAILED_NOTICE = "Sorry, I couldn't take that message just now. Please send it again in a moment.";

export interface UpdateIntakeOptions extends Pick<TelegramAdapterOptions, "maxMessageChars" | "submitRetryDelaysMs" | "submitAttemptTimeoutMs"> {
  /** The ingress took this message (ACK_REACTIONS): react to it. */
  acknowledge?: (target: ReplyTarget, messageId: string) => void;
  api: Api;
  logger: Logger;
  mode: "polling" | "webhook";
  /** getMe's answer (known once the bot is initialised). */
  botInfo(): UserFromGetMe;
  /** Set by start(); an update before it is an error. */
  ingress(): IngressPort | undefined;
  /** The adapter is stopping: retries end, the update stays unconfirmed. */
  stopped(): boolean;
  moveChat(fromChatId: string, toChatId: string): Promise<ChatMoveResult | "unsupported">;
  /** Sends a notice outside the reply pipeline (not awaited). */
  notify(target: ReplyTarget, text: string, reason: string): void;
  /** A stored press is answered later, by the reply to it (PressAnswers); absent: at once. */
  holdPress?: (messageId: string, queryId: string) => void;
}

export class UpdateIntake {
  private readonly memory = new IntakeMemory();
  /** Groups we stay silent in, logged once each. */
  private readonly silentGroups = new Set<string>();

  constructor(private readonly options: UpdateIntakeOptions) {}

  async handleUpdate(update: Update): Promise<void> {
    if (update.callback_query) return this.handlePress(update.callback_query);
    const { logger } = this.options;
    const me = this.options.botInfo();
    let intake: Intake;
    try {
      if (update.message && showsOtherBot(update.message, me.id, me.username)) this.memory.noteOtherBot(String(update.message.chat.id));
      intake = toInboundMessage(update, {
        bot: { id: me.id, username: me.username },
        maxMessageChars: this.options.maxMessageChars,
        continuesPaste: (message) => this.memory.continuesPaste(message),
        continuesAlbum: (mediaGroupId) => this.memory.continuesAlbum(mediaGroupId),
        hasOtherBot: (chatId) => this.memory.hasOtherBot(chatId),
        privacyMode: me.can_read_all_group_messages !== true,
      });
    } catch (error) {
      // An update shaped unlike the Bot API's: skipped, not failed. Failing would make Telegram
      // re-deliver it to the webhook again and again, holding up the chat's later messages.
      intake = { kind: "malformed", reason: errorMessage(error) };
    }
    switch (intake.kind) {
      case "malformed":
        logger.warn({ updateId: update.update_id, reason: intake.reason }, "malformed telegram update skipped");
        return;
      case "ignore":
        logger.debug({ updateId: update.update_id, reason: intake.reason }, "telegram update ignored");
        return;
      case "migrate": {
        const result = await this.withRetries(`migrate ${intake.fromChatId}`, () => this.options.moveChat(intake.fromChatId, intake.toChatId));
        logger.info({ fromChatId: intake.fromChatId, toChatId: intake.toChatId, result }, "telegram group upgraded to a supergroup");
        return;
      }
      case "chat-closed": {
        const ingress = this.options.ingress();
        const closed = ingress?.chatClosed;
        if (closed) await this.withRetries(`chat closed ${intake.chatId}`, () => closed.call(ingress, "telegram", intake.chatId));
        logger.info({ chatId: intake.chatId, status: intake.status }, "telegram chat closed for the bot");
        return;
      }
      case "answer-directly": {
        // An album is several updates; its uncaptioned items get one notice between them.
        if (!this.memory.firstOfAlbum(intake.mediaGroupId)) return;
        // Only where the bot serves: a group not enabled hears nothing, a stranger's /start gets the pairing code.
        const ingress = this.options.ingress();
        const admit = ingress?.admit;
        const verdict = admit ? await this.withRetries(`admit ${update.update_id}`, () => admit.call(ingress, intake.subject)) : { allowed: true };
        if (verdict.allowed) this.options.notify(intake.target, intake.text, intake.reason);
        else if (verdict.notice) this.options.notify(intake.target, verdict.notice, "denied");
        else logger.debug({ updateId: update.update_id, chatId: intake.target.chatId, reason: intake.reason }, "telegram direct answer withheld: chat not served");
        return;
      }
      case "message": {
        this.memory.firstOfAlbum(intake.mediaGroupId);
        if (intake.message.attachments) this.memory.rememberAlbum(intake.mediaGroupId);
        const result = await this.submit(intake.message, intake.target);
        if (result === undefined) return;
        logger.debug({ sessionKey: intake.message.sessionKey, messageId: intake.message.messageId, status: result.status }, "telegram message submitted");
        if (result.status === "accepted" && intake.message.mayContinue && update.message) this.memory.rememberPastePart(update.message);
        this.afterSubmit(result, intake, update.message);
        return;
      }
    }
  }

  /** A button press goes through the ingress like a message; the spinner stops once it is stored. */
  private async handlePress(query: NonNullable<Update["callback_query"]>): Promise<void> {
    const { api, logger } = this.options;
    const message = toInboundAction(query);
    if (!message) return answerPress(api, query, false, logger);
    const target: ReplyTarget = { platform: "telegram", chatId: message.chatId, ...(message.threadId ? { threadId: message.threadId } : {}) };
    let result: SubmitResult | undefined;
    try {
      result = await this.submit(message, target);
    } catch (error) {
      await answerPress(api, query, false, logger);
      throw error;
    }
    if (result?.status === "accepted" && this.options.holdPress) this.options.holdPress(message.messageId, query.id);
    // Someone else's approval request: told at once, as an alert only the presser sees.
    else if (result?.status === "refused") await answerPress(api, query, { alert: result.notice }, logger);
    else if ((result?.status === "denied" || result?.status === "rate-limited") && result.notice) {
      // Meant for the presser alone: in a group an alert; a private chat takes it whole as a message.
      if (query.message?.chat.type === "private") {
        await answerPress(api, query, true, logger);
        this.options.notify(target, result.notice, result.status);
      } else await answerPress(api, query, { alert: result.notice }, logger);
    } else {
      // "Please try again" only when the press could not be stored: a user turned away (told
      // once already) or rate-limited is not invited to press again.
      await answerPress(api, query, result !== undefined, logger);
    }
  }

  private afterSubmit(result: SubmitResult, intake: Extract<Intake, { kind: "message" }>, message: Message | undefined): void {
    const target = intake.target;
    switch (result.status) {
      case "accepted":
        this.options.acknowledge?.(target, intake.message.messageId);
        if (intake.truncatedFrom !== undefined) this.options.notify(target, truncationNoticeText(intake.truncatedFrom, this.options.maxMessageChars), "truncated");
        return;
      case "duplicate":
        return;
      case "denied":
      case "rate-limited":
        if (result.notice) this.options.notify(target, result.notice, result.status);
        else if (result.status === "denied" && intake.message.chatType === "group" && !this.silentGroups.has(target.chatId)) {
          // Silent rather than leaving: an operator who forgot the allowlist fixes it without re-adding the bot.
          this.silentGroups.add(target.chatId);
          const title = message && "title" in message.chat ? message.chat.title : undefined;
          this.options.logger.warn({ chatId: target.chatId, title }, "telegram group is not allowed: staying silent there (add its id to ALLOWED_TELEGRAM_CHATS to serve it)");
        }
        return;
    }
  }

  /**
   * Submits with bounded retries. Polling: the update is not confirmed to Telegram until this
   * resolves, so a failing Redis holds it; when every attempt failed, the user is told and
   * undefined is returned (the update is then confirmed: it was answered, with an apology).
   * Webhook: one attempt, bounded by submitAttemptTimeoutMs; a failure or an overrun answers
   * 500 and Telegram re-delivers.
   */
  private async submit(message: InboundMessage, target: ReplyTarget): Promise<SubmitResult | undefined> {
    const ingress = this.options.ingress();
    if (!ingress) throw new Error("telegram adapter received an update before start()");
    const what = `store ${message.sessionKey} message ${message.messageId}`;
    if (this.options.mode === "webhook") {
      // One attempt, bounded: a store that never answers (a frozen or half-open Redis) is
      // logged with its chat and message, answered 500, and Telegram delivers it again.
      try {
        return await this.withRetries(what, () => ingress.submit(message));
      } catch (error) {
        this.options.logger.warn({ sessionKey: message.sessionKey, chatId: message.chatId, messageId: message.messageId, err: describeError(error) }, "telegram update not stored; answered 500, Telegram re-delivers it");
        throw error;
      }
    }
    try {
      return await this.withRetries(what, () => ingress.submit(message));
    } catch (error) {
      if (this.options.stopped()) throw error;
      this.options.logger.error({ sessionKey: message.sessionKey, messageId: message.messageId, err: describeError(error) }, "message could not be stored; the user is asked to send it again");
      this.options.notify(target, SUBMIT_FAILED_NOTICE, "submit-failed");
      return undefined;
    }
  }

  private withRetries<T>(what: string, attempt: () => Promise<T>): Promise<T> {
    return retrying(what, attempt, {
      delaysMs: this.options.mode === "webhook" ? [] : (this.options.submitRetryDelaysMs ?? [500, 2000, 5000, 10000]),
      attemptTimeoutMs: this.options.submitAttemptTimeoutMs ?? 10_000,
      outlastPending: this.options.mode === "polling",
      // Stopping: leave the update unconfirmed; the next process gets it again.
      stopped: this.options.stopped,
      logger: this.options.logger,
    });
  }
}
