/**
 * The openai SDK client of one endpoint, in its provider's dialect, for the chat client
 * (client.ts) and transcriptions (transcription.ts). What the SDK does, it does: the request, the
 * retries (connection errors, timeouts, 408/409/429/5xx, `x-should-retry`, `retry-after-ms` /
 * `retry-after`, else 0.5 s doubling to 8 s with jitter), the timeout until the headers, typed
 * errors (`APIError` subclasses with status, headers and the parsed body), the SSE decoding.
 *
 * Ours, on top, through the SDK's own `fetch` option (undici's `fetch` on one keep-alive `Agent`
 * per client):
 * - **a stall timeout**: the agent's `bodyTimeout` fails a body, plain or streamed, that sends no
 *   byte for `timeoutMs` (the SDK's timeout ends at the headers);
 * - **the `retry-after` cap**: a failed answer asking for a wait above `maxRetryAfterMs` gets
 *   `x-should-retry: false`, so the SDK hands it on at once and the caller (the queue) waits;
 * - **the raw error body** of a failed answer is kept beside it (`rawErrorBody`), for the
 *   overflow rules only: vLLM's flat `{object:"error", message}` has no `error` key, which the
 *   SDK would report as "(no body)". It never goes into a message or a log;
 * - each failed attempt logged (status, attempt number from the SDK's retry count), never the key.
 *
 * Azure: the `azure` profile uses the SDK's `AzureOpenAI` (the `api-key` header, `api-version` on
 * every request, `/deployments/<model>` paths) unless the base URL is Azure's `/openai/v1` API,
 * which takes the plain client with the `api-key` header. The API version is the base URL's own
 * `api-version` query parameter (as the Azure portal shows endpoints), else `AZURE_API_VERSION`.
 */
import OpenAI, { AzureOpenAI } from "openai";
import { Agent, fetch as undiciFetch, Response as UndiciResponse } from "undici";
import type { Logger } from "pino";
import { retryAfterMsFromHeaders } from "./errors.js";
import type { ProviderName } from "./providers/profiles.js";

/** The GA data-plane version of Azure OpenAI's deployment API sent when the base URL names none. */
export const AZURE_API_VERSION = "2024-10-21";

export interface SdkOptions {
  baseUrl: string;
  /** Default `"none"`: local servers need no key. */
  apiKey?: string;
  provider: ProviderName;
  timeoutMs: number;
  maxRetries: number;
  /** Longest `retry-after` the SDK may wait for in-process. Default: no cap. */
  maxRetryAfterMs?: number;
  log?: Logger;
  /** Masks the key in what is logged. */
  redact?: (text: string) => string;
  /** Tests: a fetch of their own instead of undici's. */
  fetchImpl?: typeof fetch;
}

const rawBodies = new WeakMap<Headers, string>();

/** The body of the failed answer an `APIError` came from, when this module's fetch read it. */
export const rawErrorBody = (headers: Headers | undefined): string | undefined => (headers ? rawBodies.get(headers) : undefined);

export function createSdk(options: SdkOptions): OpenAI {
  const apiKey = options.apiKey ?? "none";
  const dispatcher = new Agent({ bodyTimeout: options.timeoutMs, headersTimeout: 0 });
  const baseFetch: typeof fetch = options.fetchImpl ?? ((url, init) => undiciFetch(url as string, { ...(init as object), dispatcher }) as unknown as Promise<Response>);
  const common = {
    maxRetries: options.maxRetries,
    timeout: options.timeoutMs,
    logLevel: "off" as const,
    fetch: ourFetch(baseFetch, options),
  };
  if (options.provider !== "azure") return new OpenAI({ apiKey, baseURL: options.baseUrl, ...common });
  const url = new URL(options.baseUrl);
  const apiVersion = url.searchParams.get("api-version") ?? undefined;
  url.search = "";
  const baseURL = url.toString().replace(/\/+$/, "");
  if (/\/openai\/v1$/.test(baseURL)) {
    return new OpenAI({ apiKey, baseURL, defaultHeaders: { "api-key": apiKey, authorization: null }, ...(apiVersion ? { defaultQuery: { "api-version": apiVersion } } : {}), ...common });
  }
  return new AzureOpenAI({ apiKey, baseURL, apiVersion: apiVersion ?? AZURE_API_VERSION, ...common });
}

function ourFetch(baseFetch: typeof fetch, options: SdkOptions): typeof fetch {
  const redact = options.redact ?? ((text: string) => text);
  const cap = options.maxRetryAfterMs ?? Number.POSITIVE_INFINITY;
  return async (url, init) => {
    const attempt = Number(new Headers(init?.headers).get("x-stainless-retry-count") ?? 0) + 1;
    let response: Response;
    try {
      response = await baseFetch(url, init);
    } catch (error: unknown) {
      options.log?.info({ attempt, error: redact(error instanceof Error ? `${error.message}${error.cause instanceof Error ? ` (${error.cause.message})` : ""}` : String(error)) }, "llm attempt failed");
      throw error;
    }
    if (response.ok) return response;
    const text = await response.text().catch(() => "");
    const headers = new Headers(response.headers);
    const retryAfterMs = retryAfterMsFromHeaders(headers);
    options.log?.info({ attempt, status: response.status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) }, "llm attempt failed");
    if (retryAfterMs !== undefined && retryAfterMs > cap) {
      options.log?.warn({ retryAfterMs, maxRetryAfterMs: cap }, "retry-after too long to wait in-process; leaving the retry to the caller");
      headers.set("x-should-retry", "false");
    }
    const copy = new UndiciResponse(text, { status: response.status, statusText: response.statusText, headers }) as unknown as Response;
    rawBodies.set(copy.headers, text);
    return copy;
  };
}
