/**
 * Whether a Discord REST request left the process (issue 32). A request whose caller gave up
 * while it waited (in discord.js's per-route queue, for the send budget's slot, for this
 * process's global limit) never reached Discord: it made nothing there. Said so, a preview whose
 * time ran out behind a busy channel is simply freed, instead of counted as a create whose answer
 * was lost, which the final then had to look for (a recovery create, up to 5 s of its delivery).
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { RetryableError } from "../../errors.js";

/**
 * Nothing of the call went out. Not an AbortError: discord.js sends those again (three times,
 * each through the budget); `retryAfterMs` 0 marks it as refused, not failed on the way, for the
 * preview renderer and the delivery queue.
 */
export class RequestNotSent extends RetryableError {
  override readonly name = "RequestNotSent";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, retryAfterMs: 0 });
  }
}

/** Whether a request of a traced call was handed to the network, and whether each was answered. */
export interface SendTrace {
  sent: boolean;
  /** Requests handed to the network that never got an answer (aborted on the way, reset): their outcome is unknown. */
  unanswered?: number;
  /** Told when a request goes out (`true`) and when it is answered or fails (`false`): after every wait. */
  onWire?(onWire: boolean): void;
  /**
   * The call has no idempotency key (an interaction's follow-up): once an attempt may have acted
   * unseen — no answer came (a timeout, a reset) or a 5xx did — it is not sent again, and the call
   * fails with `OutcomeUnknown`. discord.js re-sends a request after each of those (issue 28).
   */
  sendOnce?: boolean;
  /** Set by an attempt whose outcome is unknown. */
  outcomeUnknown?: boolean;
}

/**
 * A `sendOnce` call was not sent again: an earlier attempt may have acted (its answer lost, or a
 * 5xx). Not an AbortError, and its message names no reset: discord.js does not retry it.
 */
export class OutcomeUnknown extends Error {
  override readonly name = "OutcomeUnknown";
}

const traces = new AsyncLocalStorage<SendTrace>();

/** Runs `call` (REST calls through the budget hook) with `trace`, whose `sent` turns true once one of its requests goes out. */
export function traceSends<T>(trace: SendTrace, call: () => T): T {
  return traces.run(trace, call);
}

/** The request hook hands the request to the network (`send`): traced as sent, and as unanswered unless `send` resolves. */
export async function sendTraced<T>(send: () => Promise<T>): Promise<T> {
  const trace = traces.getStore();
  if (!trace) return send();
  if (trace.sendOnce && trace.outcomeUnknown) throw new OutcomeUnknown("an earlier attempt of this request may have acted (no answer, or a server error); not sent again");
  trace.sent = true;
  trace.unanswered = (trace.unanswered ?? 0) + 1;
  trace.onWire?.(true);
  try {
    const answer = await send();
    trace.unanswered--;
    if (((answer as { status?: number } | undefined)?.status ?? 0) >= 500) trace.outcomeUnknown = true;
    return answer;
  } catch (error) {
    trace.outcomeUnknown = true;
    throw error;
  } finally {
    trace.onWire?.(false);
  }
}

/** Waits `ms` before sending; a caller that gives up meanwhile gets `RequestNotSent`. */
export async function waitToSend(ms: number, signal: AbortSignal | null | undefined, what: string): Promise<void> {
  try {
    await sleep(ms, undefined, signal ? { signal } : undefined);
  } catch (error) {
    throw new RequestNotSent(`${what}: its caller gave up while it waited`, { cause: error });
  }
}
