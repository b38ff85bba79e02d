import { setTimeout as sleep } from "node:timers/promises";
import type { Message, User } from "discord.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { IngressPort, SubmitResult } from "../channel-adapter.js";
import { describeMessage } from "./describe-message.js";
import { downloadText } from "./text-attachments.js";
import {
  completeInbound, planInbound, replyContextFrom, type DiscordInboundMessage, type DiscordMessageFacts, type InboundPlan, type InboundRules, type ReadFile,
} from "./to-inbound-message.js";

/**
 * Messages in, one channel at a time and in order: decide, read text files and the replied-to
 * message, submit to the ingress (retrying), send the one notice a message may need, and move
 * the channel's cursor past it. Live messages and backfilled ones take the same path.
 */

export interface IntakeOptions {
  ingress: IngressPort;
  logger: Logger;
  /** The logged-in bot user; undefined before login. */
  botUser(): User | null;
  rules: Omit<InboundRules, "botUserId">;
  /** Channels whose cursor is kept (allowed and always-on channels, their threads, DMs). */
  isWatched(facts: Pick<DiscordMessageFacts, "channelId" | "threadParentId" | "isDirectMessage">): boolean;
  /** Text files above this many bytes are not downloaded. */
  maxTextFileBytes: number;
  textFileTimeoutMs: number;
  /** Pauses between attempts when the ingress throws. */
  submitRetryDelaysMs: readonly number[];
  /** Replies to `message` with `text` (access, rate limit, truncation, unreadable files). */
  notify(message: Message, text: string, kind: string): Promise<void>;
  /** The ingress took `message` (ACK_REACTIONS): react to it. Never throws. */
  acknowledge?: (message: Message) => void;
}

/** More than a backfill fetches (100 per channel) times the channels it overlaps with live traffic. */
const RECENT_IDS = 10_000;

const SUBMIT_FAILED_NOTICE = "Sorry, I couldn't take that message just now. Please send it again in a moment.";

export class Intake {
  /** Per-channel chains: a channel's messages reach the ingress in the order Discord sent them. */
  private readonly chains = new Map<string, Promise<void>>();
  /**
   * Recently queued message ids. A message posted during a backfill comes both live and in the
   * fetched history; it must be handled once (a notice sent once, a file read once).
   */
  private readonly recent = new Set<string>();
  /** Set while a backfill runs: live messages wait behind it, so older messages go first. */
  private gate: Promise<unknown> | undefined;
  private closed = false;

  constructor(private readonly options: IntakeOptions) {}

  /** A message from the gateway. discord.js does not await listeners: this never throws. */
  receive(message: Message): void {
    if (this.closed) return;
    if (this.gate) {
      // `then` callbacks run in registration order: live messages keep their order behind the gate.
      void this.gate.then(() => this.enqueue(message));
      return;
    }
    this.enqueue(message);
  }

  /** Holds live messages until `work` (a backfill) has queued what it fetched. */
  async hold(work: Promise<unknown>): Promise<void> {
    const gate = work.catch(() => undefined);
    this.gate = gate;
    await gate;
    if (this.gate === gate) this.gate = undefined;
  }

  /** Queues a message behind its channel's earlier ones. Never throws. */
  enqueue(message: Message): void {
    try {
      const bot = this.options.botUser();
      if (!bot || this.closed || !this.firstSight(message.id)) return;
      const facts = describeMessage(message, bot);
      const rules: InboundRules = { ...this.options.rules, botUserId: bot.id };
      const decision = planInbound(facts, rules, this.options.maxTextFileBytes);
      const watched = this.options.isWatched(facts);
      if (decision.kind === "ignore") {
        this.options.logger.trace({ messageId: message.id, channelId: message.channelId, reason: decision.reason }, "message ignored");
        if (!watched) return;
      }
      this.inChannelOrder(message.channelId, async () => {
        if (decision.kind === "take") await this.handle(message, facts, decision.plan, rules);
        if (watched) await this.advanceCursor(message.channelId, message.id);
      });
    } catch (error) {
      this.options.logger.warn({ messageId: message.id, error: errorMessage(error) }, "malformed discord message skipped");
    }
  }

  /**
   * Submits something that is not a gateway message (a button press, say) behind its
   * channel's queued messages, with the same retries; `before` is awaited first (an
   * interaction's acknowledgement). Returns the ingress' answer, undefined if every try failed.
   */
  submitInOrder(inbound: DiscordInboundMessage, before?: Promise<unknown>): Promise<SubmitResult | undefined> {
    return new Promise((resolve) => {
      this.inChannelOrder(inbound.chatId, async () => {
        try {
          await before;
          resolve(await this.submit(inbound));
        } finally {
          resolve(undefined);
        }
      });
    });
  }

  /**
   * Tells the ingress the bot lost these chats (channel or thread deleted, removed from the
   * guild), with the submit's retries: the gateway never sends the event again. Queued like a
   * message, so `close` waits for it too.
   */
  closeChats(chatIds: readonly string[], reason: string): void {
    const ingress = this.options.ingress;
    const chatClosed = ingress.chatClosed;
    if (!chatClosed || chatIds.length === 0) return;
    this.inChannelOrder(`closed:${chatIds[0]}`, async () => {
      for (const chatId of chatIds) await this.retried({ chatId }, "chat-closed not recorded", () => chatClosed.call(ingress, "discord", chatId));
      this.options.logger.info({ chats: chatIds.length, reason }, "discord chats closed for the bot");
    });
  }

