/**
 * The LLM client: one OpenAI-compatible endpoint (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama)
 * behind `LlmClient`. The only code in the project that imports `openai`.
 *
 * Retries are the SDK's own (openai 6.49.0): connection errors, timeouts, 408, 409, 429 and 5xx
 * are retried `maxRetries` times, honouring `retry-after-ms` / `retry-after` / `x-should-retry`,
 * otherwise backing off 0.5 s, 1 s, 2 s … (max 8 s, up to 25% jitter). `timeoutMs` is per
 * attempt: a call may take (maxRetries + 1) × timeoutMs plus the waits. What is left after the
 * retries is mapped by `toLlmError` (errors.ts). The SDK's timeout ends when the headers arrive;
 * `observedFetch` extends it over the body.
 *
 * The SDK obeys any `retry-after`, however long: 6.49.0 has no cap (older releases fell back to
 * their own backoff above 60 s). A worker must not sleep for an hour inside a turn, so a response
 * asking for more than `maxRetryAfterMs` is marked `x-should-retry: false` on its way into the
 * SDK: the call fails at once with a `RetryableError` carrying the server's `retryAfterMs`, and
 * the queue schedules the retry.
 */
import { randomUUID } from "node:crypto";
import OpenAI from "openai";
import type { Logger } from "pino";
import type { ToolCall } from "../core/messages.js";
import { alternateRoles } from "./alternate-roles.js";
import { AbortedError, ContextOverflowError } from "../errors.js";
import { silentLogger } from "../logger.js";
import { classifyLlmError, errorFromCompletionBody, rememberRawBody, retryAfterMsFromHeaders, toLlmError } from "./errors.js";
import { resolveContextWindow, usesMaxCompletionTokens } from "./models.js";
import type { ChatRequest, ChatResult, LlmClient, TokenUsage, WireMessage } from "../core/llm.js";

export interface LlmClientOptions {
  /** OpenAI-compatible base URL ending in `/v1`, e.g. `http://127.0.0.1:11434/v1` for Ollama. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`. Default `"none"`: local servers need no key. */
  apiKey?: string;
  model: string;
  /** Configured window in tokens. Default: the table in models.ts, else 128000. */
  contextWindow?: number;
  /** Timeout of one attempt in ms; the SDK restarts it on every retry. */
  timeoutMs: number;
  /** Retries inside one `complete()` of 408/409/429/5xx, timeouts and connection errors. */
  maxRetries: number;
  /** `max_tokens` of a request that sets none. Default: not sent (the server decides). */
  maxOutputTokens?: number;
  /** Longest `retry-after` waited for in-process; longer ones fail at once. Default 60000. */
  maxRetryAfterMs?: number;
  /** Default: silent. The API key is never logged. */
  logger?: Logger;
  /** LLM_ALTERNATE_ROLES: reshape each request for templates that need alternating roles (alternate-roles.ts). */
  alternateRoles?: boolean;
}

export interface OpenAiLlmClient extends LlmClient {
  /**
   * Records the real window stated by an overflow error (the client also does this itself when
   * it maps one). From then on `contextWindow` is the smaller of this and the configured/tabled
   * value.
   */
  learnContextWindow(contextWindow: number): void;
}

/** The SDK keeps only `body.error` of a failed response; this keeps the whole body too. */
class BodyKeepingOpenAI extends OpenAI {
  protected override makeStatusError(status: number, error: object, message: string | undefined, headers: Headers) {
    const apiError = super.makeStatusError(status, error, message, headers);
    // `error` is the parsed JSON body, or undefined with the raw text in `message`.
    const raw = error === undefined || error === null ? message : JSON.stringify(error);
    if (raw) rememberRawBody(apiError, raw);
    return apiError;
  }
}

