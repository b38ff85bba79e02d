/**
 * A turn's activities as the gateway passes them to the adapters, in the turns' order. On one
 * Redis a worker's publishes arrive in the order sent (one connection). On a Redis Cluster each
 * PUBLISH goes to any master, whose cluster bus passes it to the subscriber's node, and one sent
 * to a master that just died is sent again through another seconds later: a turn's
 * `turn-started` can then arrive after its own `turn-finished` (measured: a master killed under a
 * chat, test/integration/topology/cluster-activity.test.ts) — passed on, it starts a typing
 * indicator that nothing stops before the adapter's cap (10 min on Telegram) — and a turn's
 * `turn-finished` after the next turn's `turn-started`, stopping that turn's indicator.
 * So, by the turn's id: a start whose turn has finished is dropped, and so is a finish while
 * another turn of the session has started since. Activities without an id pass as they come.
 */
import type { TurnActivity } from "../core/channel.js";

/** Turns remembered (finished ones, and each session's started one): a late activity comes within a failover's seconds. */
const REMEMBERED = 4_096;

export class ActivityOrder {
  readonly #finished = new Set<string>();
  /** Per session, the turn last started and not yet finished. */
  readonly #running = new Map<string, string>();

  /** Whether `activity` goes on to the adapter. */
  accept(activity: TurnActivity): boolean {
    const { turnId, sessionKey } = activity;
    if (turnId === undefined) return true;
    if (activity.type === "turn-started") {
      if (this.#finished.has(turnId)) return false;
      // Deleted first: the newest start is the last to be forgotten.
      this.#running.delete(sessionKey);
      this.#running.set(sessionKey, turnId);
      forgetOldest(this.#running);
      return true;
    }
    this.#finished.add(turnId);
    forgetOldest(this.#finished);
    const running = this.#running.get(sessionKey);
    if (running !== undefined && running !== turnId) return false;
    this.#running.delete(sessionKey);
    return true;
  }
}

function forgetOldest(remembered: Set<string> | Map<string, string>): void {
  if (remembered.size <= REMEMBERED) return;
  const oldest = remembered.keys().next();
  if (!oldest.done) remembered.delete(oldest.value);
}
