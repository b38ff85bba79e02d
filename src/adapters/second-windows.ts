/**
 * A process's own count of the requests it sends to a platform (issue 32): the send budget grants
 * slots on Redis's clock, but a process whose event loop stalled fires the timers of the slots it
 * was given together, and they reach the platform bunched. Counted when each request really
 * leaves, this keeps the process at its limit over any second whatever its timers did.
 */
/**
 * At most `perSecond` requests in any one second, however the second is placed: `take` → 0 (go,
 * counted) or the ms until the oldest of the last second's is a second old. Fixed windows (how
 * discord.js counts) let up to twice as many through across a window's edge: when the budget
 * let everything through (its Redis slow on a starved machine), 75 requests reached the fake in
 * one second and it answered 229 global 429s, then a 120 s penalty (issue 32).
 */
export class SecondWindows {
  /** When the requests of the last second went, oldest first. */
  readonly #sentAt: number[] = [];

  constructor(private readonly perSecond: number, private readonly now: () => number = Date.now) {}

  take(): number {
    const now = this.now();
    while (this.#sentAt.length > 0 && now - this.#sentAt[0]! >= 1_000) this.#sentAt.shift();
    if (this.#sentAt.length < this.perSecond) {
      this.#sentAt.push(now);
      return 0;
    }
    return this.#sentAt[0]! + 1_000 - now;
  }
}
