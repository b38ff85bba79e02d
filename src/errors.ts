/**
 * Errors named for what the caller must do. The queue maps them to job outcomes:
 * `PermanentError` fails the job without a retry, `RetryableError` retries after `retryAfterMs`.
 */

export class PermanentError extends Error {
  override readonly name: string = "PermanentError";
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export class RetryableError extends Error {
  override readonly name: string = "RetryableError";
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super(message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/** The provider refused the prompt as too long. `contextWindow` is the real window when the error states it. */
export class ContextOverflowError extends PermanentError {
  override readonly name = "ContextOverflowError";
  readonly contextWindow: number | undefined;
  constructor(message: string, options?: { cause?: unknown; contextWindow?: number }) {
    super(message, options);
    this.contextWindow = options?.contextWindow;
  }
}

/**
 * A budget (issue #17) has no room for the next LLM call, which was therefore not made. `notice`
 * is the sentence the chat gets ("today's budget for this chat is used up; …"). Never retried:
 * the budget only frees up when its period resets.
 */
export class BudgetExhaustedError extends PermanentError {
  override readonly name = "BudgetExhaustedError";
  /** Retrying cannot help (the summarizer's retry loop stops on it without importing this file). */
  readonly final = true;
  constructor(readonly notice: string, options?: { cause?: unknown }) {
    super(notice, options);
  }
}

/** The operation was aborted on purpose (/stop, interrupt, shutdown). */
export class AbortedError extends Error {
  override readonly name = "AbortedError";
  constructor(message = "aborted", options?: { cause?: unknown }) {
    super(message, options);
  }
}

export const errorMessage = (error: unknown): string =>
  error instanceof Error ? error.message : typeof error === "string" ? error : JSON.stringify(error);
