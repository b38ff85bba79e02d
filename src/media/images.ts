/**
 * Pictures for vision models: their format read off the first bytes (never trusting the name),
 * a small in-process cache so the request right after the intake does not download them again,
 * and the image parts of a request (data URLs: a Telegram file URL holds the bot token and
 * must never reach the model provider).
 */
import { inlineImages, type Attachment } from "../core/attachments.js";
import type { ImagePart, TextPart, WireMessage } from "../core/llm.js";
import type { ChatMessage } from "../core/messages.js";
import type { Logger } from "../logger.js";
import type { MediaFetcher } from "./sources.js";

export type ImageFormat = "image/png" | "image/jpeg" | "image/gif" | "image/webp";

/** PNG, JPEG, GIF or WEBP by magic number; undefined for anything else (or a damaged header). */
export function imageFormat(bytes: Uint8Array): ImageFormat | undefined {
  const at = (index: number) => bytes[index] ?? -1;
  const ascii = (start: number, text: string) => [...text].every((char, index) => at(start + index) === char.charCodeAt(0));
  if (at(0) === 0x89 && ascii(1, "PNG\r\n\u001a\n")) return "image/png";
  if (at(0) === 0xff && at(1) === 0xd8 && at(2) === 0xff) return "image/jpeg";
  if (ascii(0, "GIF87a") || ascii(0, "GIF89a")) return "image/gif";
  if (ascii(0, "RIFF") && ascii(8, "WEBP")) return "image/webp";
  return undefined;
}

const keyOf = (attachment: Attachment): string => {
  const source = attachment.source;
  switch (source.platform) {
    case "telegram":
      return `tg:${source.fileUniqueId ?? source.fileId}`;
    case "discord":
      return `dc:${source.attachmentId}`;
    case "url":
      return `url:${source.url}`;
  }
};

/** Least recently used first out, within a byte budget. */
export class ImageCache {
  private readonly entries = new Map<string, { bytes: Uint8Array; mimeType: string }>();
  private bytes = 0;
  constructor(private readonly maxBytes = 64 * 1024 * 1024) {}

