/**
 * The voice of an answer (/voice, docs/media.md): after the chat handler's answer, in a chat whose
 * setting asks for it ("on", or "auto" and the batch held a voice note), the answer is spoken and
 * the voice joins its reply as part 0. Speech never costs the answer: a failure (the endpoint, a
 * spent budget, audio that is not Ogg/Opus) leaves the reply as text, with one log line.
 */
import { BudgetExhaustedError } from "../errors.js";
import { SpeechError } from "../media/index.js";
import type { InboxEntry } from "../session/store.js";
import { VOICE_PLATFORMS } from "./commands/voice-command.js";
import type { ChatPorts } from "./ports.js";
import type { TurnRun } from "./turn-types.js";

/** `answer`: the model's own words (the reply's text may carry notices before them). */
export async function speakAnswer(run: TurnRun<ChatPorts>, entries: readonly InboxEntry[], answer: string): Promise<void> {
  const speech = run.engine.speech;
  const setting = run.state.chat?.voice;
  const reply = run.replies.at(-1);
  if (!speech || !setting || !reply || reply.kind !== "answer" || !VOICE_PLATFORMS.has(reply.target.platform)) return;
  if (setting === "auto" && !entries.some((entry) => entry.attachments?.some((attachment) => attachment.voice === true))) return;
  const { log, signal } = run.input;
  try {
    const voice = await speech.speak(answer, { signal, ...(run.budget ? { budget: run.budget } : {}), textNeeded: reply.text !== answer });
    if (voice) reply.voice = voice;
    else log.info({ replyId: reply.replyId }, "voice-reply-skipped: nothing to speak (code or tables only); the answer goes as text");
  } catch (error) {
    // The speech module's failures say what went wrong in words safe to log; anything else is a bug, logged whole.
    if (error instanceof SpeechError || error instanceof BudgetExhaustedError) log.warn({ replyId: reply.replyId, reason: error.message }, "voice-reply-failed: the answer goes as text");
    else log.warn({ replyId: reply.replyId, err: error }, "voice-reply-failed: the answer goes as text");
  }
}
