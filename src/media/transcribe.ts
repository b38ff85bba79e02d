/**
 * Speech to text through an OpenAI-compatible `POST /audio/transcriptions` (OpenAI, Groq,
 * faster-whisper-server, LocalAI …), sent by the openai SDK (src/llm/transcription.ts).
 * The key is never logged; failures name the status, not the request.
 */
import type { CallBudget } from "../core/llm.js";
import { createSpeechToText, TranscriptionFailure, type SpeechToTextOptions } from "../llm/transcription.js";

/** The transcription endpoint (TRANSCRIBE_*): its URL (ending in `/v1`), key, model, timeout and provider profile. */
export type TranscriberOptions = SpeechToTextOptions;

/**
 * `durationS`: the length the platform announced, when it did (budgets price transcription by the
 * minute); `budget`: who pays for it (the media engine's `meter` charges it; the call ignores it).
 */
export type Transcriber = (audio: Uint8Array, file: { name: string; mimeType?: string; durationS?: number }, signal?: AbortSignal, budget?: CallBudget) => Promise<string>;

export class TranscriptionError extends Error {
  override readonly name = "TranscriptionError";
}

export function createTranscriber(options: TranscriberOptions): Transcriber {
  const speechToText = createSpeechToText(options);
  return async (audio, file, signal) => {
    try {
      return await speechToText(audio, file, signal);
    } catch (error) {
      throw new TranscriptionError(error instanceof TranscriptionFailure ? error.message : `request failed (${error instanceof Error ? error.name : "error"})`);
    }
  };
}