  get(attachment: Attachment): { bytes: Uint8Array; mimeType: string } | undefined {
    const key = keyOf(attachment);
    const entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  put(attachment: Attachment, entry: { bytes: Uint8Array; mimeType: string }): void {
    const key = keyOf(attachment);
    const previous = this.entries.get(key);
    if (previous) this.bytes -= previous.bytes.byteLength;
    this.entries.delete(key);
    if (entry.bytes.byteLength > this.maxBytes) return;
    this.entries.set(key, entry);
    this.bytes += entry.bytes.byteLength;
    for (const [oldest, value] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= value.bytes.byteLength;
    }
  }
}

/**
 * Pictures tools returned (MCP image content), by tool call id: in memory only (never in Redis),
 * a bounded number of calls, so they are shown during the turn that called the tool and are
 * gone after a restart (the tool result's placeholder stays).
 */
export class ToolImageStore {
  private readonly entries = new Map<string, ReadonlyArray<{ mimeType: string; data: string }>>();
  constructor(private readonly maxCalls = 64) {}
  has(toolCallId: string): boolean {
    return this.entries.has(toolCallId);
  }
  get(toolCallId: string): ReadonlyArray<{ mimeType: string; data: string }> | undefined {
    return this.entries.get(toolCallId);
  }
  put(toolCallId: string, images: ReadonlyArray<{ mimeType: string; data: string }>): void {
    const usable = images.filter((image) => imageFormat(Buffer.from(image.data.slice(0, 64), "base64")) !== undefined);
    if (usable.length === 0) return;
    this.entries.delete(toolCallId);
    this.entries.set(toolCallId, usable);
    while (this.entries.size > this.maxCalls) this.entries.delete(this.entries.keys().next().value as string);
  }
}

export interface ImagePartsOptions {
  toolImages?: ToolImageStore;
  fetcher: MediaFetcher;
  cache: ImageCache;
  detail: "auto" | "low" | "high";
  maxBytes: number;
  timeoutMs: number;
  log: Logger;
  signal?: AbortSignal;
}

/**
 * The request with each user message's inline pictures added as image parts after its text.
 * `wire` is `context` as prepared for the wire (same order, one for one). A picture that can no
 * longer be fetched stays a placeholder (its text is already in the message).
 */
export async function withImageParts(wire: readonly WireMessage[], context: readonly ChatMessage[], options: ImagePartsOptions): Promise<WireMessage[]> {
  if (wire.length !== context.length) return [...wire];
  const result: WireMessage[] = [];
  // A tool's pictures follow the run of tool results they belong to, as a user message: the
  // chat API takes image parts in user messages only.
  let pendingToolImages: ImagePart[] = [];
  const flushToolImages = () => {
    if (pendingToolImages.length === 0) return;
    result.push({ role: "user", content: [{ type: "text", text: "[the pictures the tool calls above returned]" }, ...pendingToolImages] });
    pendingToolImages = [];
  };
  for (const [index, message] of wire.entries()) {
    const source = context[index];
    if (source?.role !== "tool") flushToolImages();
    if (source?.role === "tool") {
      result.push(message);
      for (const image of options.toolImages?.get(source.tool_call_id) ?? []) {
        pendingToolImages.push({ type: "image_url", image_url: { url: `data:${image.mimeType};base64,${image.data}`, detail: options.detail } });
      }
      continue;
    }
    const images = source?.role === "user" ? inlineImages(source.attachments) : [];
    if (images.length === 0 || message.role !== "user") {
      result.push(message);
      continue;
    }
    const parts: ImagePart[] = [];
    for (const image of images) {
      const data = await imageBytes(image, options);
      if (data) parts.push({ type: "image_url", image_url: { url: `data:${data.mimeType};base64,${Buffer.from(data.bytes).toString("base64")}`, detail: options.detail } });
    }
    if (parts.length === 0) {
      result.push(message);
      continue;
    }
    const text: TextPart[] = typeof message.content === "string" ? [{ type: "text", text: message.content }] : (message.content as TextPart[]);
    result.push({ role: "user", content: [...text, ...parts] });
  }
  flushToolImages();
  return result;
}

async function imageBytes(image: Attachment, options: ImagePartsOptions): Promise<{ bytes: Uint8Array; mimeType: string } | undefined> {
  const cached = options.cache.get(image);
  if (cached) return cached;
  const fetched = await options.fetcher(image, { maxBytes: options.maxBytes, timeoutMs: options.timeoutMs, ...(options.signal ? { signal: options.signal } : {}) });
  if (!fetched.ok) {
    options.log.warn({ attachment: image.name, failure: fetched.failure, detail: fetched.detail }, "media-image-refetch-failed");
    return undefined;
  }
  const mimeType = imageFormat(fetched.bytes);
  if (!mimeType) return undefined;
  const entry = { bytes: fetched.bytes, mimeType };
  options.cache.put(image, entry);
  return entry;
}

/** Whether a request carries any image part. */
export const hasImageParts = (messages: readonly WireMessage[]): boolean =>
  messages.some((message) => Array.isArray(message.content) && message.content.some((part) => part.type === "image_url"));

/** The request without its image parts (their placeholders stay in the text). */
export function withoutImageParts(messages: readonly WireMessage[]): WireMessage[] {
  return messages.map((message) => {
    if (!Array.isArray(message.content) || !message.content.some((part) => part.type === "image_url")) return message;
    const text = (message.content as Array<TextPart | ImagePart>).filter((part): part is TextPart => part.type === "text");
    return { role: "user", content: text.length === 1 && text[0]!.cache_control === undefined ? text[0]!.text : text } as WireMessage;
  });
}
