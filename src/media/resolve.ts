/**
 * What the worker makes of a message's attachments before the turn reads it (docs/media.md):
 * voice and audio are transcribed (the transcript becomes the message text, so a spoken "/new"
 * is a command), documents become text (long ones are kept whole for `recall`), pictures are
 * fetched once to check and hash them (the model gets them as image parts per request, see
 * vision.ts). Whatever could not be used gets one polite notice per message. Nothing here keeps
 * bytes beyond the process: the session stores references and text only.
 */
import { createHash } from "node:crypto";
import { attachmentPlaceholder, formatBytes, type Attachment } from "../core/attachments.js";
import type { InboundMessage } from "../core/channel.js";
import type { CallBudget } from "../core/llm.js";
import type { Logger } from "../logger.js";
import { CorruptFileError, documentType, ExtractionLimitError, extractText, type ExtractLimits } from "./extract.js";
import { fileKey, type ExtractionMemory } from "./extraction-memory.js";
import { imageFormat, ImageCache } from "./images.js";
import type { MediaFetcher } from "./sources.js";
import type { Transcriber } from "./transcribe.js";

export interface MediaLimits {
  maxAudioBytes: number;
  maxFileBytes: number;
  timeoutMs: number;
  /** Extracted text beyond this stays out of the message; `recall` pages through it. */
  maxMessageChars: number;
  /** One document's extraction: memory, deadline, pages and characters kept (extract.ts). */
  extract: ExtractLimits;
}

export interface MediaResolverOptions {
  fetcher: MediaFetcher;
  /** Absent: voice notes get a notice instead. */
  transcriber?: Transcriber;
  limits: MediaLimits;
  images: ImageCache;
  /** Refused documents remembered across retries (extraction-memory.ts); absent: not remembered. */
  extractions?: ExtractionMemory;
}

export interface ResolveScope {
  signal?: AbortSignal;
  /** Who pays for transcriptions (budgets); absent: not metered. */
  budget?: CallBudget;
  log: Logger;
  /** Stores a long document's whole text where `recall` reads it (like a capped tool output). */
  saveText(id: string, text: string): Promise<void>;
}

export interface Resolved<T extends InboundMessage> {
  entries: T[];
  /** One notice per message that had something we could not use. */
  notices: Array<{ entry: T; text: string }>;
}

type Problem = { name: string; why: string };

export interface MediaResolver {
  resolve<T extends InboundMessage>(entries: readonly T[], scope: ResolveScope): Promise<Resolved<T>>;
}

