/**
 * Voice replies (docs/media.md, "Voice replies"): an answer's text → what to speak
 * (spoken-text.ts) → the speech endpoint (src/llm/speech.ts, Ogg/Opus) → checked and measured
 * (voice-note.ts) → the reply's voice part. The call is paid like any other (`meter`: reserve
 * the characters' price, settle it). Every failure is a `SpeechError` with words safe to log; the
 * caller then sends the text alone.
 */
import type { CallBudget } from "../core/llm.js";
import type { ReplyVoice } from "../core/channel.js";
import { createTextToSpeech, SpeechFailure, type TextToSpeech, type TextToSpeechOptions } from "../llm/speech.js";
import { spokenText } from "./spoken-text.js";
import { NotVoiceNoteError, readVoiceNote } from "./voice-note.js";

/** The speech endpoint (TTS_*), and what is spoken and shown. */
export interface SpeakerOptions extends TextToSpeechOptions {
  /** TTS_MAX_CHARS: the longest text spoken; a longer answer is cut at a sentence end. */
  maxChars: number;
  /** VOICE_SHOW_TEXT_CHARS: a longer answer shows its text beside the voice. */
  showTextFromChars: number;
  /** Runs the speech call for `characters` spoken, paid by `budget`; default: as is. */
  meter?: (call: () => Promise<Uint8Array>, characters: number, budget: CallBudget | undefined) => Promise<Uint8Array>;
}

export interface SpeakOptions {
  signal?: AbortSignal;
  budget?: CallBudget;
  /** The reply says more than the answer (a notice, a warning): its text must be seen too. */
  textNeeded?: boolean;
}

export interface Speaker {
  /** → the voice part of the answer's reply; undefined when it has no words to speak (only code, say). */
  speak(answer: string, options?: SpeakOptions): Promise<ReplyVoice | undefined>;
}

export class SpeechError extends Error {
  override readonly name = "SpeechError";
}

export function createSpeaker(options: SpeakerOptions): Speaker {
  const speech: TextToSpeech = createTextToSpeech(options);
  return {
    async speak(answer, speakOptions = {}) {
      const spoken = spokenText(answer, options.maxChars);
      if (spoken.text === "") return undefined;
      const call = () => speech(spoken.text, speakOptions.signal);
      try {
        const bytes = await (options.meter ? options.meter(call, spoken.text.length, speakOptions.budget) : call());
        const facts = await readVoiceNote(bytes);
        return {
          base64: Buffer.from(bytes).toString("base64"),
          durationS: facts.durationS,
          waveform: Buffer.from(facts.waveform).toString("base64"),
          withText: speakOptions.textNeeded === true || spoken.omitted || spoken.cut || answer.length > options.showTextFromChars,
        };
      } catch (error) {
        if (error instanceof SpeechFailure || error instanceof NotVoiceNoteError) throw new SpeechError(error.message);
        throw error;
      }
    },
  };
}
