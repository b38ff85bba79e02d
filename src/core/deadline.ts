/**
 * Deadlines for awaits on the intake and delivery paths (issue 28 item 9): a call that never
 * settles (a Redis frozen or on a half-open connection, a fetch that hangs) must not silence a
 * chat without a log line. The call itself is not cancelled: it may still land later, which
 * every caller must tolerate (the ingress dedupes, delivery writes are fenced).
 */

/** A step did not answer within its deadline. */
export class DeadlineError extends Error {
  override readonly name = "DeadlineError";
  constructor(readonly step: string, readonly ms: number) {
    super(`${step}: no answer within ${ms} ms`);
  }
}

/** `promise`, or a DeadlineError once `ms` have passed without it settling. */
export function withDeadline<T>(promise: Promise<T>, ms: number, step: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(step, ms)), ms);
  });
  // A late rejection of the original is nobody's business once the deadline answered.
  promise.catch(() => undefined);
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Calls `onOverdue(elapsed ms)` every `everyMs` while `promise` is pending, for a step that
 * must not be abandoned (a fenced write that will land when its store answers) but must not
 * stay silent either. → `promise`.
 */
export function watched<T>(promise: Promise<T>, everyMs: number, onOverdue: (elapsedMs: number) => void): Promise<T> {
  const started = Date.now();
  const timer = setInterval(() => onOverdue(Date.now() - started), everyMs);
  timer.unref();
  return promise.finally(() => clearInterval(timer));
}
