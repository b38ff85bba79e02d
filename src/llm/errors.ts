/**
 * The failures of the LLM transport (transport.ts), and their mapping to the errors named for
 * what the caller must do (`src/errors.ts`); `classifyLlmError` classes them for metrics. Every
 * mapped error keeps the transport's error as `cause`.
 *
 * A failed response keeps its status, headers and raw body (`LlmHttpError`): the message is the
 * body's own words (`error.message`, a string `error`, `message` or `detail`, OpenRouter's
 * `metadata.raw`), so vLLM's older flat `{object:"error", message, code:400}` and every other
 * backend's overflow wording reach the overflow rule (src/context/overflow.ts).
 */
import { detectContextOverflow } from "../context/overflow.js";
import { AbortedError, ContextOverflowError, PermanentError, RetryableError } from "../errors.js";

export type LlmErrorKind =
  | "overflow" | "rate-limit" | "server" | "timeout" | "connection" | "auth" | "bad-request" | "aborted" | "unknown";

/** A non-2xx answer as the server sent it. `code` and `type` are `body.error`'s, when it has them. */
export class LlmHttpError extends Error {
  override readonly name = "LlmHttpError";
  readonly code: unknown;
  readonly type: unknown;
  constructor(readonly status: number, readonly headers: Headers, readonly body: string) {
    super(`${status} ${messageInBody(body) ?? (body.trim() === "" ? "status code (no body)" : truncate(body.trim(), 500))}`);
    const parsed = unwrapped(safeParse(body));
    const error = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : undefined;
    this.code = error?.code;
    this.type = error?.type;
  }
}

/** No answer within `timeoutMs`: no headers, a plain body not read in time, or a stream gone idle. */
export class LlmTimeoutError extends Error {
  override readonly name = "LlmTimeoutError";
}

/** The connection failed or dropped (refused, reset, closed mid-body); `cause` is the network error. */
export class LlmConnectionError extends Error {
  override readonly name = "LlmConnectionError";
}

/**
 * An error reported inside a 200 response instead of a completion. OpenRouter does this when the
 * upstream provider fails after the status line was sent: `{error: {message, code}}` with no
 * `choices`.
 */
export class ProviderErrorBody extends Error {
  override readonly name = "ProviderErrorBody";
  constructor(
    message: string,
    readonly status: number | undefined,
    readonly code: unknown,
    readonly type: unknown,
    readonly body: string,
  ) {
    super(message);
  }
}

/** Builds the error for a 200 response that carries no choice; the body is the parsed JSON. */
export function errorFromCompletionBody(body: unknown): Error {
  const text = safeStringify(body);
  const error = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  if (!error) return new ProviderErrorBody(`response without choices: ${truncate(text, 300)}`, undefined, undefined, undefined, text);
  const status = typeof error.code === "number" ? error.code : undefined;
  return new ProviderErrorBody(messageInBody(text) ?? "provider error", status, error.code, error.type, text);
}

interface Facts {
  kind: "api" | "aborted" | "timeout" | "connection" | "other";
  status?: number;
  code?: unknown;
  type?: unknown;
  message: string;
  body?: string;
  headers?: Headers;
}

function factsOf(error: unknown): Facts {
  if (error instanceof AbortedError || (error instanceof Error && error.name === "AbortError")) return { kind: "aborted", message: error.message };
  if (error instanceof LlmTimeoutError) return { kind: "timeout", message: error.message };
  if (error instanceof LlmConnectionError) return { kind: "connection", message: error.message };
  if (error instanceof ProviderErrorBody) {
    return { kind: "api", status: error.status, code: error.code, type: error.type, message: error.message, body: error.body };
  }
  if (error instanceof LlmHttpError) {
    return { kind: "api", status: error.status, code: error.code, type: error.type, message: error.message, body: error.body, headers: error.headers };
  }
  return { kind: "other", message: error instanceof Error ? error.message : String(error) };
}

function kindOf(facts: Facts): LlmErrorKind {
  if (facts.kind === "aborted") return "aborted";
  if (facts.kind === "timeout") return "timeout";
  if (facts.kind === "connection") return "connection";
  if (facts.kind === "other") return "unknown";
  if (detectContextOverflow(facts).overflow) return "overflow";
  const status = facts.status;
  if (status === undefined) return "unknown";
  if (status === 429) return "rate-limit";
  if (status === 408) return "timeout";
  if (status === 409 || status >= 500) return "server";
  if (status === 401 || status === 403) return "auth";
  if (status >= 400) return "bad-request";
  return "unknown";
}

