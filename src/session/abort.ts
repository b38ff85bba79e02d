import type { Redis } from "ioredis";
import { sessionKeys } from "./keys.js";

/** KEYS: lease, abort. ARGV: reason, ttl ms. Flags an abort only while a turn holds the lease. */
const REQUEST_ABORT = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', tonumber(ARGV[2]))
  return 1
end
return 0`;

/**
 * Cross-process abort of a running turn (/stop, busy mode interrupt). The gateway sets a flag
 * next to the turn's lease; the worker that holds the lease polls it and aborts the turn's
 * signal, which the tool loop checks at every step boundary (and the LLM request honours).
 */
export class AbortFlags {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  /** → true when a running turn was flagged. */
  async request(sessionKey: string, reason: "stop" | "interrupt"): Promise<boolean> {
    const keys = sessionKeys(this.#prefix, sessionKey);
    return (await this.#redis.eval(REQUEST_ABORT, 2, keys.lease, keys.abort, reason, 60_000)) === 1;
  }

  async clear(sessionKey: string): Promise<void> {
    await this.#redis.del(sessionKeys(this.#prefix, sessionKey).abort);
  }

  /** Aborts the returned signal when the flag appears (or `parent` aborts). */
  watch(sessionKey: string, parent: AbortSignal, pollMs = 250): { signal: AbortSignal; dispose(): void } {
    const controller = new AbortController();
    const key = sessionKeys(this.#prefix, sessionKey).abort;
    const onParentAbort = () => controller.abort("shutdown");
    parent.addEventListener("abort", onParentAbort, { once: true });
    const timer = setInterval(() => {
      this.#redis.get(key).then((reason) => {
        if (reason !== null && !controller.signal.aborted) controller.abort(reason);
      }, () => undefined);
    }, pollMs);
    return {
      signal: controller.signal,
      dispose: () => {
        clearInterval(timer);
        parent.removeEventListener("abort", onParentAbort);
      },
    };
  }
}
