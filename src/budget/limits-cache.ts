/**
 * Per worker: the accounts known to have no limit at all, so that a call they pay for needs no
 * reserve (issue #18: most deployments set no budget, and the reserve was a round trip before
 * every LLM call). The config's limits never change while a worker runs; an admin's (`/budget`)
 * do, so an account is learnt from what a reserve found (config and admin merged), and forgotten
 * when a write of its admin limits is published on `budgetLimitsChannel` (BudgetMeter.setLimit,
 * the data-rights deletion).
 *
 * Used only while its subscriber is known to hear every publish:
 * - not before the channel's SUBSCRIBE was answered, nor after the connection closed, until it is
 *   subscribed again; what was known is dropped both times (a publish while unsubscribed is lost);
 * - not while a PING sent on the subscriber is unanswered for longer than `pingMs` (a stalled
 *   connection delivers nothing); its answer comes after every publish before it, so the cache is
 *   used again from then on, as it is;
 * - an account is learnt only if nothing was forgotten, dropped or stalled between the reserve's
 *   sending and its answer (a publish may overtake the answer on the other connection).
 * So an admin's limit applies to every call that begins after its publish reached the worker; a
 * call already under way may finish past it.
 *
 * On a Redis Cluster the subscription lives on one node's connection of ioredis' own (its
 * ClusterSubscriber), chosen again when that node goes — with no `close` or `ready` on the client.
 * That connection is watched instead: one that changed counts as a close (what was known is
 * dropped, and the channel subscribed again), found at the next ping (within `pingMs`); and the
 * PING goes to it, not to whichever node a keyless command of the Cluster would reach.
 */
import type { Redis } from "ioredis";
import type { Logger } from "../logger.js";
import { globalKeys } from "../session/keys.js";

/**
 * Deletes an account's admin limits with their publish in one transaction, so no worker keeps
 * what it knew of them, even if the caller dies right after. → keys deleted (0 or 1).
 */
export async function deleteLimits(redis: Redis, prefix: string, account: string): Promise<number> {
  const keys = globalKeys(prefix);
  const [[error, deleted]] = (await redis.multi().del(keys.budgetLimits(account)).publish(keys.budgetLimitsChannel, account).exec()) as [[Error | null, number], unknown];
  if (error) throw error;
  return deleted;
}

/** Beyond this many accounts the oldest learnt is forgotten (a few MB at most). */
const MAX_ACCOUNTS = 100_000;

export interface LimitsCacheOptions {
  /** A connection of its own: it is put in subscriber mode. */
  subscriber: Redis;
  channel: string;
  logger: Logger;
  /** How often the subscriber is pinged; unanswered for longer, the cache is not used. Default 1 s. */
  pingMs?: number;
}

export class LimitsCache {
  readonly #subscriber: Redis;
  readonly #channel: string;
  readonly #logger: Logger;
  readonly #unlimited = new Set<string>();
  /** Grows with every forget, drop and stall: a reserve's answer is learnt only under the mark it was sent with. */
  #epoch = 0;
  #subscribed = false;
  /** A PING unanswered for a whole interval: the connection may be stalled. */
  #stalled = false;
  #pingOut = false;
  /** Grows with every connection closed: a SUBSCRIBE answered on an older one does not count. */
  #connection = 0;
  #closed = false;
  /** On a Cluster: the node connection the last SUBSCRIBE was answered on. */
  #watched: Redis | undefined;
  #subscribing = false;
  readonly #timer: NodeJS.Timeout;

  constructor(options: LimitsCacheOptions) {
    this.#subscriber = options.subscriber;
    this.#channel = options.channel;
    this.#logger = options.logger;
    this.#subscriber.on("message", (channel: string, account: string) => {
      if (channel !== this.#channel) return;
      this.#epoch++;
      this.#unlimited.delete(account);
    });
    this.#subscriber.on("ready", () => this.#subscribe());
    this.#subscriber.on("close", () => this.#lost());
    if (this.#subscriber.status === "ready") this.#subscribe();
    this.#timer = setInterval(() => this.#ping(), options.pingMs ?? 1_000);
    this.#timer.unref();
  }

  /** Whether the cache is in use now (subscribed, not stalled). */
  get live(): boolean {
    return this.#subscribed && !this.#stalled;
  }

  /** Whether every one of `accounts` (`chat:tg:1`, `user:tg:42`) is known to have no limit. */
  unlimited(accounts: readonly string[]): boolean {
    return this.live && accounts.every((account) => this.#unlimited.has(account));
  }

  /** Taken before a reserve is sent, given back to `learn` with what it found. */
  mark(): number | undefined {
    return this.live ? this.#epoch : undefined;
  }

  /** What a reserve sent under `mark` found for `account`: no limit at all, or some. */
  learn(mark: number | undefined, account: string, unlimited: boolean): void {
    if (mark === undefined || mark !== this.#epoch || !this.live) return;
    if (!unlimited) {
      this.#unlimited.delete(account);
      return;
    }
    if (this.#unlimited.size >= MAX_ACCOUNTS && !this.#unlimited.has(account)) {
      this.#unlimited.delete(this.#unlimited.values().next().value!);
    }
    this.#unlimited.add(account);
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#subscribed = false;
    this.#drop();
  }

  /** The subscription's connection closed (or, on a Cluster, was replaced): what it heard may miss a publish. */
  #lost(): void {
    this.#connection++;
    this.#subscribed = false;
    // A stall was the old connection's: the new one is judged by its own pings.
    this.#pingOut = false;
    this.#stalled = false;
    this.#drop();
  }

  /** On a Cluster, the node connection carrying the subscription now (ioredis' ClusterSubscriber, not public); else undefined. */
  #clusterSubscription(): Redis | null | undefined {
    if ((this.#subscriber as { isCluster?: boolean }).isCluster !== true) return undefined;
    return (this.#subscriber as unknown as { subscriber?: { getInstance(): Redis | null } }).subscriber?.getInstance() ?? null;
  }

  #drop(): void {
    this.#epoch++;
    this.#unlimited.clear();
  }

  #subscribe(): void {
    const connection = this.#connection;
    this.#subscribing = true;
    this.#subscriber.subscribe(this.#channel).finally(() => (this.#subscribing = false)).then(() => {
      if (connection !== this.#connection || this.#closed) return;
      this.#watched = this.#clusterSubscription() ?? undefined;
      // Whatever was known before may have missed a publish: start empty.
      this.#drop();
      this.#subscribed = true;
    }, (error: unknown) => this.#logger.warn({ err: error }, "budget-limits-subscribe-failed"));
  }

  #ping(): void {
    const clusterSubscription = this.#clusterSubscription();
    if (clusterSubscription !== undefined && !this.#closed) {
      if (this.#subscribed && clusterSubscription !== this.#watched) this.#lost();
      // A Cluster emits no `ready` for a new subscriber connection: subscribe (again) from here.
      if (!this.#subscribed) {
        if (!this.#subscribing && clusterSubscription !== null) this.#subscribe();
        return;
      }
    }
    if (!this.#subscribed) return;
    if (this.#pingOut) {
      if (!this.#stalled) this.#epoch++;
      this.#stalled = true;
      return;
    }
    this.#pingOut = true;
    const connection = this.#connection;
    (this.#watched ?? this.#subscriber).ping().then(() => {
      if (connection !== this.#connection) return;
      this.#pingOut = false;
      this.#stalled = false;
    }, () => undefined);
  }
}
