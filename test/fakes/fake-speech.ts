/**
 * The fake LLM's speech endpoint (POST /v1/audio/speech), as OpenAI's: a JSON body with `model`,
 * `input` (1–4,096 characters) and `voice` required, `response_format` one of mp3, opus, aac,
 * flac, wav, pcm; answered with the audio's bytes. Each request is recorded (`fake.speeches`);
 * the answer comes from `fake.setSpeaker(handler)`, by default real Ogg/Opus made at test time
 * (test/helpers/ogg-opus.ts), about 60 ms of tone a character (0.5–8 s). This fake makes only
 * Opus: any other format is refused, which no caller of ours asks for.
 */
import type { IncomingHttpHeaders, ServerResponse } from "node:http";

export interface RecordedSpeech {
  model: string;
  voice: string;
  input: string;
  responseFormat: string;
  headers: IncomingHttpHeaders;
}

/** Answers a speech request: the audio's bytes (with their content type), or an HTTP error. */
export type FakeSpeaker = (request: RecordedSpeech) => SpeechAnswer | Promise<SpeechAnswer>;
export type SpeechAnswer = { audio: Buffer; contentType?: string } | { status: number; body?: unknown };

const FORMATS = new Set(["mp3", "opus", "aac", "flac", "wav", "pcm"]);
export const SPEECH_INPUT_LIMIT = 4_096;

/** The default answer: Ogg/Opus whose length follows the text's. */
export async function toneFor(input: string): Promise<Buffer> {
  // Loaded on the first speech request: the many tests that never speak do not load the encoder.
  const { makeOggOpus } = await import("../helpers/ogg-opus.js");
  return makeOggOpus(Math.min(8, Math.max(0.5, input.length * 0.06)));
}

const invalid = (message: string, param: string | null) => ({ status: 400, body: { error: { message, type: "invalid_request_error", param, code: null } } });

export async function answerSpeech(raw: Buffer, headers: IncomingHttpHeaders, recorded: RecordedSpeech[], speaker: FakeSpeaker | undefined, response: ServerResponse): Promise<void> {
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
  } catch {
    return reply(response, invalid("We could not parse the JSON body of your request.", null));
  }
  const { model, input, voice } = body;
  const format = body.response_format ?? "mp3";
  if (typeof model !== "string" || model === "") return reply(response, invalid("you must provide a model parameter", "model"));
  if (typeof voice !== "string" || voice === "") return reply(response, invalid("Missing required parameter: 'voice'.", "voice"));
  if (typeof input !== "string" || input.length === 0) return reply(response, invalid("Missing required parameter: 'input'.", "input"));
  if (input.length > SPEECH_INPUT_LIMIT) return reply(response, invalid(`Invalid 'input': string too long. Expected a string with maximum length ${SPEECH_INPUT_LIMIT}, but got a string with length ${input.length} instead.`, "input"));
  if (typeof format !== "string" || !FORMATS.has(format)) return reply(response, invalid(`Invalid value: '${String(format)}'. Supported values are: 'mp3', 'opus', 'aac', 'flac', 'wav', and 'pcm'.`, "response_format"));
  const request: RecordedSpeech = { model, voice, input, responseFormat: format, headers };
  recorded.push(request);
  if (!speaker && format !== "opus") return reply(response, invalid(`fake speech endpoint: makes only opus, not ${format}`, "response_format"));
  return reply(response, speaker ? await speaker(request) : { audio: await toneFor(input), contentType: "audio/ogg" });
}

function reply(response: ServerResponse, answer: SpeechAnswer): void {
  if ("audio" in answer) {
    response.writeHead(200, { "content-type": answer.contentType ?? "audio/ogg", "content-length": String(answer.audio.length) }).end(answer.audio);
    return;
  }
  response.writeHead(answer.status, { "content-type": "application/json" }).end(typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body ?? {}));
}
