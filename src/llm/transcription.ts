/**
 * Speech to text through the openai SDK (`audio.transcriptions.create`, multipart `file` +
 * `model`, answered `{ text }`) against any OpenAI-compatible endpoint (OpenAI, Groq,
 * faster-whisper-server, LocalAI …). The SDK's own retries are off (`maxRetries: 0`): the media
 * engine's caller decides. The endpoint's provider profile picks the SDK client as for chat
 * (sdk.ts: Azure's `api-key` header, `api-version` and deployment path). Failures come back as `TranscriptionFailure`, naming the status and
 * the provider's error code, never its body (some echo the key or the audio's words), the request
 * or the key.
 */
import OpenAI, { toFile } from "openai";
import { resolveProfile } from "./providers/detect.js";
import type { ProviderName } from "./providers/profiles.js";
import { createSdk } from "./sdk.js";

export interface SpeechToTextOptions {
  /** Ends in `/v1`, like LLM_BASE_URL. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  /** As LLM_PROVIDER; unset: detected from `baseUrl`. */
  provider?: ProviderName;
  fetchImpl?: typeof fetch;
}

export type SpeechToText = (audio: Uint8Array, file: { name: string; mimeType?: string }, signal?: AbortSignal) => Promise<string>;

/** Why a transcription failed, in words safe to log. */
export class TranscriptionFailure extends Error {
  override readonly name = "TranscriptionFailure";
}

export function createSpeechToText(options: SpeechToTextOptions): SpeechToText {
  const sdk = createSdk({
    baseUrl: options.baseUrl,
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    provider: resolveProfile(options.baseUrl, options.provider).name,
    maxRetries: 0,
    timeoutMs: options.timeoutMs,
    ...(options.fetchImpl ? { fetchImpl: options.fetchImpl } : {}),
  });
  return async (audio, file, signal) => {
    const upload = await toFile(audio, file.name, { type: file.mimeType ?? "application/octet-stream" });
    try {
      const result = await sdk.audio.transcriptions.create({ file: upload, model: options.model, response_format: "json" }, signal ? { signal } : {});
      const text: unknown = (result as { text?: unknown }).text;
      if (typeof text !== "string") throw new TranscriptionFailure("the answer had no text");
      return text.trim();
    } catch (error) {
      throw asFailure(error, options.timeoutMs);
    }
  };
}

function asFailure(error: unknown, timeoutMs: number): Error {
  if (error instanceof TranscriptionFailure) return error;
  if (error instanceof OpenAI.APIConnectionTimeoutError) return new TranscriptionFailure(`no answer within ${timeoutMs} ms`);
  if (error instanceof OpenAI.APIUserAbortError) return new TranscriptionFailure("request aborted");
  if (error instanceof OpenAI.APIConnectionError) return new TranscriptionFailure("request failed (connection)");
  if (error instanceof OpenAI.APIError) {
    // Never the provider's text: some echo the key or the audio's words back. Its error code is enough.
    const code = [error.code, error.type].find((value): value is string => typeof value === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(value));
    return new TranscriptionFailure(`HTTP ${error.status ?? "?"}${code === undefined ? "" : `: ${code}`}`);
  }
  return new TranscriptionFailure(`request failed (${error instanceof Error ? error.name : "error"})`);
}
