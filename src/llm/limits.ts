/**
 * A provider's own limits, respected above the client (issue #32): how many requests may be in
 * flight at once, how many may start per minute, and a shared pause after the provider answers
 * 429. With hundreds of turns in flight per worker, each retrying its own 429 on its own would
 * pile retries onto a provider that just said it is full; here the first 429 pauses every
 * request through the same gate until the provider's `retry-after` (or a backoff that doubles
 * with each 429 in a row, reset by a success), and the requests that were waiting start after it
 * in the order they came.
 *
 * One gate per model (`models.list.<name>.limits`) and one per endpoint (`models.endpoints`),
 * built by src/models/router.ts; a model's calls pass both. The failed call itself still fails:
 * the turn's own retry (BullMQ's backoff) takes it from there and meets the pause when it
 * comes back.
 */
import { AbortedError, RetryableError } from "../errors.js";
import type { ChatRequest, ChatResult, LlmClient } from "../core/llm.js";
import { classifyLlmError } from "./errors.js";

export interface CallLimits {
  /** Requests in flight at once; unset: no cap. */
  concurrent?: number;
  /** Requests started per minute, spread evenly (one every 60/N s); unset: no cap. */
  requestsPerMinute?: number;
}

/** The first pause after a 429 without `retry-after`; it doubles with each 429 in a row. */
export const RATE_LIMIT_BASE_PAUSE_MS = 1_000;
/** The longest pause a 429 sets (a longer `retry-after` is cut to this). */
export const RATE_LIMIT_MAX_PAUSE_MS = 60_000;

export interface CallGateOptions {
  now?: () => number;
  /** Called when a 429 starts (or lengthens) a pause: for the log. */
  onPause?: (pauseMs: number) => void;
}

export class CallGate {
  readonly #limits: CallLimits;
  readonly #now: () => number;
  readonly #onPause: ((pauseMs: number) => void) | undefined;
  #inFlight = 0;
  #nextStartAt = 0;
  #pausedUntil = 0;
  #rateLimitedInARow = 0;
  readonly #waiting: Array<{ wake: () => void }> = [];
  #timer: NodeJS.Timeout | undefined;

  constructor(limits: CallLimits, options: CallGateOptions = {}) {
    this.#limits = limits;
    this.#now = options.now ?? Date.now;
    this.#onPause = options.onPause;
  }

  /** Requests waiting for their turn (for /metrics and tests). */
  get waiting(): number {
    return this.#waiting.length;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Until when a 429 holds new requests back (ms since the epoch; in the past: none). */
  get pausedUntil(): number {
    return this.#pausedUntil;
  }

  /** Runs `call` when the limits allow; a 429 it fails with pauses the gate. */
  async run<T>(call: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.#enter(signal);
    try {
      const result = await call();
      this.#rateLimitedInARow = 0;
      return result;
    } catch (error) {
      if (classifyLlmError(error) === "rate-limit") this.#pause(error instanceof RetryableError ? error.retryAfterMs : undefined);
      throw error;
    } finally {
      this.#inFlight--;
      this.#drain();
    }
  }

  #pause(retryAfterMs: number | undefined) {
    this.#rateLimitedInARow++;
    const backoff = RATE_LIMIT_BASE_PAUSE_MS * 2 ** Math.min(this.#rateLimitedInARow - 1, 10);
    const pauseMs = Math.min(RATE_LIMIT_MAX_PAUSE_MS, retryAfterMs ?? backoff);
    const until = this.#now() + pauseMs;
    if (until <= this.#pausedUntil) return;
    this.#pausedUntil = until;
    this.#onPause?.(pauseMs);
  }

  #mayStart(): boolean {
    const now = this.#now();
    if (now < this.#pausedUntil || now < this.#nextStartAt) return false;
    return this.#limits.concurrent === undefined || this.#inFlight < this.#limits.concurrent;
  }

  #started() {
    this.#inFlight++;
    if (this.#limits.requestsPerMinute !== undefined) this.#nextStartAt = Math.max(this.#now(), this.#nextStartAt) + 60_000 / this.#limits.requestsPerMinute;
  }

  #enter(signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortedError("LLM request aborted while waiting for the provider's limits"));
    // First come, first served: nobody overtakes a request already waiting.
    if (this.#waiting.length === 0 && this.#mayStart()) {
      this.#started();
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const entry = {
        wake: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        const index = this.#waiting.indexOf(entry);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(new AbortedError("LLM request aborted while waiting for the provider's limits"));
        this.#drain();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiting.push(entry);
      this.#drain();
    });
  }

  /** Starts whoever may start now; sets one timer for the first moment the next may. */
  #drain() {
    while (this.#waiting.length > 0 && this.#mayStart()) {
      this.#started();
      this.#waiting.shift()!.wake();
    }
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    if (this.#waiting.length === 0) return;
    const wakeAt = Math.max(this.#pausedUntil, this.#nextStartAt);
    // Waiting on a request in flight to end (the concurrency cap): its `finally` drains.
    if (wakeAt <= this.#now()) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#drain();
    }, wakeAt - this.#now());
  }
}

/** A client whose every call passes the gates, in order (the model's, then its endpoint's). */
export function limitedClient<C extends LlmClient>(client: C, gates: readonly CallGate[]): C {
  if (gates.length === 0) return client;
  // The client's own properties (getters included, as getters) copied onto the wrapper, so a
  // caller that spreads or reads the client sees what it would see on the client itself.
  const wrapped = Object.create(Object.getPrototypeOf(client) as object, Object.getOwnPropertyDescriptors(client)) as C;
  const through = (index: number, request: ChatRequest): Promise<ChatResult> =>
    index === gates.length ? client.complete(request) : gates[index]!.run(() => through(index + 1, request), request.signal);
  Object.defineProperty(wrapped, "complete", { value: (request: ChatRequest) => through(0, request), enumerable: true, writable: true, configurable: true });
  return wrapped;
}
