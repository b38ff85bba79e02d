/**
 * Files that came with a message (pictures, voice notes, documents), as the session keeps them:
 * a reference to fetch the bytes again from the platform, and what we made of them (transcript,
 * extracted text, the model's description). Never the bytes: Redis holds references only
 * (docs/media.md). Pure types and wording; the I/O lives in src/media.
 */

export type AttachmentKind = "image" | "audio" | "document" | "other";

/** Where the bytes can be fetched again. */
export type AttachmentSource =
  /** Telegram `file_id` (getFile then the file route; only files up to 20 MB can be fetched). */
  | { platform: "telegram"; fileId: string; fileUniqueId?: string }
  /**
   * Discord's CDN URL. Its signature expires (about a day): the message is fetched again for a
   * fresh URL when the old one is refused, so channel, message and attachment ids come along.
   */
  | { platform: "discord"; url: string; channelId: string; messageId: string; attachmentId: string }
  /** Any URL (console, tests). */
  | { platform: "url"; url: string };

export interface Attachment {
  kind: AttachmentKind;
  source: AttachmentSource;
  /** File name as sent, or one we made up (`photo.jpg`). */
  name: string;
  mimeType?: string;
  /** Bytes, as the platform announced them (checked before any download). */
  size?: number;
  width?: number;
  height?: number;
  /** Voice notes and audio: seconds. */
  durationS?: number;
  /** Telegram voice notes and video notes (as opposed to music files). */
  voice?: boolean;
  /** What a person would call it: "photo", "voice message", "PDF". */
  label: string;
  /** Hex SHA-256 of the bytes, once they were downloaded. */
  sha256?: string;
  /** Audio: what was said. */
  transcript?: string;
  /** Documents: characters of text extracted (the text itself is in the message or in recall pages). */
  extractedChars?: number;
  /** Documents whose text did not fit the message: the stored original, for `recall`. */
  outputId?: string;
  /** Images: what the model said it showed, kept for summaries and `recall`. */
  description?: string;
  /** Images: sent to the model as an image part. False once compaction dropped it from the live context. */
  inline?: boolean;
  /** Why it could not be used, when it could not. */
  problem?: "too-large" | "unsupported" | "failed";
}

export const MB = 1024 * 1024;

/** "1.2 MB", "830 KB", "512 B" (binary units, like MAX_AUDIO_MB and Telegram's 20 MB). */
export function formatBytes(bytes: number | undefined): string | undefined {
  if (bytes === undefined || !Number.isFinite(bytes)) return undefined;
  if (bytes >= MB) return `${Number((bytes / MB).toFixed(1))} MB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KB`;
  return `${bytes} B`;
}

/**
 * The text stand-in for an attachment: what a model that cannot see it, and the summarizer,
 * read. `[photo photo.jpg, 83 KB, 1280×720]`.
 */
export function attachmentPlaceholder(attachment: Attachment): string {
  const facts = [
    attachment.name,
    formatBytes(attachment.size),
    attachment.width && attachment.height ? `${attachment.width}×${attachment.height}` : undefined,
    attachment.durationS ? `${attachment.durationS} s` : undefined,
  ].filter((fact): fact is string => fact !== undefined && fact !== "");
  return `[${attachment.label} ${facts.join(", ")}]`;
}

/** Images a model with vision is shown (inline), in message order. */
export const inlineImages = (attachments: readonly Attachment[] | undefined): Attachment[] =>
  (attachments ?? []).filter((attachment) => attachment.kind === "image" && attachment.inline === true && attachment.problem === undefined);