export function createLlmClient(options: LlmClientOptions): OpenAiLlmClient {
  const log = (options.logger ?? silentLogger).child({ component: "llm", model: options.model });
  const apiKey = options.apiKey ?? "none";
  const secret = options.apiKey !== undefined && options.apiKey.length >= 6 ? options.apiKey : undefined;
  const redact = (text: string): string => (secret === undefined ? text : text.split(secret).join("[REDACTED]"));
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
  const configuredWindow = resolveContextWindow(options.model, options.contextWindow);
  let learnedWindow: number | undefined;

  const sdk = new BodyKeepingOpenAI({
    baseURL: options.baseUrl,
    apiKey,
    // Explicit nulls: otherwise the SDK reads OPENAI_ORG_ID / OPENAI_PROJECT_ID from the environment.
    organization: null,
    project: null,
    webhookSecret: null,
    timeout: options.timeoutMs,
    maxRetries: options.maxRetries,
    fetch: observedFetch({ timeoutMs: options.timeoutMs, maxRetryAfterMs, log, redact }),
    logLevel: "warn",
    logger: {
      error: (message: string) => log.error(redact(message)),
      warn: (message: string) => log.warn(redact(message)),
      info: (message: string) => log.info(redact(message)),
      debug: (message: string) => log.debug(redact(message)),
    },
  });

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
        const result = request.onText
          ? await untilAborted(streamed(sdk, request, request.onText, options), signal)
          : toChatResult(await untilAborted(sdk.chat.completions.create(buildParams(request, options), signal ? { signal } : undefined), signal), options.model);
        log.debug({ durationMs: Date.now() - started, finishReason: result.finishReason, toolCalls: result.toolCalls.length, usage: result.usage }, "llm step finished");
        return result;
      } catch (error: unknown) {
        const mapped = toLlmError(error, signal ? { signal, redact } : { redact });
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

function buildParams(request: ChatRequest, options: LlmClientOptions): OpenAI.ChatCompletionCreateParamsNonStreaming {
  const maxTokens = request.maxTokens ?? options.maxOutputTokens;
  const tools = request.tools ?? [];
  return {
    model: options.model,
    messages: toSdkMessages(options.alternateRoles ? alternateRoles(request.messages) : request.messages),
    ...(tools.length > 0 ? { tools: tools.map((tool) => ({ type: "function" as const, function: tool.function })), tool_choice: request.toolChoice ?? "auto" } : {}),
    ...(maxTokens === undefined ? {} : usesMaxCompletionTokens(options.model) ? { max_completion_tokens: maxTokens } : { max_tokens: maxTokens }),
    ...(request.promptCacheKey === undefined ? {} : { prompt_cache_key: request.promptCacheKey }),
  };
}

/**
 * One streamed step: `stream: true` with `include_usage`, so the usage arrives in a last chunk
 * without choices. Text deltas go to `onText` as they arrive; tool calls are assembled by their
 * `index` (id and name in the first delta, the arguments in pieces). The result is built from
 * the chunks exactly as `toChatResult` builds it from a whole completion. A connection that
 * drops mid-stream fails the step (the SDK retries only before the headers): the turn's retry
 * takes it from there.
 */
async function streamed(sdk: OpenAI, request: ChatRequest, onText: (delta: string) => void, options: LlmClientOptions): Promise<ChatResult> {
  const params: OpenAI.ChatCompletionCreateParamsStreaming = { ...buildParams(request, options), stream: true, stream_options: { include_usage: true } };
  const stream = await sdk.chat.completions.create(params, request.signal ? { signal: request.signal } : undefined);
  let content: string | null = null;
  let finishReason: string | null = null;
  let model = "";
  let usage: OpenAI.CompletionUsage | undefined;
  let chosen = false;
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  for await (const chunk of stream) {
    if (request.signal?.aborted) break;
    const raw = chunk as unknown as { error?: unknown };
    if (raw.error !== undefined) throw errorFromCompletionBody(chunk);
    if (chunk.model) model = chunk.model;
    if (chunk.usage) usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) continue;
    chosen = true;
    const delta = choice.delta ?? {};
    if (typeof delta.content === "string" && delta.content !== "") {
      content = (content ?? "") + delta.content;
      onText(delta.content);
    }
    for (const call of delta.tool_calls ?? []) {
      const entry = calls.get(call.index) ?? { id: "", name: "", arguments: "" };
      if (call.id) entry.id = call.id;
      if (call.function?.name) entry.name += call.function.name;
      if (call.function?.arguments) entry.arguments += call.function.arguments;
      calls.set(call.index, entry);
    }
    if (choice.finish_reason) finishReason = choice.finish_reason;
  }
  if (!chosen) throw errorFromCompletionBody({ streamed: "no choice in any chunk" });
  const toolCalls: ToolCall[] = [...calls.entries()].sort(([a], [b]) => a - b).filter(([, call]) => call.name !== "").map(([, call]) => ({
    id: call.id || `call_${randomUUID()}`,
    type: "function",
    function: { name: call.name, arguments: call.arguments.trim() === "" ? "{}" : call.arguments },
  }));
  const mapped = toUsage(usage);
  return { content, toolCalls, finishReason, ...(mapped === undefined ? {} : { usage: mapped }), model: model || options.model };
}

/**
 * Our wire messages are the chat API's shapes, plus `cache_control` on text parts, which
 * OpenRouter passes to Anthropic and other servers ignore. The SDK's types know no
 * `cache_control`, hence the one cast.
 */
const toSdkMessages = (messages: readonly WireMessage[]): OpenAI.ChatCompletionMessageParam[] =>
  messages.map((message) => ({ ...message }) as OpenAI.ChatCompletionMessageParam);

function toChatResult(completion: OpenAI.ChatCompletion, configuredModel: string): ChatResult {
  const choice = completion.choices?.[0];
  if (!choice) throw errorFromCompletionBody(completion);
  const toolCalls: ToolCall[] = [];
  for (const call of choice.message.tool_calls ?? []) {
    // Some servers omit `type`; custom (free-form) tools are not ours.
    if (!("function" in call) || !call.function) continue;
    const args: unknown = call.function.arguments;
    toolCalls.push({
      id: call.id || `call_${randomUUID()}`,
      type: "function",
      function: {
        name: call.function.name,
        arguments: typeof args === "string" ? (args.trim() === "" ? "{}" : args) : JSON.stringify(args ?? {}),
      },
    });
  }
  const usage = toUsage(completion.usage);
  return {
    content: choice.message.content ?? null,
    toolCalls,
    finishReason: choice.finish_reason ?? null,
    ...(usage === undefined ? {} : { usage }),
    model: completion.model || configuredModel,
  };
}

