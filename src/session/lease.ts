import { randomBytes } from "node:crypto";
import type { Redis } from "ioredis";
import { HEARTBEAT, RELEASE_LEASE } from "./scripts.js";
import { runScript } from "./run-script.js";

/** Why a lease keeper aborted its signal: another attempt holds the lease, or a flag asked. */
export type LeaseAbortReason = "lease-lost" | string;

/**
 * A token unique to one attempt: the BullMQ job id and attempt count are not enough (a worker
 * that picks its own stalled job back up reuses both), so a random nonce makes each attempt
 * distinct. `label` only helps a human reading the lease key.
 */
export function attemptToken(label: string): string {
  return `${label}:${randomBytes(9).toString("base64url")}`;
}

/** How often a held lease is renewed (and the abort flag read): at most 250 ms, 1/8 of the TTL for short leases. */
export const heartbeatMs = (ttlMs: number) => Math.max(20, Math.min(250, Math.floor(ttlMs / 8)));

/**
 * Keeps one lease alive while an attempt runs. Every heartbeat renews the lease in Redis (one
 * script, which also reads the abort flag when given one) and aborts `signal` when another
 * attempt holds the lease or the flag is set: the turn's tool loop and LLM request honour the
 * signal at the next step boundary. A heartbeat that cannot reach Redis changes nothing: it is
 * Redis that decides, when it answers again, whether the lease is still ours.
 */
export class LeaseKeeper {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  #inFlight: Promise<void> | undefined;
  #stopped = false;
  #paused = 0;

  constructor(
    private readonly redis: Redis,
    private readonly lease: { key: string; token: string; ttlMs: number; abortKey?: string },
    parent?: AbortSignal,
  ) {
    if (parent) {
      if (parent.aborted) this.#controller.abort(parent.reason ?? "shutdown");
      else parent.addEventListener("abort", () => this.#controller.abort(parent.reason ?? "shutdown"), { once: true });
    }
    this.#timer = setInterval(() => this.#beat(), heartbeatMs(lease.ttlMs));
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  #beat(): void {
    if (this.#inFlight || this.#stopped || this.#paused > 0) return;
    const keys = this.lease.abortKey === undefined ? [this.lease.key] : [this.lease.key, this.lease.abortKey];
    this.#inFlight = (runScript(this.redis, HEARTBEAT, keys.length, ...keys, this.lease.token, this.lease.ttlMs) as Promise<string>)
      .then((answer) => {
        if (answer !== "" && !this.#controller.signal.aborted) this.#controller.abort(answer === "lost" ? "lease-lost" : answer);
      }, () => undefined)
      .finally(() => {
        this.#inFlight = undefined;
      });
  }

  /**
   * Runs `write` (a script that may release the lease) with no heartbeat in flight and none sent
   * meanwhile. When `released(result)` says the write let the lease go, renewing stops for good
   * before anything else can run; otherwise it goes on. A heartbeat sent while the write is on
   * its way, or any time after it released the lease, takes the lease back for a whole TTL:
   * every later attempt would find it busy, and the sweeper would leave the session alone,
   * until the TTL ran out.
   */
  async paused<T>(write: () => Promise<T>, released: (result: T) => boolean): Promise<T> {
    this.#paused += 1;
    try {
      await this.#inFlight;
      const result = await write();
      if (released(result)) await this.stop();
      return result;
    } finally {
      this.#paused -= 1;
    }
  }

  /**
   * Renews the lease now, outside the heartbeat's rhythm; → whether this attempt still holds it.
   * A write of the attempt's own on the lease's node, for a caller that WAITs on it.
   */
  async renewNow(): Promise<boolean> {
    return this.paused(async () => (await runScript(this.redis, HEARTBEAT, 1, this.lease.key, this.lease.token, this.lease.ttlMs)) !== "lost", () => false);
  }

  /**
   * Stops renewing, and waits for a heartbeat already sent: one landing after the attempt's
   * last write would otherwise take the lease again for a whole TTL.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    await this.#inFlight;
  }

  /** Stops, then releases the lease if this attempt still holds it. */
  async release(): Promise<void> {
    await this.stop();
    await runScript(this.redis, RELEASE_LEASE, 1, this.lease.key, this.lease.token);
  }
}

/**
 * The lease TTL for a given BullMQ lock: twice the lock. Renewed every heartbeat, so a stall
 * (Redis paused, event loop blocked) shorter than the lease minus one heartbeat never frees the
 * session, even when BullMQ already declared the job stalled and re-ran it (the re-run finds
 * the lease held and waits). The rule is stated in docs/architecture.md.
 */
export const leaseTtlMs = (jobLockMs: number) => 2 * jobLockMs;
