/**
 * The files of a Telegram message as attachment references (docs/media.md): the largest size of
 * a photo, image/audio/other documents, voice notes, audio files and video notes. Only ids and
 * the facts Telegram states (size, dimensions, duration); the worker fetches the bytes.
 */
import type { Message } from "grammy/types";
import type { Attachment } from "../../core/attachments.js";

const source = (file: { file_id: string; file_unique_id: string }) => ({ platform: "telegram" as const, fileId: file.file_id, fileUniqueId: file.file_unique_id });

const optional = <T extends object>(fields: T): Partial<T> =>
  Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as Partial<T>;

export function telegramAttachments(message: Partial<Message>): Attachment[] {
  const found: Attachment[] = [];
  const largest = message.photo?.reduce((best, size) => (size.width * size.height >= best.width * best.height ? size : best));
  if (largest) {
    found.push({
      kind: "image", label: "photo", source: source(largest), name: `photo-${largest.file_unique_id}.jpg`, mimeType: "image/jpeg",
      ...optional({ size: largest.file_size }), width: largest.width, height: largest.height, inline: true,
    });
  }
  if (message.voice) {
    const voice = message.voice;
    found.push({
      kind: "audio", label: "voice message", source: source(voice), name: `voice-${voice.file_unique_id}.ogg`, voice: true,
      ...optional({ mimeType: voice.mime_type ?? "audio/ogg", size: voice.file_size, durationS: voice.duration }),
    });
  }
  if (message.video_note) {
    const note = message.video_note;
    found.push({
      kind: "audio", label: "video message", source: source(note), name: `video-note-${note.file_unique_id}.mp4`, mimeType: "video/mp4", voice: true,
      ...optional({ size: note.file_size, durationS: note.duration }),
    });
  }
  if (message.audio) {
    const audio = message.audio;
    found.push({
      kind: "audio", label: "audio file", source: source(audio), name: audio.file_name ?? `audio-${audio.file_unique_id}`,
      ...optional({ mimeType: audio.mime_type, size: audio.file_size, durationS: audio.duration }),
    });
  }
  if (message.animation) {
    // A GIF (Telegram sends it as MP4, with the same file as `document`): the model sees its
    // first frame, the thumbnail Telegram made; without one it is named like other media.
    const frame = message.animation.thumbnail;
    if (frame) {
      found.push({
        kind: "image", label: "GIF (its first frame)", source: source(frame), name: `gif-${frame.file_unique_id}.jpg`, mimeType: "image/jpeg",
        ...optional({ size: frame.file_size }), width: frame.width, height: frame.height, inline: true,
      });
    }
    return found;
  }
  if (message.document) {
    const document = message.document;
    const mimeType = document.mime_type?.toLowerCase();
    const name = document.file_name ?? `file-${document.file_unique_id}`;
    const kind = mimeType?.startsWith("image/") && IMAGE_TYPES.has(mimeType) ? "image" : mimeType?.startsWith("audio/") ? "audio" : "document";
    found.push({
      kind, label: kind === "image" ? "image" : kind === "audio" ? "audio file" : "file", source: source(document), name,
      ...optional({ mimeType: document.mime_type, size: document.file_size }),
      ...(kind === "image" ? { inline: true } : {}),
    });
  }
  return found;
}

/** What vision models take (OpenAI: PNG, JPEG, WEBP, non-animated GIF). */
export const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/jpg", "image/webp", "image/gif"]);
