/**
 * Bounded retries of an intake step (storing a message, moving a chat). Each attempt is also
 * bounded in time: a Redis frozen with SIGSTOP does not fail a command, it never answers.
 * An attempt that timed out may still land later; the ingress dedupes the retry.
 */
import type { Logger } from "../../logger.js";
import { describeError } from "./send-reply.js";

export interface RetryPolicy {
  /** Pauses between attempts; their number + 1 is the number of attempts. */
  delaysMs: readonly number[];
  attemptTimeoutMs: number;
  /** No further attempt once this is true (shutdown). */
  stopped(): boolean;
  logger: Logger;
  /** Wait for a timed-out attempt that may still land before giving up (polling; a webhook answers 500 and Telegram re-delivers). @defaultValue true */
  outlastPending?: boolean;
}

export async function retrying<T>(what: string, attempt: () => Promise<T>, policy: RetryPolicy): Promise<T> {
  // Attempts that timed out but have not settled: their command may still land (ioredis holds
  // it through a frozen Redis). Giving up while one is pending would tell the user "send it
  // again" for a message that is then stored and answered (issue 28 item 3).
  const pending = new Set<Promise<T>>();
  for (let index = 0; ; index++) {
    const call = attempt();
    pending.add(call);
    call.then(() => undefined, () => pending.delete(call));
    try {
      return await withTimeout(call, policy.attemptTimeoutMs, `${what}: no answer from the store within ${policy.attemptTimeoutMs} ms`);
    } catch (error) {
      const delay = policy.delaysMs[index];
      if (policy.stopped()) throw error;
      if (delay === undefined) {
        if (policy.outlastPending === false) throw error;
        return await outlastPending(what, pending, error, policy);
      }
      policy.logger.warn({ what, attempt: index + 1, err: describeError(error) }, "ingress submit failed; retrying");
      await new Promise((resolve) => setTimeout(resolve, delay));
      if (policy.stopped()) throw error;
    }
  }
}

/**
 * Every attempt failed: waits while one that timed out may still land. The first to succeed is
 * the answer (the message was stored); only once all of them failed is the last error thrown
 * (the message is known not stored). Logged every `attemptTimeoutMs` while waiting; ends when stopped.
 */
async function outlastPending<T>(what: string, pending: Set<Promise<T>>, lastError: unknown, policy: RetryPolicy): Promise<T> {
  const started = Date.now();
  while (pending.size > 0) {
    const settled = await Promise.race([
      ...[...pending].map((call) => call.then((value) => ({ ok: true as const, value }), () => ({ ok: false as const }))),
      new Promise<"tick">((resolve) => setTimeout(() => resolve("tick"), policy.attemptTimeoutMs)),
    ]);
    if (settled !== "tick" && settled.ok) return settled.value;
    if (policy.stopped()) throw lastError;
    if (settled === "tick") policy.logger.warn({ what, waitingMs: Date.now() - started, pending: pending.size }, "ingress submit still unanswered; waiting (it may still be stored)");
  }
  throw lastError;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
