/**
 * What a voice reply's audio is, read from the bytes the speech endpoint sent (mediabunny's Ogg
 * demuxer): Ogg with an Opus stream — what Telegram plays as a voice note and Discord as a voice
 * message — its duration, and a waveform for Discord's voice message (up to 256 bytes, 0–255).
 * The waveform follows the size of the Opus packets over time: at a steady bitrate target a
 * loud or busy stretch takes more bytes than a pause, so the bars rise and fall with the speech
 * without decoding it. Anything else (MP3 from an endpoint that ignores `response_format`, a
 * JSON error with status 200) is refused: the reply then goes as text.
 */
import type * as MediabunnyModule from "mediabunny";

export interface VoiceNoteFacts {
  durationS: number;
  /** Discord's `waveform`: amplitudes 0–255, at most 256 of them, in time order. */
  waveform: Uint8Array;
}

export class NotVoiceNoteError extends Error {
  override readonly name = "NotVoiceNoteError";
}

/** Packets read between two turns of the event loop (~0.13 ms each). */
const PACKETS_PER_TURN = 32;

/** Discord's clients draw at most 256 bars. */
const WAVEFORM_BARS = 256;

const OGG_MAGIC = [0x4f, 0x67, 0x67, 0x53];

let loaded: Promise<typeof MediabunnyModule> | undefined;
/** Loaded on the first voice reply: a worker that never speaks never pays for the module. */
const mediabunny = (): Promise<typeof MediabunnyModule> => (loaded ??= import("mediabunny"));

export async function readVoiceNote(bytes: Uint8Array): Promise<VoiceNoteFacts> {
  if (bytes.byteLength < 4 || OGG_MAGIC.some((byte, index) => bytes[index] !== byte)) throw new NotVoiceNoteError("the audio is not Ogg");
  const { Input, BufferSource, EncodedPacketSink, OGG } = await mediabunny();
  const input = new Input({ source: new BufferSource(bytes), formats: [OGG] });
  try {
    const track = await input.getPrimaryAudioTrack();
    if (!track || track.codec !== "opus") throw new NotVoiceNoteError(`the Ogg stream is ${track?.codec ?? "not audio"}, not Opus`);
    const sizes: number[] = [];
    for await (const packet of new EncodedPacketSink(track).packets()) {
      sizes.push(packet.byteLength);
      // The demuxer's promises resolve without giving the event loop a turn: 100 s of speech
      // (5,000 packets) held it for 650 ms in one piece; with a turn every 32 packets the longest piece was 24 ms.
      if (sizes.length % PACKETS_PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    if (sizes.length === 0) throw new NotVoiceNoteError("the Opus stream has no audio");
    const durationS = await track.computeDuration();
    return { durationS, waveform: waveformOf(sizes) };
  } catch (error) {
    throw error instanceof NotVoiceNoteError ? error : new NotVoiceNoteError(`the Ogg stream could not be read (${error instanceof Error ? error.name : "error"})`);
  } finally {
    input.dispose();
  }
}

/** Packet sizes → at most WAVEFORM_BARS bars, the largest 255. */
export function waveformOf(sizes: readonly number[]): Uint8Array {
  const bars = Math.min(WAVEFORM_BARS, sizes.length);
  const sums = new Array<number>(bars).fill(0);
  const counts = new Array<number>(bars).fill(0);
  sizes.forEach((size, index) => {
    const bar = Math.floor((index * bars) / sizes.length);
    sums[bar]! += size;
    counts[bar]!++;
  });
  const means = sums.map((sum, bar) => sum / Math.max(1, counts[bar]!));
  const loudest = Math.max(...means);
  return Uint8Array.from(means, (mean) => (loudest > 0 ? Math.round((mean / loudest) * 255) : 0));
}
