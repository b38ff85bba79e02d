/**
 * The typing indicator while a turn runs: sendChatAction at once, then every few seconds
 * (Telegram shows it for about 5 s), until the turn finishes, the answer is out, a time cap
 * passes, or Telegram refuses (403: blocked or kicked; 400: chat gone) — then it stops for the
 * turn instead of hammering a chat it cannot reach. Calls are fire-and-forget.
 */
import type { Api } from "grammy";
import type { ReplyTarget } from "../channel-adapter.js";
import type { Logger } from "../../logger.js";
import { describeError, toApiSignal } from "./send-reply.js";

interface TypingLoop {
  timer: NodeJS.Timeout;
  inFlight: boolean;
}

export interface TypingOptions {
  api: Api;
  logger: Logger;
  intervalMs: number;
  maxMs: number;
  signal: AbortSignal;
  /** Keeps the call for stop()'s grace period. */
  track(call: Promise<unknown>): void;
}

export class TypingIndicators {
  private readonly loops = new Map<string, TypingLoop>();

  constructor(private readonly options: TypingOptions) {}

  start(sessionKey: string, target: ReplyTarget): void {
    this.stop(sessionKey);
    const startedAt = Date.now();
    const threadId = target.threadId === undefined ? undefined : Number(target.threadId);
    const tick = () => {
      if (Date.now() - startedAt > this.options.maxMs) return this.stop(sessionKey);
      // A typing call stuck behind a 429 is not stacked with more of them.
      if (loop.inFlight) return;
      loop.inFlight = true;
      const call = this.options.api
        .sendChatAction(target.chatId, "typing", threadId === undefined ? {} : { message_thread_id: threadId }, toApiSignal(this.options.signal))
        .catch((error: unknown) => {
          this.options.logger.debug({ chatId: target.chatId, err: describeError(error) }, "sendChatAction failed");
          if (typeof error === "object" && error !== null && "error_code" in error && (error.error_code === 403 || error.error_code === 400)) {
            if (this.loops.get(sessionKey) === loop) this.stop(sessionKey);
          }
        })
        .finally(() => {
          loop.inFlight = false;
        });
      this.options.track(call);
    };
    const loop: TypingLoop = { timer: setInterval(tick, this.options.intervalMs), inFlight: false };
    loop.timer.unref();
    this.loops.set(sessionKey, loop);
    tick();
  }

  stop(sessionKey: string): void {
    const loop = this.loops.get(sessionKey);
    if (!loop) return;
    clearInterval(loop.timer);
    this.loops.delete(sessionKey);
  }

  stopAll(): void {
    for (const key of [...this.loops.keys()]) this.stop(key);
  }

  isRunning(sessionKey: string): boolean {
    return this.loops.has(sessionKey);
  }
}
