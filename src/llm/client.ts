/**
 * The LLM client: one OpenAI-compatible endpoint (OpenAI, OpenRouter, vLLM, llama.cpp, Ollama)
 * behind `LlmClient`. It builds the request, posts it through the transport (transport.ts:
 * undici, one keep-alive pool per client, the openai SDK's retry semantics, timeouts) and turns
 * the answer into a `ChatResult` (completion.ts); streamed answers are read by our own SSE
 * decoder (sse.ts). What is left after the retries is mapped by `toLlmError` (errors.ts).
 *
 * Why not the openai SDK (docs/decisions.md): it cost 2–3 ms of CPU per call on the worker's
 * hot path, most of a turn's LLM stage, for a few hundred lines of HTTP we can own.
 */
import type { Logger } from "pino";
import { AbortedError, ContextOverflowError } from "../errors.js";
import { silentLogger } from "../logger.js";
import { classifyLlmError, toLlmError } from "./errors.js";
import { readEvents, StreamedCompletion, toChatResult } from "./completion.js";
import { resolveContextWindow } from "./models.js";
import { shapeRequest } from "./providers/dialect.js";
import { resolveProfile } from "./providers/detect.js";
import type { ProviderName, ProviderProfile } from "./providers/profiles.js";
import { createTransport, type Transport } from "./transport.js";
import type { ChatRequest, ChatResult, LlmClient } from "../core/llm.js";

export interface LlmClientOptions {
  /** OpenAI-compatible base URL ending in `/v1`, e.g. `http://127.0.0.1:11434/v1` for Ollama. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`. Default `"none"`: local servers need no key. */
  apiKey?: string;
  model: string;
  /** Configured window in tokens. Default: the table in models.ts, else 128000. */
  contextWindow?: number;
  /** Timeout of one attempt in ms, restarted on every retry (transport.ts says what it covers). */
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
  const apiKey = options.apiKey ?? "none";
  const secret = options.apiKey !== undefined && options.apiKey.length >= 6 ? options.apiKey : undefined;
  const redact = (text: string): string => (secret === undefined ? text : text.split(secret).join("[REDACTED]"));
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 60_000;
  const configuredWindow = resolveContextWindow(options.model, options.contextWindow);
  let learnedWindow: number | undefined;
  const profile = resolveProfile(options.baseUrl, options.provider);

  const transport = createTransport({ baseUrl: options.baseUrl, apiKey, timeoutMs: options.timeoutMs, maxRetries: options.maxRetries, maxRetryAfterMs, log, redact });

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
        const result = request.onText ? await streamed(transport, request, request.onText, options, profile) : await plain(transport, request, options, profile);
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

/** The request body in the provider's dialect; `cache_control` on text parts goes out as given (OpenRouter passes it to Anthropic, others ignore it). */
const buildParams = (request: ChatRequest, options: LlmClientOptions, profile: ProviderProfile, stream: boolean): Record<string, unknown> =>
  shapeRequest(profile, request, {
    model: options.model,
    stream,
    ...(options.maxOutputTokens === undefined ? {} : { maxOutputTokens: options.maxOutputTokens }),
    ...(options.alternateRoles ? { alternateRoles: true } : {}),
  });

const COMPLETIONS = "/chat/completions";

async function plain(transport: Transport, request: ChatRequest, options: LlmClientOptions, profile: ProviderProfile): Promise<ChatResult> {
  const body = await transport.post(COMPLETIONS, JSON.stringify(buildParams(request, options, profile, false)), {
    stream: false,
    ...(request.signal ? { signal: request.signal } : {}),
    read: (response) => response.json(),
  });
  return toChatResult(body, options.model, profile);
}

/**
 * One streamed step: `stream: true` with `include_usage`. The events are read as they arrive and
 * handed to `StreamedCompletion`; `[DONE]` ends the answer (what follows is read and ignored, so
 * the connection stays reusable). A failure before any text went out is retried by the
 * transport; after that it fails the step, and the turn's retry takes it from there. A server
 * that ignores `stream: true` and answers with one JSON completion is read as one.
 */
async function streamed(transport: Transport, request: ChatRequest, onText: (delta: string) => void, options: LlmClientOptions, profile: ProviderProfile): Promise<ChatResult> {
  const body = JSON.stringify(buildParams(request, options, profile, true));
  let completion = new StreamedCompletion(onText, profile);
  return transport.post(COMPLETIONS, body, {
    stream: true,
    ...(request.signal ? { signal: request.signal } : {}),
    retryable: () => !completion.textSent,
    read: async (response, headers) => {
      completion = new StreamedCompletion(onText, profile);
      if (String(headers["content-type"] ?? "").includes("application/json")) {
        const whole = toChatResult(await response.json(), options.model, profile);
        if (whole.content) onText(whole.content);
        return whole;
      }
      await readEvents(response as AsyncIterable<Uint8Array>, completion, request.signal);
      return completion.result(options.model);
    },
  });
}
