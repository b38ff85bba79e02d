import { setTimeout as sleep } from "node:timers/promises";
import type { Message, User } from "discord.js";
import { DeadlineError, withDeadline } from "../../core/deadline.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { IngressPort, SubmitResult } from "../channel-adapter.js";
import { describeMessage } from "./describe-message.js";
import { downloadText } from "./text-attachments.js";
import { awaitsGifEmbed } from "./gifs.js";
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
  /** Pauses between attempts when the ingress throws or overruns its deadline. */
  submitRetryDelaysMs: readonly number[];
  /**
   * Deadline of one ingress attempt, of a notice, of the cursor's move and of fetching a
   * replied-to message: a Redis that never answers (frozen, half-open) is logged with the chat
   * and message and the attempt retried. @defaultValue 10000
   */
  attemptTimeoutMs?: number;
  /**
   * A message's whole handling (files, ingress, notice, cursor) past this is logged and the
   * channel's next message no longer waits for it; a backfill holding live messages longer
   * lets them through. @defaultValue 120000
   */
  stepDeadlineMs?: number;
  /** Replies to `message` with `text` (access, rate limit, truncation, unreadable files). */
  notify(message: Message, text: string, kind: string): Promise<void>;
  /** The ingress took `message` (ACK_REACTIONS): react to it. Never throws. */
  acknowledge?: (message: Message) => void;
  /**
   * Resolves once Discord updated `message` (its embeds added), or after `ms`: a GIF link whose
   * `gifv` embed is still coming waits for it (gifs.ts). Never rejects. Unset: no waiting.
   */
  embedsAdded?: (message: Message, ms: number) => Promise<void>;
  /** How long a GIF link waits for its embed. @defaultValue 3000 */
  gifEmbedWaitMs?: number;
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

  private get attemptTimeoutMs(): number {
    return this.options.attemptTimeoutMs ?? 10_000;
  }

  private get stepDeadlineMs(): number {
    return this.options.stepDeadlineMs ?? 120_000;
  }

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
    const gate = withDeadline(work, this.stepDeadlineMs, "discord backfill").catch((error: unknown) => {
      if (error instanceof DeadlineError) this.options.logger.warn({ deadlineMs: error.ms }, "discord backfill overran its deadline; live messages no longer wait for it");
    });
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
        if (decision.kind === "take") {
          const embedsAdded = this.options.embedsAdded;
          if (embedsAdded && awaitsGifEmbed(facts)) {
            // A GIF link whose embed Discord has not added yet: wait for it (the channel's next
            // messages wait behind), then read the message again.
            await embedsAdded(message, this.options.gifEmbedWaitMs ?? 3_000);
            const updated = describeMessage(message, bot);
            const replanned = planInbound(updated, rules, this.options.maxTextFileBytes);
            if (replanned.kind === "take") await this.handle(message, updated, replanned.plan, rules);
          } else {
            await this.handle(message, facts, decision.plan, rules);
          }
        }
        if (watched) await this.advanceCursor(message.channelId, message.id);
      }, message.id);
    } catch (error) {
      this.options.logger.warn({ messageId: message.id, error: errorMessage(error) }, "malformed discord message skipped");
    }
  }

  /**
   * Submits something that is not a gateway message (a button press, say) behind its
   * channel's queued messages, with the same retries and deadlines. Returns the ingress'
   * answer, undefined if every try failed.
   */
  submitInOrder(inbound: DiscordInboundMessage): Promise<SubmitResult | undefined> {
    return new Promise((resolve) => {
      this.inChannelOrder(inbound.chatId, async () => {
        try {
          resolve(await this.submit(inbound));
        } finally {
          resolve(undefined);
        }
      }, inbound.messageId);
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
      for (const chatId of chatIds) await this.retried({ channelId: chatId }, "chat-closed not recorded", () => chatClosed.call(ingress, "discord", chatId));
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

  /**
   * Runs `task` after the channel's earlier ones. Every await inside has its own deadline; this
   * one is the backstop: a task still running after stepDeadlineMs is logged and the channel
   * goes on without it (it may still finish; the ingress dedupes).
   */
  private inChannelOrder(channelId: string, task: () => Promise<void>, messageId?: string): void {
    const previous = this.chains.get(channelId) ?? Promise.resolve();
    const next = previous.then(() => withDeadline(task(), this.stepDeadlineMs, "discord intake step")).catch((error: unknown) => {
      if (error instanceof DeadlineError) this.options.logger.error({ channelId, messageId, deadlineMs: error.ms }, "discord intake step overran its deadline; the channel goes on without it");
      else this.options.logger.error({ channelId, messageId, error: errorMessage(error) }, "discord message handling failed");
    });
    this.chains.set(channelId, next);
    void next.finally(() => {
      if (this.chains.get(channelId) === next) this.chains.delete(channelId);
    });
  }

  private async handle(message: Message, facts: DiscordMessageFacts, plan: InboundPlan, rules: InboundRules): Promise<void> {
    // Access first: nothing is downloaded or fetched for a stranger or a channel not served.
    const admit = this.options.ingress.admit;
    if (admit && (plan.textFiles.length > 0 || facts.replyReference)) {
      const verdict = await this.retried({ channelId: message.channelId, messageId: message.id }, "access not checked", () => admit.call(this.options.ingress, plan.message));
      if (verdict === undefined) {
        await this.notify(message, SUBMIT_FAILED_NOTICE, "submit-failed");
        return;
      }
      if (!verdict.allowed) {
        if (verdict.notice) await this.notify(message, verdict.notice, "denied");
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
      await this.notify(message, outcome.notice, "unreadable");
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
      const referenced = await withDeadline(message.fetchReference(), this.attemptTimeoutMs, "fetch the replied-to message");
      return bot ? replyContextFrom(describeMessage(referenced, bot), botUserId) : undefined;
    } catch (error) {
      const log = error instanceof DeadlineError ? this.options.logger.warn.bind(this.options.logger) : this.options.logger.debug.bind(this.options.logger);
      log({ channelId: message.channelId, messageId: message.id, error: errorMessage(error) }, "replied-to message not available");
      return undefined;
    }
  }

  private async deliver(message: Message, inbound: DiscordInboundMessage, notice: string | undefined): Promise<void> {
    const result = await this.submit(inbound);
    if (result === undefined) {
      await this.notify(message, SUBMIT_FAILED_NOTICE, "submit-failed");
      return;
    }
    this.options.logger.debug({ messageId: inbound.messageId, sessionKey: inbound.sessionKey, status: result.status }, "message submitted");
    switch (result.status) {
      case "accepted":
        this.options.acknowledge?.(message);
        if (notice !== undefined) await this.notify(message, notice, "inbound-notice");
        return;
      case "duplicate":
        return;
      case "denied":
      case "rate-limited":
        if (result.notice) await this.notify(message, result.notice, result.status);
        return;
    }
  }

  /**
   * Submits with retries; undefined when every attempt failed. The gateway never redelivers
   * a message, so a failed submit is retried here; ingress dedupe makes a retry of a submit
   * that did succeed harmless.
   */
  private submit(inbound: DiscordInboundMessage): Promise<SubmitResult | undefined> {
    return this.retried({ channelId: inbound.chatId, messageId: inbound.messageId }, "ingress submit failed", () => this.options.ingress.submit(inbound));
  }

  /**
   * An ingress call, each attempt bounded by attemptTimeoutMs, retried after each of
   * submitRetryDelaysMs; undefined when every attempt failed. An attempt that overran may still
   * land (ioredis holds its command through a frozen Redis): once the retries are over, the
   * answer of such an attempt is waited for (logged each attemptTimeoutMs) before giving up,
   * so nobody is told "send it again" for a message that is then stored (issue 28 items 3, 9).
   */
  private async retried<T>(context: Record<string, unknown>, failure: string, call: () => Promise<T>): Promise<T | undefined> {
    const pending = new Set<Promise<T>>();
    for (let attempt = 0; ; attempt += 1) {
      const running = call();
      pending.add(running);
      running.then(() => undefined, () => pending.delete(running));
      try {
        return await withDeadline(running, this.attemptTimeoutMs, failure);
      } catch (error) {
        const delay = this.options.submitRetryDelaysMs[attempt];
        this.options.logger.warn({ ...context, attempt: attempt + 1, overran: error instanceof DeadlineError, error: errorMessage(error) }, failure);
        if (delay === undefined) return this.outlast(context, failure, pending);
        if (this.closed) return undefined;
        await sleep(delay);
      }
    }
  }

  /** Every attempt failed: the first overrun attempt that still lands is the answer; undefined once all failed or the intake closed. */
  private async outlast<T>(context: Record<string, unknown>, failure: string, pending: Set<Promise<T>>): Promise<T | undefined> {
    const started = Date.now();
    while (pending.size > 0 && !this.closed) {
      const settled = await Promise.race([
        ...[...pending].map((running) => running.then((value) => ({ ok: true as const, value }), () => ({ ok: false as const }))),
        sleep(this.attemptTimeoutMs).then(() => "tick" as const),
      ]);
      if (settled === "tick") this.options.logger.warn({ ...context, waitingMs: Date.now() - started, pending: pending.size }, `${failure}: still unanswered; waiting (it may still land)`);
      else if (settled.ok) return settled.value;
    }
    return undefined;
  }

  /** A notice, bounded like every other step: one that hangs is logged, and the channel goes on. */
  private async notify(message: Message, text: string, kind: string): Promise<void> {
    try {
      await withDeadline(this.options.notify(message, text, kind), this.attemptTimeoutMs, "send a notice");
    } catch (error) {
      this.options.logger.warn({ channelId: message.channelId, messageId: message.id, kind, error: errorMessage(error) }, "discord notice not sent");
    }
  }

  private async advanceCursor(channelId: string, messageId: string): Promise<void> {
    try {
      const cursors = this.options.ingress.cursors;
      if (cursors) await withDeadline(cursors.advance("discord", channelId, messageId), this.attemptTimeoutMs, "advance the channel cursor");
    } catch (error) {
      // Only costs a re-fetch after the next reconnect, which dedupe absorbs.
      this.options.logger.warn({ channelId, messageId, error: errorMessage(error) }, "channel cursor not advanced");
    }
  }
}
