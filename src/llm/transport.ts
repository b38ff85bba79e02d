/**
 * One POST to an OpenAI-compatible endpoint with the openai SDK's retry semantics (6.49.0, which
 * this replaced), on undici's `request()` over one keep-alive connection pool per client.
 *
 * Retried `maxRetries` times: connection errors, timeouts, 408, 409, 429 and 5xx; a response's
 * `x-should-retry: true/false` overrides the status. The wait is what the server asks for
 * (`retry-after-ms`, else `retry-after` in seconds or as an HTTP date), otherwise 0.5 s, 1 s,
 * 2 s … at most 8 s, each shortened by up to 25 % jitter. A `retry-after` above `maxRetryAfterMs`
 * is not waited for: the attempt's error goes to the caller at once (mapped to a RetryableError
 * carrying `retryAfterMs`, so the queue schedules the retry; a worker must not sleep an hour
 * inside a turn).
 *
 * `timeoutMs` is per attempt: until the headers, and for a plain answer until its whole body is
 * read; a streamed body may then go on for as long as it keeps coming, but fails when no byte
 * arrives for `timeoutMs` (undici's `bodyTimeout`). A failure while reading a 2xx body is retried
 * only while `retryable()` says so: a streamed answer whose text was already handed on cannot be
 * taken back, and fails (the turn's retry takes it from there). The caller's signal ends
 * everything at once, also a retry wait, with an AbortedError.
 */
import { Pool, type Dispatcher } from "undici";
import type { Logger } from "pino";
import packageJson from "../../package.json" with { type: "json" };
import { AbortedError } from "../errors.js";
import { LlmConnectionError, LlmHttpError, LlmTimeoutError, retryAfterMsFromHeaders } from "./errors.js";

export interface TransportOptions {
  /** OpenAI-compatible base URL ending in `/v1`. */
  baseUrl: string;
  apiKey: string;
  timeoutMs: number;
  maxRetries: number;
  maxRetryAfterMs: number;
  log: Logger;
  /** Masks the API key in what is logged. */
  redact: (text: string) => string;
}

export type ResponseBody = Dispatcher.ResponseData["body"];

export interface PostOptions<T> {
  /** Streamed: `accept: text/event-stream` and the idle timeout on the body (see the file comment). */
  stream: boolean;
  signal?: AbortSignal;
  /** Reads a 2xx body into the result; its failure is retried like the attempt's own. */
  read: (body: ResponseBody, headers: Dispatcher.ResponseData["headers"]) => Promise<T>;
  /** Whether a failed `read` may still be retried. Default: yes. */
  retryable?: () => boolean;
}

export interface Transport {
  post<T>(path: string, body: string, options: PostOptions<T>): Promise<T>;
}

const USER_AGENT = `longhaul/${packageJson.version}`;

export function createTransport(options: TransportOptions): Transport {
  const url = new URL(options.baseUrl);
  const basePath = url.pathname.replace(/\/+$/, "");
  const pool = new Pool(url.origin);
  const authorization = `Bearer ${options.apiKey}`;
  const { log, redact, timeoutMs, maxRetries, maxRetryAfterMs } = options;

  async function attempt<T>(path: string, body: string, post: PostOptions<T>): Promise<T> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new LlmTimeoutError(`LLM request timed out after ${timeoutMs} ms`)), timeoutMs);
    const forward = () => controller.abort(new AbortedError("LLM request aborted", { cause: post.signal?.reason }));
    post.signal?.addEventListener("abort", forward, { once: true });
    let response: Dispatcher.ResponseData | undefined;
    try {
      response = await pool.request({
        method: "POST",
        path: basePath + path,
        headers: {
          authorization,
          "content-type": "application/json",
          accept: post.stream ? "text/event-stream" : "application/json",
          "user-agent": USER_AGENT,
        },
        body,
        signal: controller.signal,
        // Ours (the timer) decides until the headers; a streamed body may idle for timeoutMs.
        headersTimeout: 0,
        bodyTimeout: post.stream ? timeoutMs : 0,
      });
      if (response.statusCode < 200 || response.statusCode > 299) {
        const text = await response.body.text();
        throw new LlmHttpError(response.statusCode, toHeaders(response.headers), text);
      }
      if (post.stream) clearTimeout(timer);
      return await post.read(response.body, response.headers);
    } catch (error: unknown) {
      // A body left unread would keep its connection busy: give the connection up instead.
      if (response && !response.body.readableEnded) response.body.destroy();
      throw controller.signal.aborted && controller.signal.reason instanceof Error ? controller.signal.reason : asTransportError(error);
    } finally {
      clearTimeout(timer);
      post.signal?.removeEventListener("abort", forward);
    }
  }

  return {
    async post(path, body, post) {
      for (let attemptNumber = 1; ; attemptNumber++) {
        if (post.signal?.aborted) throw new AbortedError("LLM request aborted", { cause: post.signal.reason });
        try {
          return await attempt(path, body, post);
        } catch (error: unknown) {
          if (error instanceof AbortedError) throw error;
          const isHttp = error instanceof LlmHttpError;
          const retryAfterMs = isHttp ? retryAfterMsFromHeaders(error.headers) : undefined;
          log.info({ attempt: attemptNumber, ...(isHttp ? { status: error.status, retryAfterMs } : { error: redact(error instanceof Error ? error.message : String(error)) }) }, "llm attempt failed");
          const retries = isHttp ? shouldRetry(error) : error instanceof LlmTimeoutError || error instanceof LlmConnectionError;
          if (!retries || attemptNumber > maxRetries || (!isHttp && post.retryable?.() === false)) throw error;
          if (retryAfterMs !== undefined && retryAfterMs > maxRetryAfterMs) {
            log.warn({ retryAfterMs, maxRetryAfterMs }, "retry-after too long to wait in-process; leaving the retry to the caller");
            throw error;
          }
          await sleep(retryAfterMs ?? backoffMs(attemptNumber), post.signal);
        }
      }
    },
  };
}

/** The server's own verdict first, then the status. */
function shouldRetry(error: LlmHttpError): boolean {
  const verdict = error.headers.get("x-should-retry");
  if (verdict === "true") return true;
  if (verdict === "false") return false;
  return error.status === 408 || error.status === 409 || error.status === 429 || error.status >= 500;
}

/** 0.5 s × 2^(retry − 1), at most 8 s, minus up to 25 % jitter: the SDK's backoff. */
const backoffMs = (retry: number): number => Math.min(500 * 2 ** (retry - 1), 8_000) * (1 - Math.random() * 0.25);

/** Waits `ms`; the caller's abort ends the wait at once. */
function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AbortedError("LLM request aborted during a retry wait", { cause: signal.reason }));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AbortedError("LLM request aborted during a retry wait", { cause: signal?.reason }));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** undici's network failures (its `UND_ERR_*` codes, Node's `E*` socket codes) named for what they are. */
function asTransportError(error: unknown): unknown {
  if (!(error instanceof Error) || error instanceof LlmHttpError) return error;
  const code = (error as { code?: unknown }).code;
  if (typeof code !== "string") return error;
  if (code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT" || code === "UND_ERR_CONNECT_TIMEOUT") {
    return new LlmTimeoutError(`LLM request timed out (${error.message})`, { cause: error });
  }
  if (code.startsWith("UND_ERR") || code.startsWith("E")) return new LlmConnectionError(`connection failed: ${error.message}`, { cause: error });
  return error;
}

function toHeaders(raw: Dispatcher.ResponseData["headers"]): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (Array.isArray(value)) for (const item of value) headers.append(name, item);
    else if (value !== undefined) headers.set(name, value);
  }
  return headers;
}
