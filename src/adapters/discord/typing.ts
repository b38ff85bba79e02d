import { DiscordAPIError, type SendableChannels } from "discord.js";
import { PermanentError, errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";

export interface TypingOptions {
  /** Discord shows "typing" for 10 s per call; refresh before it lapses. */
  intervalMs: number;
  /** Stop anyway after this long, in case turn-finished never comes. */
  timeoutMs: number;
  resolveChannel(channelId: string): Promise<SendableChannels>;
  logger: Logger;
}

interface TypingLoop {
  interval: NodeJS.Timeout;
  timeout: NodeJS.Timeout;
  /** A request of this loop is on its way: a tick skips rather than queue a second one behind it. */
  inFlight: boolean;
}

/**
 * One typing indicator per session while its turn runs. Requests are fire-and-forget; a
 * refusal that will not change (missing access or permissions, an archived thread: any 4xx
 * but 429) stops the loop at once instead of hammering the channel for ten minutes. A loop
 * has at most one request in flight: a tick while the last one is still unanswered (slow
 * gateway, rate-limit queue) is skipped, so a refusal is never followed by requests that were
 * already queued behind it.
 */
export class TypingIndicators {
  private readonly loops = new Map<string, TypingLoop>();

  constructor(private readonly options: TypingOptions) {}

  start(sessionKey: string, channelId: string): void {
    this.stop(sessionKey);
    const tick = (): void => {
      if (loop.inFlight) return;
      loop.inFlight = true;
      void this.send(sessionKey, channelId, loop).finally(() => (loop.inFlight = false));
    };
    const loop: TypingLoop = {
      interval: setInterval(tick, this.options.intervalMs),
      timeout: setTimeout(() => this.stop(sessionKey), this.options.timeoutMs),
      inFlight: false,
    };
    loop.interval.unref();
    loop.timeout.unref();
    this.loops.set(sessionKey, loop);
    tick();
  }

  stop(sessionKey: string): void {
    const loop = this.loops.get(sessionKey);
    if (!loop) return;
    clearInterval(loop.interval);
    clearTimeout(loop.timeout);
    this.loops.delete(sessionKey);
  }

  stopAll(): void {
    for (const sessionKey of [...this.loops.keys()]) this.stop(sessionKey);
  }

  isTyping(sessionKey: string): boolean {
    return this.loops.has(sessionKey);
  }

  /** `loop` is the loop this request belongs to: a refusal must not stop the next turn's loop. */
  private async send(sessionKey: string, channelId: string, loop: TypingLoop): Promise<void> {
    try {
      const channel = await this.options.resolveChannel(channelId);
      await channel.sendTyping();
    } catch (error) {
      if (isRefusal(error)) {
        if (this.loops.get(sessionKey) === loop) this.stop(sessionKey);
        this.options.logger.warn({ channelId, error: errorMessage(error) }, "typing indicator refused; stopped for this turn");
        return;
      }
      this.options.logger.debug({ channelId, error: errorMessage(error) }, "typing indicator not sent");
    }
  }
}

/** Discord said no in a way a retry will not change: a 4xx other than 429, or a channel we cannot use. */
const isRefusal = (error: unknown): boolean =>
  error instanceof PermanentError || (error instanceof DiscordAPIError && error.status >= 400 && error.status < 500 && error.status !== 429);
