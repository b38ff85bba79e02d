/**
 * Speech to text through an OpenAI-compatible `POST /audio/transcriptions` (OpenAI, Groq,
 * faster-whisper-server, LocalAI …): multipart with `file` and `model`, answered `{ "text" }`.
 * The key is never logged; failures name the status, not the request.
 */
import type { CallBudget } from "../core/llm.js";

export interface TranscriberOptions {
  /** Ends in `/v1`, like LLM_BASE_URL. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  fetchImpl?: typeof fetch;
}

/**
 * `durationS`: the length the platform announced, when it did (budgets price transcription by the
 * minute); `budget`: who pays for it (the media engine's `meter` charges it; the call ignores it).
 */
export type Transcriber = (audio: Uint8Array, file: { name: string; mimeType?: string; durationS?: number }, signal?: AbortSignal, budget?: CallBudget) => Promise<string>;

export class TranscriptionError extends Error {
  override readonly name = "TranscriptionError";
}

export function createTranscriber(options: TranscriberOptions): Transcriber {
  const fetchImpl = options.fetchImpl ?? fetch;
  const url = `${options.baseUrl.replace(/\/+$/, "")}/audio/transcriptions`;
  return async (audio, file, signal) => {
    const form = new FormData();
    form.append("model", options.model);
    form.append("response_format", "json");
    form.append("file", new Blob([audio], { type: file.mimeType ?? "application/octet-stream" }), file.name);
    const timeout = AbortSignal.timeout(options.timeoutMs);
    let response: Response;
    try {
      response = await fetchImpl(url, {
        method: "POST",
        body: form,
        headers: options.apiKey ? { authorization: `Bearer ${options.apiKey}` } : {},
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (error) {
      throw new TranscriptionError(timeout.aborted ? `no answer within ${options.timeoutMs} ms` : `request failed (${error instanceof Error ? error.name : "error"})`);
    }
    const raw = await response.text().catch(() => "");
    // Never the provider's text: some echo the key or the audio's words back. Its error code is enough.
    if (!response.ok) throw new TranscriptionError(`HTTP ${response.status}${errorCode(raw)}`);
    let text: unknown;
    try {
      text = (JSON.parse(raw) as { text?: unknown }).text;
    } catch {
      throw new TranscriptionError("the answer was not JSON");
    }
    if (typeof text !== "string") throw new TranscriptionError("the answer had no text");
    return text.trim();
  };
}

/** `: <code>` from an OpenAI-style error body (`{"error":{"code":…,"type":…}}`), when it is a short plain word. */
function errorCode(raw: string): string {
  try {
    const error = (JSON.parse(raw) as { error?: { code?: unknown; type?: unknown } }).error;
    const code = [error?.code, error?.type].find((value): value is string => typeof value === "string" && /^[A-Za-z0-9_.-]{1,64}$/.test(value));
    return code === undefined ? "" : `: ${code}`;
  } catch {
    return "";
  }
}
