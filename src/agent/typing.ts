/**
 * The chat's "typing…" for one turn (docs/streaming.md): `turn-started` is published only once
 * the turn has run `delayMs` (TYPING_DELAY_MS), and `turn-finished` only if `turn-started` was.
 * A quicker turn publishes nothing: its answer is already there, and on Telegram a typing call
 * would only count against the bot's limits. Both are lossy (not waited for; a failed publish
 * is forgotten) and go out on one connection in the order they are called, so the gateway
 * never hears `turn-started` after `turn-finished`, nor after the turn's commit (`committing`) —
 * on one Redis. On a Cluster each publish may go out through another node (and one to a failing
 * master is sent again seconds later), so both carry the turn's id and the gateway drops a late
 * one (src/gateway/activity-order.ts).
 */
import { randomUUID } from "node:crypto";
import type { ReplyTarget, TurnActivity } from "../core/channel.js";

export class TurnTyping {
  #timer: NodeJS.Timeout | undefined;
  #state: "waiting" | "started" | "finished" = "waiting";
  readonly #turnId = randomUUID();

  constructor(private readonly options: {
    sessionKey: string;
    target: ReplyTarget;
    publish: (activity: TurnActivity) => Promise<void>;
    /** How long after the turn began (this object's creation) `turn-started` is published; 0: at once. */
    delayMs: number;
  }) {
    if (options.delayMs <= 0) {
      this.#start();
      return;
    }
    this.#timer = setTimeout(() => this.#start(), options.delayMs);
    // `finish` clears it; should a turn never get there, the timer alone keeps no process alive.
    this.#timer.unref();
  }

  /**
   * The turn's commit goes out now: a `turn-started` not yet published never will be. Published
   * after the commit, it could reach the chat after the answer (Telegram then shows "typing…" for
   * seconds under it); published before, it stays ordered before the outbox write.
   */
  committing(): void {
    if (this.#state !== "waiting") return;
    clearTimeout(this.#timer);
    this.#state = "finished";
  }

  /** The turn ended (committed, failed, superseded, interrupted, thrown); idempotent. */
  finish(): void {
    if (this.#state === "finished") return;
    clearTimeout(this.#timer);
    const started = this.#state === "started";
    this.#state = "finished";
    if (started) this.#publish("turn-finished");
  }

  #start(): void {
    this.#timer = undefined;
    // Never after `finish`, whatever became of the timer.
    if (this.#state !== "waiting") return;
    this.#state = "started";
    this.#publish("turn-started");
  }

  #publish(type: TurnActivity["type"]): void {
    void this.options.publish({ type, sessionKey: this.options.sessionKey, target: this.options.target, turnId: this.#turnId }).catch(() => undefined);
  }
}
