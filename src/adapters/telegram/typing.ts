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
  /** When a call of this loop was last answered ok: the indicator still shows for a while after. */
  shownAt?: number;
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

  /**
   * Starts the session's loop: a call now, then one every `intervalMs`. A loop already running
   * whose last call was answered less than `intervalMs` ago is replaced without the call now (the
   * first comes `intervalMs` after that answer; issue 32): a message that waited in a backlog showed typing, and the turn that takes it
   * starts typing again at once; the indicator is still on, so the chat is not sent a second
   * call for it, nor one per message a busy chat queues.
   */
  start(sessionKey: string, target: ReplyTarget): void {
    const shownAt = this.loops.get(sessionKey)?.shownAt;
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
        .then((answer) => {
          if (answer !== undefined) loop.shownAt = Date.now();
        })
        .finally(() => {
          loop.inFlight = false;
        });
      this.options.track(call);
    };
    const interval = this.options.intervalMs;
    const every = () => {
      loop.timer = setInterval(tick, interval);
      loop.timer.unref();
    };
    // Still shown: the first call comes when the last one's would have been refreshed.
    const shown = shownAt !== undefined && startedAt - shownAt < interval;
    const loop: TypingLoop = {
      timer: shown ? setTimeout(() => {
        tick();
        // Unless that call's cap stopped the loop.
        if (this.loops.get(sessionKey) === loop) every();
      }, shownAt + interval - startedAt) : setInterval(tick, interval),
      inFlight: false,
      ...(shownAt === undefined ? {} : { shownAt }),
    };
    loop.timer.unref();
    this.loops.set(sessionKey, loop);
    if (!shown) tick();
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