  /** Waits for every queued message to reach the ingress; later ones are refused. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([...this.chains.values()]);
  }

  private firstSight(messageId: string): boolean {
    if (this.recent.has(messageId)) return false;
    this.recent.add(messageId);
    // Sets iterate in insertion order: drop the oldest past the bound.
    if (this.recent.size > RECENT_IDS) this.recent.delete(this.recent.values().next().value as string);
    return true;
  }

  private inChannelOrder(channelId: string, task: () => Promise<void>): void {
    const previous = this.chains.get(channelId) ?? Promise.resolve();
    const next = previous.then(task).catch((error: unknown) =>
      this.options.logger.error({ channelId, error: errorMessage(error) }, "discord message handling failed"));
    this.chains.set(channelId, next);
    void next.finally(() => {
      if (this.chains.get(channelId) === next) this.chains.delete(channelId);
    });
  }

  private async handle(message: Message, facts: DiscordMessageFacts, plan: InboundPlan, rules: InboundRules): Promise<void> {
    // Access first: nothing is downloaded or fetched for a stranger or a channel not served.
    const admit = this.options.ingress.admit;
    if (admit && (plan.textFiles.length > 0 || facts.replyReference)) {
      const verdict = await this.retried({ messageId: message.id }, "access not checked", () => admit.call(this.options.ingress, plan.message));
      if (verdict === undefined) {
        await this.options.notify(message, SUBMIT_FAILED_NOTICE, "submit-failed");
        return;
      }
      if (!verdict.allowed) {
        if (verdict.notice) await this.options.notify(message, verdict.notice, "denied");
        else this.options.logger.debug({ messageId: message.id, channelId: message.channelId }, "message denied before reading its files");
        return;
      }
    }
    const files = await Promise.all(plan.textFiles.map((file) => this.readFile(message, file)));
    const replyTo = facts.replyReference ? await this.replyContext(message, rules.botUserId) : undefined;
    const outcome = completeInbound(plan, files, replyTo, facts, rules);
    if (outcome.kind === "ignore") {
      this.options.logger.trace({ messageId: message.id, reason: outcome.reason }, "message ignored");
      return;
    }
    if (outcome.kind === "notice") {
      await this.options.notify(message, outcome.notice, "unreadable");
      return;
    }
    await this.deliver(message, outcome.message, outcome.notice);
  }

  private async readFile(message: Message, file: InboundPlan["textFiles"][number]): Promise<ReadFile> {
    const result = await downloadText(file, { maxBytes: this.options.maxTextFileBytes, timeoutMs: this.options.textFileTimeoutMs });
    if (result.ok) return { name: file.name, text: result.text };
    this.options.logger.warn({ messageId: message.id, file: file.name, failure: result.failure, detail: result.detail }, "text attachment not read");
    return { name: file.name, failure: result.failure };
  }

  /** The replied-to message from the cache, else over REST; none when it was deleted. */
  private async replyContext(message: Message, botUserId: string): Promise<DiscordInboundMessage["replyTo"]> {
    const bot = this.options.botUser();
    try {
      const referenced = await message.fetchReference();
      return bot ? replyContextFrom(describeMessage(referenced, bot), botUserId) : undefined;
    } catch (error) {
      this.options.logger.debug({ messageId: message.id, error: errorMessage(error) }, "replied-to message not available");
      return undefined;
    }
  }

  private async deliver(message: Message, inbound: DiscordInboundMessage, notice: string | undefined): Promise<void> {
    const result = await this.submit(inbound);
    if (result === undefined) {
      await this.options.notify(message, SUBMIT_FAILED_NOTICE, "submit-failed");
      return;
    }
    this.options.logger.debug({ messageId: inbound.messageId, sessionKey: inbound.sessionKey, status: result.status }, "message submitted");
    switch (result.status) {
      case "accepted":
        this.options.acknowledge?.(message);
        if (notice !== undefined) await this.options.notify(message, notice, "inbound-notice");
        return;
      case "duplicate":
        return;
      case "denied":
      case "rate-limited":
        if (result.notice) await this.options.notify(message, result.notice, result.status);
        return;
    }
  }

  /**
   * Submits with retries; undefined when every attempt failed. The gateway never redelivers
   * a message, so a failed submit is retried here; ingress dedupe makes a retry of a submit
   * that did succeed harmless.
   */
  private submit(inbound: DiscordInboundMessage): Promise<SubmitResult | undefined> {
    return this.retried({ messageId: inbound.messageId }, "ingress submit failed", () => this.options.ingress.submit(inbound));
  }

  /** An ingress call, retried after each of submitRetryDelaysMs; undefined when every attempt failed. */
  private async retried<T>(context: Record<string, unknown>, failure: string, call: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await call();
      } catch (error) {
        const delay = this.options.submitRetryDelaysMs[attempt];
        this.options.logger.warn({ ...context, attempt: attempt + 1, error: errorMessage(error) }, failure);
        if (delay === undefined) return undefined;
        await sleep(delay);
      }
    }
  }

  private async advanceCursor(channelId: string, messageId: string): Promise<void> {
    try {
      await this.options.ingress.cursors?.advance("discord", channelId, messageId);
    } catch (error) {
      // Only costs a re-fetch after the next reconnect, which dedupe absorbs.
      this.options.logger.warn({ channelId, messageId, error: errorMessage(error) }, "channel cursor not advanced");
    }
  }
}
