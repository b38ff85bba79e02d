/**
 * What the audio endpoints (transcription.ts, speech.ts) share: the SDK client of an
 * OpenAI-compatible endpoint in its provider's dialect, without retries of its own (the caller
 * decides), and what a failed call may say in a log line or a notice — the status and the
 * provider's error code, never its body (some echo the key, the audio's words or the text to
 * speak), the request or the key.
 */
import OpenAI from "openai";
import { resolveProfile } from "./providers/detect.js";
import type { ProviderName } from "./providers/profiles.js";
import { createSdk } from "./sdk.js";

export interface AudioEndpointOptions {
  /** Ends in `/v1`, like LLM_BASE_URL. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  /** As LLM_PROVIDER; unset: detected from `baseUrl`. */
  provider?: ProviderName;
  fetchImpl?: typeof fetch;
}

export function audioSdk(options: AudioEndpointOptions): OpenAI {
  return createSdk({
    baseUrl: options.baseUrl,
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    provider: resolveProfile(options.baseUrl, options.provider).name,
    maxRetries: 0,
    timeoutMs: options.timeoutMs,
    ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}),
  });
}

export function describeEndpointFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof OpenAI.APIConnectionTimeoutError) return `no answer within ${timeoutMs} ms`;
  if (error instanceof OpenAI.APIUserAbortError) return "request aborted";
  if (error instanceof OpenAI.APIConnectionError) return "request failed (connection)";
  if (error instanceof OpenAI.APIError) {
    const code = [error.code, error.type].find((value): value is string => typeof value === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(value));
    return `HTTP ${error.status ?? "?"}${code === undefined ? "" : `: ${code}`}`;
  }
  return `request failed (${error instanceof Error ? error.name : "error"})`;
}
