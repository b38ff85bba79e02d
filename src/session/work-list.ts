import type { Redis } from "ioredis";
import { sessionKeys } from "./keys.js";
import { runScript } from "./run-script.js";
import { SESSION_WORK } from "./scripts.js";
import { platformOf, type SessionWork } from "./turn-types.js";

/**
 * Confirms a read on a session's node (REDIS_MIN_REPLICAS_ACK): called before the read with the
 * key it reads, it returns the check to make after it — true only when enough replicas follow
 * the master that answered, over the very socket the read went out on. A master frozen past its
 * failover and woken answers from its own copy for a moment, with no replica left: what it says
 * the session holds is not what the new master holds.
 */
export type ReadConfirmer = (key: string) => Promise<() => Promise<boolean>>;

/**
 * The deployment-wide work list: the sessions that had work, which the sweeper walks. It spans
 * every session (every Cluster slot), so it is kept outside the per-session scripts, with an
 * order of writes that never strands a session: a writer lists the session after its own write,
 * on the same connection (so Redis runs them in that order); `settle` un-lists first, then looks.
 */
export class WorkList {
  constructor(private readonly redis: Redis, private readonly prefix: string, private readonly key: string, private readonly confirmRead?: ReadConfirmer) {}

  /** Lists a session; sent after the write that gave it work, never before. */
  list(sessionKey: string): Promise<number> {
    return this.redis.sadd(this.key, sessionKey);
  }

  /** Sessions that had work; the sweeper re-enqueues what is still pending. */
  async sessions(): Promise<string[]> {
    return this.redis.smembers(this.key);
  }

  async work(sessionKey: string): Promise<SessionWork> {
    const keys = sessionKeys(this.prefix, sessionKey);
    const [inbox, pending, outbox, lease, deliveryLease, platform] = (await runScript(this.redis,
      SESSION_WORK, 5, keys.inbox, keys.pending, keys.outbox, keys.lease, keys.deliveryLease,
    )) as [number, number, number, number, number, string];
    return { inbox, pending, outbox, outboxPlatform: platformOf(platform), turnRunning: lease === 1, deliveryRunning: deliveryLease === 1 };
  }

  /**
   * Drops an idle session from the work list. The order closes the race with a concurrent
   * ingress (which appends, then adds the session): remove first, then look; if work appeared
   * meanwhile, put the session back. Whichever order the two interleave in, a session with
   * work ends up listed. → true when the session was idle and is no longer listed.
   */
  async settle(sessionKey: string): Promise<boolean> {
    const confirmed = this.confirmRead ? await this.confirmRead(sessionKeys(this.prefix, sessionKey).inbox) : undefined;
    // Both sent at once: the connection runs them in this order, in one round trip.
    const [, work] = await Promise.all([this.redis.srem(this.key, sessionKey), this.work(sessionKey)]);
    // "Nothing left" from a master no replica follows (a stale master woken after its failover,
    // whose commit the new master never got) is not believed: the session stays listed, and the
    // sweeper looks again once the new master answers.
    if (work.inbox === 0 && work.pending === 0 && work.outbox === 0 && (!confirmed || (await confirmed()))) return true;
    await this.list(sessionKey);
    return false;
  }

  /**
   * `settle` folded into a step that looks at the session anyway (the delivery's last
   * FINISH_REPLY reports whether messages wait): the SREM goes out first and `step` right after
   * it on this connection, so Redis runs them in that order, in one round trip; the session is
   * listed again unless `idle` says the step found nothing left. The same order as `settle`,
   * so a concurrent ingress never leaves a session with work unlisted. → the step's result.
   */
  async settleWith<T>(sessionKey: string, step: () => Promise<T>, idle: (result: T) => boolean): Promise<T> {
    const [, result] = await Promise.all([this.redis.srem(this.key, sessionKey), step()]);
    if (!idle(result)) await this.list(sessionKey);
    return result;
  }
}
