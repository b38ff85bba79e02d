/**
 * "typing…" for a message that waits (issue 32): a worker shows typing once its turn has run
 * TYPING_DELAY_MS, but a message queued behind busy workers has no turn yet and would get no
 * signal for as long as it waits. So the gateway looks again TYPING_DELAY_MS after accepting a
 * message: if it is still in its session's inbox (no turn has claimed it) and no turn of the
 * session is running (one that is shows its own typing), the adapter is told `turn-started`
 * now. The turn that later takes the message counts its typing delay from the message's arrival
 * (workers/process-turn.ts), so it publishes `turn-started` at once and `turn-finished` at its
 * end, which stops the indicator; an answer sent stops it too (the adapters do).
 *
 * One timer per session at a time, one round trip (LLEN + EXISTS, one slot) when it fires. A
 * reply delivered, or an activity of the session's turn, calls the look off first, so a message
 * answered within the delay costs nothing in Redis.
 * Lossy like every typing signal: a failed look is forgotten.
 */
import type { Redis } from "ioredis";
import type { InboundMessage, ReplyTarget, TurnActivity } from "../core/channel.js";
import type { Logger } from "../logger.js";
import { sessionKeys } from "../session/keys.js";

export interface WaitingTypingOptions {
  redis: Redis;
  prefix: string;
  /** TYPING_DELAY_MS; 0 turns this off (every turn then shows typing as it begins). */
  delayMs: number;
  /** Hands the signal to the message's adapter. */
  start(activity: TurnActivity): void;
  logger: Logger;
}

interface Look {
  timer: NodeJS.Timeout;
  /** The newest message's target: the indicator goes where the answer will. */
  target: ReplyTarget;
  /** Another message came after the look was armed: it may wait for a turn of its own. */
  more: boolean;
}

export class WaitingTyping {
  readonly #looks = new Map<string, Look>();
  #closed = false;

  constructor(private readonly options: WaitingTypingOptions) {}

  /** A message was stored: look again after the delay (one look per session at a time). */
  accepted(message: InboundMessage): void {
    if (this.options.delayMs <= 0 || this.#closed) return;
    const target: ReplyTarget = {
      platform: message.platform,
      chatId: message.chatId,
      ...(message.threadId ? { threadId: message.threadId } : {}),
      replyToMessageId: message.messageId,
    };
    const look = this.#looks.get(message.sessionKey);
    if (look) {
      look.target = target;
      look.more = true;
      return;
    }
    this.#arm(message.sessionKey, target);
  }

  /**
   * The session's turn spoke (an activity of its own) or a reply of it was delivered: no look is
   * needed for what that turn took. A message that came after the look was armed may wait for
   * the next turn, so it gets a look of its own, from now.
   */
  heard(sessionKey: string): void {
    const look = this.#looks.get(sessionKey);
    if (!look) return;
    clearTimeout(look.timer);
    this.#looks.delete(sessionKey);
    if (look.more && !this.#closed) this.#arm(sessionKey, look.target);
  }

  close(): void {
    this.#closed = true;
    for (const look of this.#looks.values()) clearTimeout(look.timer);
    this.#looks.clear();
  }

  #arm(sessionKey: string, target: ReplyTarget): void {
    const timer = setTimeout(() => {
      const look = this.#looks.get(sessionKey);
      this.#looks.delete(sessionKey);
      if (look) void this.#look(sessionKey, look.target);
    }, this.options.delayMs);
    timer.unref();
    this.#looks.set(sessionKey, { timer, target, more: false });
  }

  async #look(sessionKey: string, target: ReplyTarget): Promise<void> {
    const keys = sessionKeys(this.options.prefix, sessionKey);
    try {
      const answers = await this.options.redis.multi().llen(keys.inbox).exists(keys.lease).exec();
      const unclaimed = Number(answers?.[0]?.[1] ?? 0);
      const running = Number(answers?.[1]?.[1] ?? 0) === 1;
      if (this.#closed || unclaimed === 0 || running) return;
      this.options.start({ type: "turn-started", sessionKey, target, waiting: true });
    } catch (error) {
      this.options.logger.debug({ err: error, sessionKey }, "waiting-typing-look-failed");
    }
  }
}
