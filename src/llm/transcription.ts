/**
 * Speech to text through the openai SDK (`audio.transcriptions.create`, multipart `file` +
 * `model`, answered `{ text }`) against any OpenAI-compatible endpoint (OpenAI, Groq,
 * faster-whisper-server, LocalAI …). The SDK's own retries are off (`maxRetries: 0`): the media
 * engine's caller decides. The endpoint's provider profile picks the SDK client as for chat
 * (sdk.ts: Azure's `api-key` header, `api-version` and deployment path). Failures come back as
 * `TranscriptionFailure`, in words safe to log (audio-endpoint.ts).
 */
import { toFile } from "openai";
import { audioSdk, describeEndpointFailure, type AudioEndpointOptions } from "./audio-endpoint.js";

export type SpeechToTextOptions = AudioEndpointOptions;

export type SpeechToText = (audio: Uint8Array, file: { name: string; mimeType?: string }, signal?: AbortSignal) => Promise<string>;

/** Why a transcription failed, in words safe to log. */
export class TranscriptionFailure extends Error {
  override readonly name = "TranscriptionFailure";
}

export function createSpeechToText(options: SpeechToTextOptions): SpeechToText {
  const sdk = audioSdk(options);
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
  return error instanceof TranscriptionFailure ? error : new TranscriptionFailure(describeEndpointFailure(error, timeoutMs));
}