export function createMediaResolver(options: MediaResolverOptions): MediaResolver {
  const { limits } = options;
  const mb = (bytes: number) => formatBytes(bytes) ?? `${bytes} B`;

  async function resolveAudio(attachment: Attachment, scope: ResolveScope): Promise<{ attachment: Attachment; problem?: Problem }> {
    if (attachment.size !== undefined && attachment.size > limits.maxAudioBytes) {
      return { attachment: { ...attachment, problem: "too-large" }, problem: { name: attachment.label, why: `it is ${mb(attachment.size)}, and I transcribe up to ${mb(limits.maxAudioBytes)}` } };
    }
    if (!options.transcriber) return { attachment: { ...attachment, problem: "unsupported" }, problem: { name: attachment.label, why: "voice transcription is not set up here" } };
    const fetched = await options.fetcher(attachment, { maxBytes: limits.maxAudioBytes, timeoutMs: limits.timeoutMs, ...signalOf(scope) });
    if (!fetched.ok) return notDownloaded(attachment, attachment.label, fetched, scope, `${mb(limits.maxAudioBytes)}, the most I transcribe`);
    const sha256 = hash(fetched.bytes);
    try {
      const file = { name: attachment.name, ...(attachment.mimeType ? { mimeType: attachment.mimeType } : {}), ...(attachment.durationS ? { durationS: attachment.durationS } : {}) };
      const transcript = await options.transcriber(fetched.bytes, file, scope.signal, scope.budget);
      scope.log.info({ attachment: attachment.name, bytes: fetched.bytes.byteLength, chars: transcript.length }, "media-transcribed");
      return { attachment: { ...attachment, sha256, transcript } };
    } catch (error) {
      scope.log.warn({ attachment: attachment.name, err: error instanceof Error ? error.message : String(error) }, "media-transcription-failed");
      return { attachment: { ...attachment, sha256, problem: "failed" }, problem: { name: attachment.label, why: "transcription failed; please type it instead" } };
    }
  }

  async function resolveDocument(attachment: Attachment, scope: ResolveScope): Promise<{ attachment: Attachment; text?: string; problem?: Problem }> {
    const type = documentType(attachment.name, attachment.mimeType);
    if (type === "unsupported") {
      return { attachment: { ...attachment, problem: "unsupported" }, problem: { name: attachment.name, why: "I can't open this type of file (I read text, code, CSV, JSON, logs and PDF)" } };
    }
    // A file refused before (or whose extraction never answered) is not fetched or parsed again.
    const file = fileKey(attachment);
    const remembered = await options.extractions?.get(file);
    if (remembered !== undefined) {
      scope.log.warn({ attachment: attachment.name, remembered: remembered === "started" ? "unfinished" : "refused" }, "media-extract-skipped");
      const why = remembered === "started" ? "reading it did not finish when I tried, so I won't try again" : remembered.refused;
      return { attachment: { ...attachment, problem: "failed" }, problem: { name: attachment.name, why } };
    }
    const fetched = await options.fetcher(attachment, { maxBytes: limits.maxFileBytes, timeoutMs: limits.timeoutMs, ...signalOf(scope) });
    if (!fetched.ok) return notDownloaded(attachment, attachment.name, fetched, scope, `${mb(limits.maxFileBytes)}, the most I read`);
    const sha256 = hash(fetched.bytes);
    let text: string;
    let truncated: string | undefined;
    await options.extractions?.set(file, "started");
    try {
      const extracted = await extractText(type, fetched.bytes, limits.extract, scope.signal);
      text = extracted.text.trim();
      truncated = extracted.truncated;
      await options.extractions?.clear(file);
    } catch (error) {
      // The turn was stopped: nothing is marked, the stop ends the turn.
      if (scope.signal?.aborted) {
        await options.extractions?.clear(file);
        throw error;
      }
      scope.log.warn({ attachment: attachment.name, err: error instanceof Error ? error.message : String(error) }, "media-extract-failed");
      const why = extractionFailure(error, limits.extract);
      await options.extractions?.set(file, { refused: why });
      return { attachment: { ...attachment, sha256, problem: "failed" }, problem: { name: attachment.name, why } };
    }
    if (truncated !== undefined) scope.log.info({ attachment: attachment.name, kept: truncated }, "media-extract-truncated");
    if (text === "") return { attachment: { ...attachment, sha256, extractedChars: 0 }, problem: { name: attachment.name, why: "it contains no text I can read (a scan?)" } };
    const read: Attachment = { ...attachment, sha256, extractedChars: text.length };
    const omitted = truncated === undefined ? "" : `\n[only ${truncated} of ${attachment.name} were read; the rest is not available]`;
    if (text.length <= limits.maxMessageChars) return { attachment: read, text: text + omitted };
    const outputId = `file-${sha256.slice(0, 12)}`;
    await scope.saveText(outputId, text);
    const shown = cut(text, limits.maxMessageChars);
    return {
      attachment: { ...read, outputId },
      text: `${shown}\n[… ${text.length - shown.length} more characters of ${attachment.name}: recall with id "${outputId}" and offset ${shown.length}]${omitted}`,
    };
  }

  async function resolveImage(attachment: Attachment, scope: ResolveScope): Promise<{ attachment: Attachment; problem?: Problem }> {
    if (attachment.size !== undefined && attachment.size > limits.maxFileBytes) {
      return { attachment: { ...attachment, inline: false, problem: "too-large" }, problem: { name: attachment.name, why: `it is ${mb(attachment.size)}, and I open pictures up to ${mb(limits.maxFileBytes)}` } };
    }
    const fetched = await options.fetcher(attachment, { maxBytes: limits.maxFileBytes, timeoutMs: limits.timeoutMs, ...signalOf(scope) });
    if (!fetched.ok) return notDownloaded({ ...attachment, inline: false }, attachment.name, fetched, scope, mb(limits.maxFileBytes));
    const format = imageFormat(fetched.bytes);
    const sha256 = hash(fetched.bytes);
    if (!format) {
      return { attachment: { ...attachment, sha256, inline: false, problem: "unsupported" }, problem: { name: attachment.name, why: "it is not a picture format I can view (PNG, JPEG, WEBP or GIF), or it is damaged" } };
    }
    options.images.put(attachment, { bytes: fetched.bytes, mimeType: format });
    return { attachment: { ...attachment, sha256, mimeType: format, size: attachment.size ?? fetched.bytes.byteLength } };
  }

  async function resolveOne(attachment: Attachment, scope: ResolveScope): Promise<{ attachment: Attachment; text?: string; problem?: Problem }> {
    // Resolved already (a retried turn): nothing to fetch again.
    if (attachment.sha256 !== undefined || attachment.problem !== undefined) return { attachment };
    switch (attachment.kind) {
      case "audio":
        return resolveAudio(attachment, scope);
      case "document":
        return resolveDocument(attachment, scope);
      case "image":
        return resolveImage(attachment, scope);
      case "other":
        return { attachment: { ...attachment, problem: "unsupported" }, problem: { name: attachment.name, why: "I can't open this kind of attachment" } };
    }
  }

  return {
    async resolve(entries, scope) {
      const notices: Resolved<(typeof entries)[number]>["notices"] = [];
      const resolved = [];
      const albumProblems = new Map<string, { problems: Problem[]; notice: { text: string } }>();
      for (const entry of entries) {
        if (!entry.attachments?.length) {
          resolved.push(entry);
          continue;
        }
        const attachments: Attachment[] = [];
        const problems: Problem[] = [];
        const blocks: string[] = [];
        const transcripts: string[] = [];
        for (const original of entry.attachments) {
          const outcome = await resolveOne(original, scope);
          attachments.push(outcome.attachment);
          if (outcome.problem) problems.push(outcome.problem);
          const placeholder = attachmentPlaceholder(outcome.attachment);
          const attachment = outcome.attachment;
          if (attachment.kind === "audio" && attachment.transcript !== undefined) {
            blocks.push(`${placeholder.slice(0, -1)}, transcribed: the text below is what was said]`);
            transcripts.push(attachment.transcript);
          } else if (outcome.text !== undefined) {
            blocks.push(`${placeholder.slice(0, -1)}, its text:]\n${outcome.text}\n[end of ${attachment.name}]`);
          } else {
            blocks.push(attachment.problem ? `${placeholder.slice(0, -1)}, could not be opened]` : placeholder);
          }
        }
        // A voice note's words are the message: commands and questions work as if typed.
        const text = [entry.text, ...transcripts].filter((part) => part.trim() !== "").join("\n\n");
        const next = { ...entry, text, attachments, attachmentText: blocks.join("\n") };
        // Nothing usable (no text, every attachment refused): the notice is the whole answer.
        const usable = text.trim() !== "" || attachments.some((attachment) => attachment.problem === undefined);
        if (usable) resolved.push(next);
        if (problems.length > 0) {
          // An album is one message to the user: one notice for all its items.
          const album = entry.mediaGroupId === undefined ? undefined : albumProblems.get(entry.mediaGroupId);
          if (album) {
            album.problems.push(...problems);
            album.notice.text = noticeText(album.problems);
          } else {
            const notice = { entry: next, text: noticeText(problems) };
            notices.push(notice);
            if (entry.mediaGroupId !== undefined) albumProblems.set(entry.mediaGroupId, { problems: [...problems], notice });
          }
        }
      }
      return { entries: resolved, notices };
    },
  };
}

