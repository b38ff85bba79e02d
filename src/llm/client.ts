/**
 * The LLM client: one OpenAI-compatible endpoint behind `LlmClient`, on the openai SDK
 * (`chat.completions.create`, plain or streamed; sdk.ts builds the SDK client in the provider's
 * dialect, with the stall timeout and the `retry-after` cap). The request body is shaped by the
 * provider's profile (providers/dialect.ts; the SDK sends fields it has no type for as given) and
 * the answer read into a `ChatResult` (completion.ts; unknown chunk fields such as
 * `reasoning_content` and a tool call's `extra_content` stay on the SDK's objects). The SDK
 * retries until the headers; our policy on top: a body that breaks off (stall timeout, dropped
 * connection) is asked for again while no text was handed on (at most `maxRetries` times), never
 * after; the caller's abort ends everything at once, a retry wait too. What is left is mapped by
 * `toLlmError` (errors.ts). docs/decisions.md: why the SDK came back (issue #27).
 */
import type { Logger } from "pino";
import { AbortedError, ContextOverflowError } from "../errors.js";
import { silentLogger } from "../logger.js";
import OpenAI from "openai";
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming, ChatCompletionCreateParamsStreaming } from "openai/resources/chat/completions";
import { classifyLlmError, toLlmError } from "./errors.js";
import { StreamedCompletion, toChatResult } from "./completion.js";
import { resolveContextWindow } from "./models.js";
import { shapeRequest } from "./providers/dialect.js";
import { resolveProfile } from "./providers/detect.js";
import type { ProviderName, ProviderProfile } from "./providers/profiles.js";
import { createSdk, rawErrorBody } from "./sdk.js";
import type { ChatRequest, ChatResult, LlmClient } from "../core/llm.js";

export interface LlmClientOptions {
  /** OpenAI-compatible base URL ending in `/v1`, e.g. `http://127.0.0.1:11434/v1` for Ollama. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …` (Azure: `api-key`). Default `"none"`: local servers need no key. */
  apiKey?: string;
  model: string;
  /** Configured window in tokens. Default: the table in models.ts, else 128000. */
  contextWindow?: number;
  /** Timeout of one attempt until the headers (the SDK's), and the longest silence of a body after them (sdk.ts). */
  timeoutMs: number;
  /** The SDK's retries inside one `complete()` (408/409/429/5xx, timeouts, connection errors); also how often a body that broke off before any text is asked for again. */
  maxRetries: number;
  /** `max_tokens` of a request that sets none. Default: not sent (the server decides). */
  maxOutputTokens?: number;
  /** Longest `retry-after` waited for in-process; longer ones fail at once. Default 60000. */
  maxRetryAfterMs?: number;
  /** Default: silent. The API key is never logged. */
  logger?: Logger;
  /** LLM_ALTERNATE_ROLES: reshape each request for templates that need alternating roles (alternate-roles.ts). */
  alternateRoles?: boolean;
  /** LLM_PROVIDER or a `models:` entry's `provider`; unset: detected from `baseUrl` (providers/detect.ts). */
  provider?: ProviderName;
}

export interface OpenAiLlmClient extends LlmClient {
  /**
   * Records the real window stated by an overflow error (the client also does this itself when
   * it maps one). From then on `contextWindow` is the smaller of this and the configured/tabled
   * value.
   */
  learnContextWindow(contextWindow: number): void;
}

export function createLlmClient(options: LlmClientOptions): OpenAiLlmClient {
  const log = (options.logger ?? silentLogger).child({ component: "llm", model: options.model });
  const secret = options.apiKey !== undefined && options.apiKey.length >= 6 ? options.apiKey : undefined;
  const redact = (text: string): string => (secret === undefined ? text : text.split(secret).join("[REDACTED]"));
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
  const configuredWindow = resolveContextWindow(options.model, options.contextWindow);
  let learnedWindow: number | undefined;
  const profile = resolveProfile(options.baseUrl, options.provider);

  const sdk = createSdk({ baseUrl: options.baseUrl, ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }), provider: profile.name, timeoutMs: options.timeoutMs, maxRetries: options.maxRetries, maxRetryAfterMs, log, redact });

  const client: OpenAiLlmClient = {
    model: options.model,
    get contextWindow() {
      return learnedWindow === undefined ? configuredWindow : Math.min(configuredWindow, learnedWindow);
    },
    learnContextWindow(contextWindow: number) {
      if (!Number.isFinite(contextWindow) || contextWindow < 256) return;
      if (learnedWindow === Math.floor(contextWindow)) return;
      learnedWindow = Math.floor(contextWindow);
      log.info({ learnedWindow, configuredWindow }, "context window learned from the provider");
    },

    async complete(request: ChatRequest): Promise<ChatResult> {
      const { signal } = request;
      if (signal?.aborted) throw new AbortedError("LLM request aborted before it was sent");
      const started = Date.now();
      try {
        const result = await untilAborted(askWithRetries(sdk, request, options, profile, log, redact), signal);
        log.debug({ durationMs: Date.now() - started, finishReason: result.finishReason, toolCalls: result.toolCalls.length, usage: result.usage }, "llm step finished");
        return result;
      } catch (error: unknown) {
        const mapped = toLlmError(error, signal ? { signal, redact, rawBody: rawErrorBody } : { redact, rawBody: rawErrorBody });
        const kind = classifyLlmError(mapped);
        if (mapped instanceof ContextOverflowError && mapped.contextWindow !== undefined) {
          client.learnContextWindow(mapped.contextWindow);
        }
        const level = kind === "aborted" ? "debug" : "warn";
        log[level]({ kind, durationMs: Date.now() - started, error: mapped.message }, "llm step failed");
        throw mapped;
      }
    },
  };
  return client;
}