function toUsage(usage: OpenAI.CompletionUsage | undefined): TokenUsage | undefined {
  if (!usage) return undefined;
  // DeepSeek reports cache hits as `prompt_cache_hit_tokens` instead of the OpenAI field.
  const deepSeekHits = (usage as { prompt_cache_hit_tokens?: unknown }).prompt_cache_hit_tokens;
  return {
    promptTokens: usage.prompt_tokens ?? 0,
    completionTokens: usage.completion_tokens ?? 0,
    cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? (typeof deepSeekHits === "number" ? deepSeekHits : 0),
  };
}

/**
 * Settles as soon as the signal fires. The SDK only notices an abort between attempts after its
 * retry sleep (up to `maxRetryAfterMs`); /stop must not wait for that.
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new AbortedError("LLM request aborted", { cause: signal.reason }));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

interface FetchPolicy {
  timeoutMs: number;
  maxRetryAfterMs: number;
  log: Logger;
  redact: (text: string) => string;
}

/**
 * The fetch the SDK uses. It logs each failed attempt (the SDK numbers them in the
 * `x-stainless-retry-count` request header) and mends two gaps of the SDK:
 * - the SDK's timeout stops at the response headers; a server (or proxy) that sends headers and
 *   then stalls would hang the turn forever. The body of a successful response is read here,
 *   within what is left of `timeoutMs`, and a stall fails like a timeout ("timed out" is what
 *   the SDK looks for), so the SDK retries it as one;
 * - a `retry-after` above `maxRetryAfterMs` gets `x-should-retry: false` (see the file comment).
 */
function observedFetch({ timeoutMs, maxRetryAfterMs, log, redact }: FetchPolicy): typeof fetch {
  return async (input, init) => {
    const started = Date.now();
    const attempt = Number(new Headers(init?.headers).get("x-stainless-retry-count") ?? 0) + 1;
    const controller = new AbortController();
    const forward = () => controller.abort(init?.signal?.reason);
    if (init?.signal?.aborted) forward();
    init?.signal?.addEventListener("abort", forward, { once: true });
    let streaming = false;
    try {
      const response = await fetch(input, { ...init, signal: controller.signal });
      if (response.ok && isEventStream(response)) {
        // The caller's abort must reach the body too: the listener stays while it is read.
        streaming = true;
        return untilIdle(response, timeoutMs, controller, () => init?.signal?.removeEventListener("abort", forward));
      }
      if (response.ok) return await readWithin(response, timeoutMs - (Date.now() - started), controller);
      const retryAfterMs = retryAfterMsFromHeaders(response.headers);
      log.info({ attempt, status: response.status, retryAfterMs }, "llm attempt failed");
      if (retryAfterMs === undefined || retryAfterMs <= maxRetryAfterMs) return response;
      const headers = new Headers(response.headers);
      headers.set("x-should-retry", "false");
      log.warn({ retryAfterMs, maxRetryAfterMs }, "retry-after too long to wait in-process; leaving the retry to the caller");
      return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
    } catch (error: unknown) {
      // An aborted fetch is the SDK's timeout or the caller's signal; the step log tells which.
      const message = init?.signal?.aborted ? "aborted (timeout or caller)" : error instanceof Error ? error.message : String(error);
      log.info({ attempt, error: redact(message) }, "llm attempt failed");
      throw error;
    } finally {
      if (!streaming) init?.signal?.removeEventListener("abort", forward);
    }
  };
}

const isEventStream = (response: Response) => (response.headers.get("content-type") ?? "").includes("text/event-stream");

/**
 * A streamed body is handed on as it arrives; a stall (no bytes for `idleMs`) aborts it with a
 * "timed out" error, so a server that stops mid-answer cannot hang the turn.
 */
function untilIdle(response: Response, idleMs: number, controller: AbortController, done: () => void): Response {
  const body = response.body;
  if (!body) {
    done();
    return response;
  }
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(new Error("LLM response stream timed out")), idleMs);
  };
  arm();
  const watched = body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, sink) {
      arm();
      sink.enqueue(chunk);
    },
    flush() {
      clearTimeout(timer);
      done();
    },
  }));
  controller.signal.addEventListener("abort", () => {
    clearTimeout(timer);
    done();
  }, { once: true });
  return new Response(watched, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/** The response with its body read in full, or a "timed out" error after `remainingMs`. */
async function readWithin(response: Response, remainingMs: number, controller: AbortController): Promise<Response> {
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const error = new Error("LLM response body timed out");
      controller.abort(error);
      reject(error);
    }, Math.max(remainingMs, 0));
  });
  const text = response.text();
  text.catch(() => {}); // settles after the abort above; the stall error is the one reported
  try {
    const body = await Promise.race([text, stalled]);
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  } finally {
    clearTimeout(timer);
  }
}
