/**
 * What a failed model call means for the caller: the openai SDK's errors (`APIError` and its
 * subclasses, with status, headers and the parsed body), a body that broke off after the headers
 * (undici's own error: the stall timeout or a dropped connection), or an error inside a 200
 * answer, mapped to the errors named for what the caller must do (`src/errors.ts`);
 * `classifyLlmError` classes them for metrics. Every mapped error keeps the original as `cause`.
 *
 * A message carries the status and the provider's own words (`error.message`, or `message` /
 * `detail` of a flat body, pydantic's `detail[].msg`, OpenRouter's `metadata.raw`), with the key masked; never a raw body
 * (a proxy's HTML page, a body echoing the request). The raw body is read only by the overflow
 * rules (src/context/overflow.ts), which also know vLLM's and llama.cpp's wordings.
 */
import OpenAI from "openai";
import { detectContextOverflow } from "../context/overflow.js";
import { AbortedError, ContextOverflowError, PermanentError, RetryableError } from "../errors.js";

export type LlmErrorKind =
  | "overflow" | "rate-limit" | "server" | "timeout" | "connection" | "auth" | "bad-request" | "aborted" | "unknown";

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
  if (!error) return new ProviderErrorBody(`response without choices${isRecord(body) && typeof body.streamed === "string" ? ` (${body.streamed})` : ""}`, undefined, undefined, undefined, text);
  const status = typeof error.code === "number" ? error.code : undefined;
  return new ProviderErrorBody(wordsOf(body) ?? "provider error", status, error.code, error.type, text);
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

/** undici's codes for a body that stopped coming (its `cause` when the error is fetch's "terminated"). */
const codeOf = (error: unknown): string | undefined => {
  for (let current = error, depth = 0; current instanceof Error && depth < 3; current = current.cause, depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return undefined;
};

function factsOf(error: unknown, rawBody: (headers: Headers | undefined) => string | undefined): Facts {
  if (error instanceof AbortedError || error instanceof OpenAI.APIUserAbortError || (error instanceof Error && error.name === "AbortError")) return { kind: "aborted", message: "aborted" };
  if (error instanceof OpenAI.APIConnectionTimeoutError) return { kind: "timeout", message: "request timed out" };
  if (error instanceof OpenAI.APIConnectionError) return { kind: "connection", message: `connection failed${codeOf(error.cause) ? ` (${codeOf(error.cause)})` : ""}` };
  if (error instanceof ProviderErrorBody) {
    return { kind: "api", status: error.status, code: error.code, type: error.type, message: error.message, body: error.body };
  }
  if (error instanceof OpenAI.APIError) {
    // An error chunk inside a stream has no HTTP status; OpenRouter puts one in `error.code`.
    const status = error.status ?? (typeof error.code === "number" ? (error.code as number) : undefined);
    const body = rawBody(error.headers) ?? (error.error === undefined ? undefined : safeStringify({ error: error.error }));
    const words = body === undefined ? undefined : wordsOf(safeParse(body));
    return { kind: "api", status, code: error.code, type: error.type, message: `${status ?? ""} ${words ?? (body ? "(the provider's words not shown)" : "status code (no body)")}`.trim(), ...(body === undefined ? {} : { body }), ...(error.headers ? { headers: error.headers } : {}) };
  }
  // A body that broke off after the headers: undici's stall timeout, or the connection dropped.
  const code = codeOf(error);
  if (code === "UND_ERR_BODY_TIMEOUT" || code === "UND_ERR_HEADERS_TIMEOUT") return { kind: "timeout", message: `no answer for the timeout (${code})` };
  if (code !== undefined && (code.startsWith("UND_ERR") || code.startsWith("E"))) return { kind: "connection", message: `connection failed (${code})` };
  if (error instanceof TypeError && error.message === "terminated") return { kind: "connection", message: "connection closed mid-answer" };
  // A JSON parser's message quotes the body it choked on.
  if (error instanceof SyntaxError) return { kind: "other", message: "the answer was not valid JSON" };
  return { kind: "other", message: error instanceof Error ? `${error.name}: ${error.message}` : String(error) };
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

/** The failure's class, for metrics and logs. Accepts raw failures and errors mapped by `toLlmError`. */
export function classifyLlmError(error: unknown): LlmErrorKind {
  if (error instanceof ContextOverflowError) return "overflow";
  if (error instanceof AbortedError) return "aborted";
  if ((error instanceof PermanentError || error instanceof RetryableError) && error.cause !== undefined) {
    return classifyLlmError(error.cause);
  }
  return kindOf(factsOf(error, () => undefined));
}

export interface MapOptions {
  /** The caller's signal: once it fired, any failure is an abort. */
  signal?: AbortSignal;
  /** Masks secrets in the message of the error returned. */
  redact?: (text: string) => string;
  /** The raw body of a failed answer by its headers (sdk.ts keeps them). */
  rawBody?: (headers: Headers | undefined) => string | undefined;
}

/** The error the caller should act on, with the original as `cause`. Our own errors pass through. */
export function toLlmError(error: unknown, options: MapOptions = {}): Error {
  if (error instanceof PermanentError || error instanceof RetryableError || error instanceof AbortedError) return error;
  const redact = options.redact ?? ((text: string) => text);
  const facts = factsOf(error, options.rawBody ?? (() => undefined));
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
 * The wait a server asks for, read as the openai SDK reads it when it retries: `retry-after-ms`
 * (milliseconds, non-standard), else `retry-after` (seconds, or an HTTP date). Here for the cap
 * (sdk.ts) and for the RetryableError handed to the queue.
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

/**
 * The provider's own words in a parsed error body: `error.message`, a string `error`, `message`
 * or `detail`; OpenRouter's "Provider returned error" followed by the provider's words from
 * `metadata.raw`. Google's endpoint wraps its body in a one-element array.
 */
function wordsOf(parsed: unknown): string | undefined {
  const body = Array.isArray(parsed) && parsed.length === 1 ? parsed[0] : parsed;
  if (!isRecord(body)) return undefined;
  const error = body.error;
  const message =
    typeof error === "string" ? error
    : isRecord(error) && typeof error.message === "string" ? error.message
    : typeof body.message === "string" ? body.message
    : typeof body.detail === "string" ? body.detail
    : Array.isArray(body.detail) ? detailMessages(body.detail)
    : isRecord(body.message) && Array.isArray(body.message.detail) ? detailMessages(body.message.detail)
    : undefined;
  const raw = isRecord(error) && isRecord(error.metadata) ? error.metadata.raw : undefined;
  const inner = typeof raw === "string" ? wordsOf(safeParse(raw)) ?? truncate(raw.trim(), 200) : undefined;
  return inner && message ? `${message}: ${inner}` : message ?? inner;
}

/** FastAPI/pydantic's validation list (Mistral nests it in `message`): each entry's `msg` and where it points, never its `input`. */
const detailMessages = (detail: unknown[]): string | undefined => {
  const messages = detail.flatMap((entry) => (isRecord(entry) && typeof entry.msg === "string" ? [`${entry.msg}${Array.isArray(entry.loc) ? ` (${entry.loc.join(".")})` : ""}`] : []));
  return messages.length > 0 ? messages.join("; ") : undefined;
};

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
