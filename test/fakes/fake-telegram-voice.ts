/**
 * The fake Bot API's sendVoice, as strict as Telegram where our code meets it: the voice is an
 * upload (`attach://<part>`) of an Ogg file with an Opus stream ("OggS", then OpusHead in the
 * first page: what Telegram plays as a voice note; anything else it would show as a file), at
 * most 50 MB; a caption is parsed like a message's text (HTML with `parse_mode`) and holds at most
 * 1,024 characters after parsing; a chat whose user forbids voice notes (Telegram Premium's
 * privacy setting) answers 400 VOICE_MESSAGES_FORBIDDEN.
 */
import { isOggOpus } from "../helpers/ogg-opus.js";
import { parseTelegramHtml, type ParsedHtml } from "./telegram-html.js";
import type { MultipartFile } from "./multipart.js";

/** Telegram's caption limit, after entity parsing. */
export const CAPTION_LIMIT = 1024;
export const UPLOAD_LIMIT = 50 * 1024 * 1024;

export interface AcceptedVoice {
  bytes: Buffer;
  duration?: number;
  /** The caption the user sees, parsed. */
  caption?: ParsedHtml;
}

export function checkVoice(payload: Record<string, unknown>, files: readonly MultipartFile[] | undefined, forbidden: boolean): AcceptedVoice | { error: string; code?: number } {
  const reference = typeof payload.voice === "string" ? /^attach:\/\/(.+)$/.exec(payload.voice)?.[1] : undefined;
  if (payload.voice === undefined) return { error: "Bad Request: there is no voice in the request" };
  if (reference === undefined) return { error: "Bad Request: wrong remote file identifier specified: can't unserialize it. Wrong last symbol" };
  const file = files?.find((candidate) => candidate.name === reference);
  if (!file) return { error: "Bad Request: there is no voice in the request" };
  if (file.bytes.length === 0) return { error: "Bad Request: file must be non-empty" };
  if (file.bytes.length > UPLOAD_LIMIT) return { error: "Request Entity Too Large", code: 413 };
  if (!isOggOpus(file.bytes)) return { error: "Bad Request: fake Bot API: a voice note must be Ogg with Opus (OggS, OpusHead)" };
  if (forbidden) return { error: "Bad Request: VOICE_MESSAGES_FORBIDDEN" };
  let caption: ParsedHtml | undefined;
  if (payload.caption !== undefined) {
    const source = String(payload.caption);
    const parsed = payload.parse_mode === "HTML" ? parseTelegramHtml(source) : { text: source, entities: [] };
    if ("error" in parsed) return { error: parsed.error };
    if (parsed.text.length > CAPTION_LIMIT) return { error: "Bad Request: message caption is too long" };
    caption = parsed;
  }
  const duration = payload.duration === undefined ? undefined : Number(payload.duration);
  if (duration !== undefined && (!Number.isInteger(duration) || duration < 0)) return { error: "Bad Request: duration must be a non-negative integer" };
  return { bytes: file.bytes, ...(duration === undefined ? {} : { duration }), ...(caption ? { caption } : {}) };
}
