/**
 * Real Ogg/Opus audio made at test time: a tone whose loudness rises and falls like syllables,
 * encoded to Opus by libopus (opusscript: libopus 1.4 compiled to WebAssembly, no native build)
 * and put into Ogg pages by mediabunny. What the fake speech endpoint answers, and what the fake
 * platforms check the uploads against.
 */
import OpusScript from "opusscript";
import { BufferTarget, EncodedAudioPacketSource, EncodedPacket, OggOutputFormat, Output } from "mediabunny";

const SAMPLE_RATE = 48_000;
/** 20 ms at 48 kHz: the frame size voice encoders use. */
const FRAME = 960;
/** libopus's encoder delay at 48 kHz (its lookahead): what a decoder skips at the start. */
const PRE_SKIP = 312;

/** RFC 7845's identification header of a mono 48 kHz stream. */
function opusHead(): Uint8Array {
  const head = new Uint8Array(19);
  const view = new DataView(head.buffer);
  head.set(Buffer.from("OpusHead"), 0);
  head[8] = 1;
  head[9] = 1;
  view.setUint16(10, PRE_SKIP, true);
  view.setUint32(12, SAMPLE_RATE, true);
  view.setInt16(16, 0, true);
  head[18] = 0;
  return head;
}

/** `durationS` seconds of a `frequency` Hz tone, as an Ogg/Opus file. */
export async function makeOggOpus(durationS: number, frequency = 220): Promise<Buffer> {
  const encoder = new OpusScript(SAMPLE_RATE, 1, OpusScript.Application.VOIP);
  const output = new Output({ format: new OggOutputFormat(), target: new BufferTarget() });
  const source = new EncodedAudioPacketSource("opus");
  output.addAudioTrack(source);
  await output.start();
  const frames = Math.max(1, Math.round((durationS * SAMPLE_RATE) / FRAME));
  const decoderConfig = { codec: "opus" as const, numberOfChannels: 1, sampleRate: SAMPLE_RATE, description: opusHead() };
  try {
    for (let index = 0; index < frames; index++) {
      const pcm = Buffer.alloc(FRAME * 2);
      for (let sample = 0; sample < FRAME; sample++) {
        const t = (index * FRAME + sample) / SAMPLE_RATE;
        // About four "syllables" a second, with quiet between them.
        const envelope = Math.max(0, Math.sin(2 * Math.PI * 2 * t));
        pcm.writeInt16LE(Math.round(envelope * 12_000 * Math.sin(2 * Math.PI * frequency * t)), sample * 2);
      }
      const packet = encoder.encode(pcm, FRAME);
      await source.add(new EncodedPacket(new Uint8Array(packet), "key", (index * FRAME) / SAMPLE_RATE, FRAME / SAMPLE_RATE), { decoderConfig });
    }
    source.close();
    await output.finalize();
  } finally {
    encoder.delete();
  }
  return Buffer.from(output.target.buffer!);
}

/**
 * Whether `bytes` is an Ogg stream whose first page holds an Opus identification header, read
 * byte by byte (RFC 3533 page layout, RFC 7845 OpusHead): what the fake platforms accept as a
 * voice note, judged without the code under test.
 */
export function isOggOpus(bytes: Uint8Array): boolean {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer.length < 28 || buffer.subarray(0, 4).toString("latin1") !== "OggS") return false;
  const segments = buffer[26]!;
  const payload = 27 + segments;
  return buffer.subarray(payload, payload + 8).toString("latin1") === "OpusHead";
}