/** Why a document was refused, in words for the user. */
function extractionFailure(error: unknown, limits: ExtractLimits): string {
  if (error instanceof CorruptFileError) return "it seems damaged or is not what its name says";
  if (error instanceof ExtractionLimitError && error.limit === "memory") return `reading it would take more than the ${limits.memoryMb} MB of memory I allow one file`;
  if (error instanceof ExtractionLimitError && error.limit === "time") return `reading it took longer than the ${Math.round(limits.timeoutMs / 1000)} s I allow one file`;
  return "I couldn't read it";
}

export function noticeText(problems: readonly Problem[]): string {
  if (problems.length === 1) return `Sorry, I couldn't use your ${problems[0]!.name}: ${problems[0]!.why}.`;
  return `Sorry, I couldn't use some of what you sent:\n${problems.map((problem) => `• ${problem.name}: ${problem.why}`).join("\n")}`;
}

/** A download that failed: logged, the attachment marked, and why in words for the user (`limit`: "it is larger than …"). */
function notDownloaded(attachment: Attachment, name: string, fetched: { failure: "too-large" | "failed"; detail: string }, scope: ResolveScope, limit: string): { attachment: Attachment; problem: Problem } {
  scope.log.warn({ attachment: attachment.name, failure: fetched.failure, detail: fetched.detail }, "media-download-failed");
  const why = fetched.failure === "too-large" ? `it is larger than ${limit}` : "I couldn't download it";
  return { attachment: { ...attachment, problem: fetched.failure }, problem: { name, why } };
}

const hash = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const signalOf = (scope: ResolveScope) => (scope.signal ? { signal: scope.signal } : {});

/** At most `max` UTF-16 units, never half of a surrogate pair. */
function cut(text: string, max: number): string {
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}