/** The failure's class, for metrics and logs. Accepts the transport's errors and errors mapped by `toLlmError`. */
export function classifyLlmError(error: unknown): LlmErrorKind {
  if (error instanceof ContextOverflowError) return "overflow";
  if (error instanceof AbortedError) return "aborted";
  if ((error instanceof PermanentError || error instanceof RetryableError) && error.cause !== undefined) {
    return classifyLlmError(error.cause);
  }
  return kindOf(factsOf(error));
}

export interface MapOptions {
  /** The caller's signal: once it fired, any failure is an abort. */
  signal?: AbortSignal;
  /** Masks secrets in the message of the error returned. */
  redact?: (text: string) => string;
}

/** The error the caller should act on, with the transport's error as `cause`. Our own errors pass through. */
export function toLlmError(error: unknown, options: MapOptions = {}): Error {
  if (error instanceof PermanentError || error instanceof RetryableError || error instanceof AbortedError) return error;
  const redact = options.redact ?? ((text: string) => text);
  const facts = factsOf(error);
  const kind = options.signal?.aborted ? "aborted" : kindOf(facts);
  const message = redact(`LLM ${kind}: ${truncate(facts.message, 1_000)}`);
  switch (kind) {
    case "aborted":
      return new AbortedError("LLM request aborted", { cause: error });
    case "overflow": {
      const { contextWindow } = detectContextOverflow(facts);
      return new ContextOverflowError(message, contextWindow === undefined ? { cause: error } : { cause: error, contextWindow });
    }
    case "rate-limit":
    case "server":
    case "timeout":
    case "connection":
    case "unknown": {
      const retryAfterMs = facts.headers ? retryAfterMsFromHeaders(facts.headers) : undefined;
      return new RetryableError(message, retryAfterMs === undefined ? { cause: error } : { cause: error, retryAfterMs });
    }
    case "auth":
    case "bad-request":
      return new PermanentError(message, { cause: error });
  }
}

/**
 * The wait a server asks for, read as the openai SDK read it: `retry-after-ms` (milliseconds,
 * non-standard), else `retry-after` (seconds, or an HTTP date).
 */
export function retryAfterMsFromHeaders(headers: Headers): number | undefined {
  const milliseconds = Number.parseFloat(headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(milliseconds) && milliseconds >= 0) return milliseconds;
  const retryAfter = headers.get("retry-after");
  if (!retryAfter) return undefined;
  const seconds = Number.parseFloat(retryAfter);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(retryAfter);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

/** Google's OpenAI-compatible endpoint wraps its error in a one-element array: `[{ error: {...} }]`. */
const unwrapped = (parsed: unknown): unknown => (Array.isArray(parsed) && parsed.length === 1 && isRecord(parsed[0]) && "error" in parsed[0] ? parsed[0] : parsed);

/** The human part of an error body: `error.message`, a string `error`, `message` or `detail`. */
function messageInBody(body: string): string | undefined {
  const parsed = unwrapped(safeParse(body));
  if (!isRecord(parsed)) return body.trim() === "" ? undefined : truncate(body.trim(), 500);
  const error = parsed.error;
  const message =
    typeof error === "string" ? error
    : isRecord(error) && typeof error.message === "string" ? error.message
    : typeof parsed.message === "string" ? parsed.message
    : typeof parsed.detail === "string" ? parsed.detail
    : undefined;
  // OpenRouter: "Provider returned error", the provider's own body in `metadata.raw`.
  const raw = isRecord(error) && isRecord(error.metadata) ? error.metadata.raw : undefined;
  const inner = typeof raw === "string" ? messageInBody(raw) : undefined;
  return inner && message ? `${message}: ${inner}` : message ?? inner;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null;

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function safeStringify(value: unknown): string {
  try {
    return typeof value === "string" ? value : JSON.stringify(value) ?? "";
  } catch {
    return String(value);
  }
}

const truncate = (text: string, length: number): string => (text.length > length ? `${text.slice(0, length)}…` : text);

