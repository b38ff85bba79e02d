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
}

export async function retrying<T>(what: string, attempt: () => Promise<T>, policy: RetryPolicy): Promise<T> {
  for (let index = 0; ; index++) {
    try {
      return await withTimeout(attempt(), policy.attemptTimeoutMs, `${what}: no answer from the store within ${policy.attemptTimeoutMs} ms`);
    } catch (error) {
      const delay = policy.delaysMs[index];
      if (delay === undefined || policy.stopped()) throw error;
      policy.logger.warn({ what, attempt: index + 1, err: describeError(error) }, "ingress submit failed; retrying");
      await new Promise((resolve) => setTimeout(resolve, delay));
      if (policy.stopped()) throw error;
    }
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
