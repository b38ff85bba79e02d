/**
 * Reading a voice reply's audio (src/media/voice-note.ts): real Ogg/Opus made at test time gives
 * its duration and a waveform; what is not Ogg with an Opus stream is refused.
 */
import { describe, expect, it } from "vitest";
import { NotVoiceNoteError, readVoiceNote, waveformOf } from "../../../src/media/voice-note.js";
import { makeOggOpus } from "../../helpers/ogg-opus.js";

describe("voice note facts", () => {
  it("reads the duration and a waveform of at most 256 bars, the loudest at 255", async () => {
    const facts = await readVoiceNote(await makeOggOpus(3));
    expect(facts.durationS).toBeGreaterThan(2.9);
    expect(facts.durationS).toBeLessThan(3.1);
    expect(facts.waveform.length).toBe(150);
    expect(Math.max(...facts.waveform)).toBe(255);
    // The tone rises and falls: the bars are not all alike.
    expect(Math.min(...facts.waveform)).toBeLessThan(200);
  });

  it("refuses audio that is not Ogg/Opus: MP3 bytes, an Ogg page without Opus, an empty answer", async () => {
    const mp3 = Buffer.from([0x49, 0x44, 0x33, 0x04, 0, 0, 0, 0, 0, 0x21, 0xff, 0xfb, 0x90, 0x64]);
    await expect(readVoiceNote(mp3)).rejects.toThrow(NotVoiceNoteError);
    const opus = await makeOggOpus(0.5);
    const vorbis = Buffer.from(opus);
    vorbis.write("\u0001vorbis\u0000", 28, "latin1");
    await expect(readVoiceNote(vorbis)).rejects.toThrow(NotVoiceNoteError);
    await expect(readVoiceNote(new Uint8Array())).rejects.toThrow(NotVoiceNoteError);
  });

  it("draws a long stream in 256 bars and a short one in one bar a packet", () => {
    expect(waveformOf(Array.from({ length: 1_000 }, (_, index) => index % 100))).toHaveLength(256);
    expect([...waveformOf([10, 20, 40])]).toEqual([64, 128, 255]);
  });
});
