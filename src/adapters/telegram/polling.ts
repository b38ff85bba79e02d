/**
 * Long polling that confirms an update only once it is stored (issue #10: store before confirm).
 *
 * Telegram forgets an update once a getUpdates call passes an offset above it. grammY's runner
 * advances the offset when it *fetches*, so a crash between fetch and store lost the batch.
 * Here the offset moves only after every update of the batch was handled (submitted to the
 * ingress, which resolves once the message is in Redis): a process killed mid-batch leaves the
 * batch unconfirmed, and Telegram hands it to the next process (the ingress dedupes what was
 * stored already). Updates of one chat run one after another (a chat's order); different chats
 * run at the same time, as with the runner's `sequentialize`. A batch is at most 100 updates, so
 * a slow chat holds up the next fetch by at most its own submits (milliseconds; the measured
 * throughput is in docs/benchmarks.md).
 *
 * 409 Conflict (another poller on this token, or a webhook set meanwhile) is retried with backoff
 * and a clear log line; after `conflictGiveUpMs` without recovering, `onFatal` is called so the
 * process exits non-zero and its supervisor restarts it. 401 is fatal at once.
 */
import { GrammyError, type Api } from "grammy";
import type { Update } from "grammy/types";
import type { Logger } from "../../logger.js";
import { describeError, toApiSignal } from "./send-reply.js";

export interface PollerOptions {
  api: Api;
  /** Long-poll timeout of getUpdates in seconds. */
  timeoutSeconds: number;
  allowedUpdates: readonly string[];
  /** Handles one update; resolves once it is stored (or deliberately dropped). Throwing leaves the batch unconfirmed. */
  handle(update: Update): Promise<void>;
  /** How long 409 Conflict may last before `onFatal`. */
  conflictGiveUpMs: number;
  onFatal(error: Error): void;
  logger: Logger;
  /** Pause after a failed getUpdates, doubled per failure. @defaultValue 1000, capped at 30000 */
  backoffMs?: { initial: number; max: number };
}

export class Poller {
  private readonly abort = new AbortController();
  private loop: Promise<void> | undefined;
  private offset = 0;
  private failures = 0;
  private conflictSince: number | undefined;
  private batchConfirmed = true;
  healthy = true;

  constructor(private readonly options: PollerOptions) {}

  start(): void {
    this.loop ??= this.run().catch((error: unknown) => {
      this.healthy = false;
      this.options.logger.error({ err: describeError(error) }, "telegram polling loop failed");
    });
  }

