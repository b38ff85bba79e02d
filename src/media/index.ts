/**
 * Pictures, voice notes and files (issue #14, docs/media.md): one object per worker process that
 * resolves a batch's attachments before the turn and adds image parts to each request.
 */
import type { CallBudget, WireMessage } from "../core/llm.js";
import type { ChatMessage } from "../core/messages.js";
import type { InboundMessage } from "../core/channel.js";
import type { Logger } from "../logger.js";
import type { ExtractionMemory } from "./extraction-memory.js";
import { ImageCache, ToolImageStore, withImageParts } from "./images.js";
import { createMediaResolver, type MediaLimits, type Resolved, type ResolveScope } from "./resolve.js";
import { createMediaFetcher, type MediaSourceOptions } from "./sources.js";
import { createTranscriber, type Transcriber, type TranscriberOptions } from "./transcribe.js";
import { createVisionGate, type VisionMemory, type VisionMode, type VisionGate } from "./vision.js";

export { createMediaFetcher, type MediaFetcher } from "./sources.js";
export { download, type Download, type DownloadLimits } from "./download.js";
export { createTranscriber, TranscriptionError } from "./transcribe.js";
export { createSpeaker, SpeechError, type Speaker, type SpeakerOptions, type SpeakOptions } from "./speech.js";
export { isVisionRefusal, redisVisionMemory, type VisionMemory } from "./vision.js";
export { redisExtractionMemory, type ExtractionMemory } from "./extraction-memory.js";
export { extractText, CorruptFileError, ExtractionLimitError, type ExtractLimits, type ExtractedText } from "./extract.js";
export { imageFormat, ImageCache } from "./images.js";
export type { ResolveScope, Resolved } from "./resolve.js";

export interface MediaEngine {
  resolve<T extends InboundMessage>(entries: readonly T[], scope: ResolveScope): Promise<Resolved<T>>;
  /** The prepared request with the context's inline pictures as image parts, when `scope.model` (default LLM_MODEL) sees pictures. */
  addImages(messages: readonly WireMessage[], context: readonly ChatMessage[], scope: { log: Logger; signal?: AbortSignal; model?: string }): Promise<WireMessage[]>;
  vision: VisionGate;
  /** Pictures a tool returned: shown to a vision model after the tool's result, for the rest of the turn. */
  keepToolImages(toolCallId: string, images: ReadonlyArray<{ mimeType: string; data: string }>): void;
}

/** What a transcription is priced by: the audio's size, and its length when the platform said. */
export interface AudioInfo {
  bytes: number;
  durationS?: number;
}

export interface MediaEngineOptions {
  sources: MediaSourceOptions;
  transcription?: TranscriberOptions;
  limits: MediaLimits;
  /** Refused documents remembered across retries and workers (Redis, `<prefix>:extract:<file>`). */
  extractions?: ExtractionMemory;
  /** `declared`: the catalogue's `vision` flag of a model id (src/models). */
  vision: { mode: VisionMode; detail: "auto" | "low" | "high"; model: string; memory: VisionMemory; declared?: (model: string) => boolean | undefined };
  /** Runs each transcription call, paid by `budget` (the turn's, from the resolve scope); default: as is. */
  meter?: (call: () => Promise<string>, audio: AudioInfo, budget: CallBudget | undefined) => Promise<string>;
  log: Logger;
}

export function createMediaEngine(options: MediaEngineOptions): MediaEngine {
  const fetcher = createMediaFetcher(options.sources);
  const images = new ImageCache();
  const toolImages = new ToolImageStore();
  const resolver = createMediaResolver({
    fetcher,
    ...(options.transcription ? { transcriber: metered(createTranscriber(options.transcription), options.meter) } : {}),
    limits: options.limits,
    images,
    ...(options.extractions ? { extractions: options.extractions } : {}),
  });
  const vision = createVisionGate({
    mode: options.vision.mode, model: options.vision.model, memory: options.vision.memory, log: options.log,
    ...(options.vision.declared ? { declared: options.vision.declared } : {}),
  });
  return {
    resolve: (entries, scope) => resolver.resolve(entries, scope),
    async addImages(messages, context, scope) {
      const pictures = context.some((message) => (message.role === "user" && message.attachments?.some((attachment) => attachment.inline)) || (message.role === "tool" && toolImages.has(message.tool_call_id)));
      if (!pictures || !(await vision.enabled(scope.model))) return [...messages];
      return withImageParts(messages, context, {
        toolImages,
        fetcher, cache: images, detail: options.vision.detail, maxBytes: options.limits.maxFileBytes, timeoutMs: options.limits.timeoutMs, log: scope.log,
        ...(scope.signal ? { signal: scope.signal } : {}),
      });
    },
    vision,
    keepToolImages: (toolCallId, list) => toolImages.put(toolCallId, list),
  };
}

const metered = (transcriber: Transcriber, meter: MediaEngineOptions["meter"]): Transcriber =>
  meter
    ? (audio, file, signal, budget) => meter(() => transcriber(audio, file, signal), { bytes: audio.byteLength, ...(file.durationS ? { durationS: file.durationS } : {}) }, budget)
    : transcriber;