/** The request body in the provider's dialect; `cache_control` on text parts goes out as given (OpenRouter passes it to Anthropic, others ignore it). */
const buildParams = (request: ChatRequest, options: LlmClientOptions, profile: ProviderProfile, stream: boolean): Record<string, unknown> =>
  shapeRequest(profile, request, {
    model: options.model,
    stream,
    ...(options.maxOutputTokens === undefined ? {} : { maxOutputTokens: options.maxOutputTokens }),
    ...(options.alternateRoles ? { alternateRoles: true } : {}),
  });

/**
 * One step, plain or streamed. The SDK has retried what failed before the headers; a body that
 * broke off after them (undici's error, not the SDK's) is asked for again while no text was
 * handed on, at most `maxRetries` times.
 */
async function askWithRetries(sdk: OpenAI, request: ChatRequest, options: LlmClientOptions, profile: ProviderProfile, log: Logger, redact: (text: string) => string): Promise<ChatResult> {
  for (let again = 0; ; again++) {
    const completion = request.onText ? new StreamedCompletion(request.onText, profile) : undefined;
    try {
      return completion ? await streamed(sdk, request, completion, options, profile) : await plain(sdk, request, options, profile);
    } catch (error: unknown) {
      const brokenBody = error instanceof Error && !(error instanceof AbortedError) && !(error instanceof OpenAI.OpenAIError) && !(error instanceof SyntaxError) && error.name !== "ProviderErrorBody";
      if (!brokenBody || completion?.textSent || again >= options.maxRetries || request.signal?.aborted) throw error;
      log.info({ again: again + 1, error: redact(error.message) }, "llm answer broke off before any text; asking again");
    }
  }
}

const requestOptions = (request: ChatRequest) => (request.signal ? { signal: request.signal } : {});

async function plain(sdk: OpenAI, request: ChatRequest, options: LlmClientOptions, profile: ProviderProfile): Promise<ChatResult> {
  const body = buildParams(request, options, profile, false) as unknown as ChatCompletionCreateParamsNonStreaming;
  const completion: ChatCompletion = await sdk.chat.completions.create(body, requestOptions(request));
  return toChatResult(completion, options.model, profile);
}

/**
 * One streamed step: `stream: true` (with `include_usage` where the profile accepts it). The
 * chunks are handed to `StreamedCompletion` as the SDK yields them; an abort from inside `onText`
 * hands on nothing more. A server that ignores `stream: true` and answers with one JSON
 * completion is read as one.
 */
async function streamed(sdk: OpenAI, request: ChatRequest, completion: StreamedCompletion, options: LlmClientOptions, profile: ProviderProfile): Promise<ChatResult> {
  const body = buildParams(request, options, profile, true) as unknown as ChatCompletionCreateParamsStreaming;
  const { data: stream, response } = await sdk.chat.completions.create(body, requestOptions(request)).withResponse();
  const { signal } = request;
  if ((response.headers.get("content-type") ?? "").includes("application/json")) {
    const whole = toChatResult(await response.json(), options.model, profile);
    if (whole.content) request.onText?.(whole.content);
    return whole;
  }
  for await (const chunk of stream as AsyncIterable<ChatCompletionChunk>) {
    if (signal?.aborted) break;
    completion.add(chunk);
  }
  // The SDK ends a stream quietly when its request was aborted.
  if (signal?.aborted) throw new AbortedError("LLM request aborted", { cause: signal.reason });
  return completion.result(options.model);
}

/** `work`, unless the caller's signal fires first (the SDK's retry wait does not listen to it). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortedError("LLM request aborted", { cause: signal.reason }));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
