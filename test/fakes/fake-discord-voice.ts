/**
 * What the fake Discord REST checks in a voice message (flag IS_VOICE_MESSAGE, 1 << 13), as
 * Discord answers it: no content, embeds or components (50159), exactly one attachment and it Ogg
 * with an Opus stream (50160; judged byte by byte, test/helpers/ogg-opus.ts), its
 * `duration_secs` and `waveform` given in the request's attachment metadata (50161), and a
 * channel that allows voice messages (50173: `FakeDiscordRest.voiceMessagesRefused`).
 */
import { isOggOpus } from "../helpers/ogg-opus.js";
import type { MultipartFile } from "./multipart.js";

export const IS_VOICE_MESSAGE = 1 << 13;

type Payload = Record<string, unknown>;

export function voiceMessageRefusal(body: Payload, files: readonly MultipartFile[], refusedHere: boolean): { message: string; code: number } | undefined {
  if (refusedHere) return { message: "Cannot send voice messages in this channel", code: 50173 };
  const content = typeof body.content === "string" ? body.content : "";
  if (content !== "" || (Array.isArray(body.embeds) && body.embeds.length > 0) || (Array.isArray(body.components) && body.components.length > 0)) {
    return { message: "Voice messages do not support additional content.", code: 50159 };
  }
  const file = files[0];
  // @discordjs/rest names the part's type from its bytes (application/ogg for "OggS"); Discord reads the bytes too.
  if (files.length !== 1 || !file || !/^(audio|application)\/ogg\b/i.test(file.contentType) || !isOggOpus(file.bytes)) {
    return { message: "Voice messages must have a single audio attachment.", code: 50160 };
  }
  const metadata = (Array.isArray(body.attachments) ? body.attachments : [])[0] as Payload | undefined;
  const duration = metadata?.duration_secs;
  const waveform = metadata?.waveform;
  if (typeof duration !== "number" || !(duration > 0) || typeof waveform !== "string" || !/^[A-Za-z0-9+/]+={0,2}$/.test(waveform) || Buffer.from(waveform, "base64").length > 256) {
    return { message: "Voice messages must have supporting metadata.", code: 50161 };
  }
  return undefined;
}
