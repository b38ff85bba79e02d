/**
 * Text to speech through the openai SDK (`audio.speech.create`: `model`, `voice`, `input`,
 * answered with the audio's bytes) against any OpenAI-compatible `/audio/speech` (OpenAI,
 * Azure, LocalAI, Kokoro-FastAPI, openedai-speech …), asked for `response_format: "opus"`: Ogg
 * with Opus inside, the format of a Telegram voice note and a Discord voice message. As for
 * transcriptions (transcription.ts), the SDK's retries are off (a failed voice falls back to the
 * text at once), the provider profile picks the client, and failures come back as
 * `SpeechFailure`, in words safe to log (audio-endpoint.ts): never the text spoken.
 */
import { audioSdk, describeEndpointFailure, type AudioEndpointOptions } from "./audio-endpoint.js";

export interface TextToSpeechOptions extends AudioEndpointOptions {
  voice: string;
  /** Refuses an answer larger than this (bytes): a voice reply travels through the outbox. */
  maxBytes: number;
}

/** → the audio's bytes, as the endpoint sent them (checked for Ogg/Opus by the caller). */
export type TextToSpeech = (text: string, signal?: AbortSignal) => Promise<Uint8Array>;

/** Why speech failed, in words safe to log. */
export class SpeechFailure extends Error {
  override readonly name = "SpeechFailure";
}

export function createTextToSpeech(options: TextToSpeechOptions): TextToSpeech {
  const sdk = audioSdk(options);
  return async (text, signal) => {
    try {
      const response = await sdk.audio.speech.create({ model: options.model, voice: options.voice, input: text, response_format: "opus" }, signal ? { signal } : {});
      const announced = Number(response.headers.get("content-length") ?? 0);
      if (announced > options.maxBytes) throw new SpeechFailure(`the answer is ${announced} bytes, over ${options.maxBytes}`);
      const bytes = new Uint8Array(await response.arrayBuffer());
      if (bytes.byteLength > options.maxBytes) throw new SpeechFailure(`the answer is ${bytes.byteLength} bytes, over ${options.maxBytes}`);
      return bytes;
    } catch (error) {
      throw error instanceof SpeechFailure ? error : new SpeechFailure(describeEndpointFailure(error, options.timeoutMs));
    }
  };
}