  /**
   * Stops fetching and waits up to `graceMs` for the batch in hand. A batch that finished is
   * confirmed with one last getUpdates (timeout 0), so the next process does not fetch it
   * again; one that did not finish stays unconfirmed and Telegram re-delivers it.
   */
  async stop(graceMs: number): Promise<void> {
    this.abort.abort();
    const grace = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), graceMs).unref());
    const finished = await Promise.race([this.loop?.then(() => "done" as const), grace]);
    if (finished === "done" && !this.batchConfirmed) {
      await this.options.api.getUpdates({ offset: this.offset, limit: 1, timeout: 0 }).then(
        () => this.options.logger.debug({ offset: this.offset }, "telegram offset confirmed at shutdown"),
        (error: unknown) => this.options.logger.warn({ err: describeError(error) }, "could not confirm the last batch; Telegram will re-deliver it (deduplicated)"),
      );
    } else if (finished === "timeout") {
      this.options.logger.warn({ offset: this.offset }, "telegram updates still being stored at shutdown are left unconfirmed; Telegram re-delivers them");
    }
  }

  private async run(): Promise<void> {
    const { api, logger } = this.options;
    const signal = this.abort.signal;
    while (!signal.aborted) {
      let updates: Update[];
      try {
        updates = await api.getUpdates(
          { offset: this.offset, limit: 100, timeout: this.options.timeoutSeconds, allowed_updates: [...this.options.allowedUpdates] as never },
          toApiSignal(signal),
        );
      } catch (error) {
        if (signal.aborted) return;
        if (!(await this.failed(error))) return;
        continue;
      }
      this.recovered();
      // That call confirmed everything below the offset it passed.
      this.batchConfirmed = true;
      if (updates.length === 0) continue;
      try {
        await this.handleBatch(updates);
      } catch {
        // Shutdown mid-batch: the offset stays where it was, so nothing of it is confirmed.
        return;
      }
      const last = updates[updates.length - 1] as Update;
      this.offset = last.update_id + 1;
      this.batchConfirmed = false;
      logger.trace({ offset: this.offset, updates: updates.length }, "telegram batch stored");
    }
  }

  /** Chats run side by side; each chat's updates in order. */
  private async handleBatch(updates: readonly Update[]): Promise<void> {
    const byChat = new Map<string, Update[]>();
    for (const update of updates) {
      const key = chatKeyOf(update) ?? `update:${update.update_id}`;
      byChat.set(key, [...(byChat.get(key) ?? []), update]);
    }
    await Promise.all(
      [...byChat.values()].map(async (chatUpdates) => {
        for (const update of chatUpdates) {
          try {
            await this.options.handle(update);
          } catch (error) {
            if (this.abort.signal.aborted) throw error;
            // The handler tells the user itself when it gives up; this is a bug, not an outage.
            this.options.logger.error({ updateId: update.update_id, err: describeError(error) }, "telegram update could not be handled; skipped");
          }
        }
      }),
    );
  }

  /** → false when polling must end (fatal). */
  private async failed(error: unknown): Promise<boolean> {
    const { logger } = this.options;
    this.healthy = false;
    const code = error instanceof GrammyError ? error.error_code : undefined;
    if (code === 401) {
      logger.fatal({ err: describeError(error) }, "telegram refused the bot token (401): polling stopped");
      this.options.onFatal(new Error("telegram refused the bot token (401)"));
      return false;
    }
    if (code === 409) {
      const now = Date.now();
      this.conflictSince ??= now;
      const lasted = now - this.conflictSince;
      if (lasted >= this.options.conflictGiveUpMs) {
        logger.fatal({ lastedMs: lasted }, "telegram 409 Conflict did not clear: exiting so the supervisor restarts this gateway");
        this.options.onFatal(new Error(`telegram polling conflict (409) for ${Math.round(lasted / 1000)} s`));
        return false;
      }
      logger.warn(
        { err: describeError(error), conflictForMs: lasted, giveUpInMs: this.options.conflictGiveUpMs - lasted },
        "telegram 409 Conflict: another process polls this bot token (a second gateway, an old deploy) or a webhook was set; retrying",
      );
    } else {
      logger.warn({ err: describeError(error), failures: this.failures + 1 }, "getUpdates failed; retrying");
    }
    const backoff = this.options.backoffMs ?? { initial: 1_000, max: 30_000 };
    const delay = Math.min(backoff.max, backoff.initial * 2 ** this.failures++);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      this.abort.signal.addEventListener("abort", () => {
        clearTimeout(timer);
        resolve();
      }, { once: true });
    });
    return !this.abort.signal.aborted;
  }

  private recovered(): void {
    if (!this.healthy) this.options.logger.info({ afterConflictMs: this.conflictSince === undefined ? undefined : Date.now() - this.conflictSince }, "telegram polling works again");
    this.healthy = true;
    this.failures = 0;
    this.conflictSince = undefined;
  }
}

/** The chat an update belongs to, for per-chat order. */
function chatKeyOf(update: Update): string | undefined {
  const message = update.message ?? update.edited_message ?? update.channel_post ?? update.edited_channel_post ?? update.business_message;
  if (message?.chat?.id !== undefined) return String(message.chat.id);
  // A button press belongs to the chat of the message that carries the button.
  const pressed = update.callback_query?.message?.chat?.id;
  if (pressed !== undefined) return String(pressed);
  const member = update.my_chat_member ?? update.chat_member;
  return member?.chat?.id === undefined ? undefined : String(member.chat.id);
}
