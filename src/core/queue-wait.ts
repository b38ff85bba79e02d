/**
 * Queue wait (issue 32): how long a message waited from its arrival (the ingress storing it) to
 * the turn that takes it beginning. Each worker keeps its recent waits for `/status`; the
 * `longhaul_queue_wait_seconds` histogram of /metrics has them all.
 */

/** What `/status` shows of the queue. */
export interface QueueStatus {
  /** Turn jobs waiting for a worker (BullMQ's waiting + prioritized): one per session at most. */
  waiting: number;
  /** Turns running now, over every worker. */
  running: number;
  /** This worker's recent waits; absent when it has seen none within the window. */
  recent?: { messages: number; p50Ms: number; p99Ms: number; windowMs: number };
}

/**
 * The waits of the last `windowMs` (at most `capacity` of them, the newest kept), in arrival
 * order of the observations. Memory is bounded by `capacity` whatever the rate.
 */
export class RecentWaits {
  readonly #at: number[] = [];
  readonly #waits: number[] = [];

  constructor(private readonly options: { windowMs: number; capacity: number } = { windowMs: 5 * 60_000, capacity: 2_000 }) {}

  observe(waitMs: number, now: number): void {
    this.#at.push(now);
    this.#waits.push(Math.max(0, waitMs));
    if (this.#at.length > this.options.capacity) {
      this.#at.shift();
      this.#waits.shift();
    }
  }

  summary(now: number): QueueStatus["recent"] {
    const since = now - this.options.windowMs;
    let first = 0;
    while (first < this.#at.length && this.#at[first]! < since) first++;
    this.#at.splice(0, first);
    this.#waits.splice(0, first);
    if (this.#waits.length === 0) return undefined;
    const sorted = [...this.#waits].sort((a, b) => a - b);
    const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
    return { messages: sorted.length, p50Ms: at(50), p99Ms: at(99), windowMs: this.options.windowMs };
  }
}
