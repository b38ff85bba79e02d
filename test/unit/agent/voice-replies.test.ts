/**
 * Voice replies in the turn (src/agent/voice-reply.ts, voice-command.ts): `/voice` is a chat-wide
 * setting kept in the session's chat settings; after an answer, a chat set to "on" — or to
 * "auto" when the batch held a voice note — gets the answer spoken as the reply's voice part;
 * speech that fails leaves the text answer, with one log line. The speech port here is the
 * test's own (what it returns is not under test; the real one is, in test/e2e/telegram-voice.test.ts).
 */
import { describe, expect, it } from "vitest";
import { runTurnSegments, type TurnEngine } from "../../../src/agent/index.js";
import { voiceCommand } from "../../../src/agent/commands/voice-command.js";
import type { ReplyVoice } from "../../../src/core/channel.js";
import { SpeechError, type Speaker } from "../../../src/media/index.js";
import { freshSessionAfter } from "../../../src/session/state.js";
import type { InboxEntry } from "../../../src/session/store.js";
import { ToolCatalog } from "../../../src/tools/index.js";
import { engineOver, freshState, say, scriptedLlm } from "../../helpers/agent-turns.js";
import { captureLogs } from "../../helpers/pipeline.js";
import { silentLogger } from "../../../src/logger.js";

const ADA = "42";
const VOICE: ReplyVoice = { base64: "T2dnUw==", durationS: 2, waveform: "AAA=", withText: false };

/** A speaker that records what it was asked to say, and answers `outcome`. */
function speakerOf(outcome: () => ReplyVoice | undefined): Speaker & { spoken: string[] } {
  const spoken: string[] = [];
  return {
    spoken,
    async speak(answer) {
      spoken.push(answer);
      return outcome();
    },
  };
}

const voiceNote = (text: string, id: string): InboxEntry => ({
  ...say(ADA, ADA, "Ada", text, id),
  attachments: [{ kind: "audio", label: "voice message", voice: true, name: "voice.ogg", source: { platform: "telegram", fileId: id } }],
});

function engineWith(speech: Speaker | undefined, answer = "The ferry leaves at nine."): TurnEngine {
  const tools = new ToolCatalog({ builtins: [], logger: silentLogger });
  return engineOver(scriptedLlm([{ content: answer, toolCalls: [] }]), tools, speech ? { speech } : {});
}

async function answer(engine: TurnEngine, batch: InboxEntry[], voice?: "on" | "auto", log = silentLogger) {
  const state = freshState();
  if (voice) state.chat = { voice };
  return runTurnSegments(engine, { sessionKey: `tg:${ADA}`, state, batch, target: { platform: "telegram", chatId: ADA }, signal: new AbortController().signal, log });
}

describe("/voice", () => {
  const entry = say(ADA, ADA, "Ada", "/voice", "m1");

  it("sets on, auto and off in the chat's settings, which survive /new", () => {
    const state = freshState();
    expect(voiceCommand({ state, entry, admins: {}, args: "", available: true })).toMatch(/^Voice replies: off/);
    expect(voiceCommand({ state, entry, admins: {}, args: "auto", available: true })).toMatch(/^Voice replies auto/);
    expect(state.chat?.voice).toBe("auto");
    expect(freshSessionAfter(state, 5).chat?.voice).toBe("auto");
    voiceCommand({ state, entry, admins: {}, args: "ON", available: true });
    expect(state.chat?.voice).toBe("on");
    voiceCommand({ state, entry, admins: {}, args: "off", available: true });
    expect(state.chat?.voice).toBeUndefined();
  });

  it("refuses a word that is no choice, a group member who is not an admin, and a platform without voice notes", () => {
    const state = freshState();
    expect(voiceCommand({ state, entry, admins: {}, args: "loud", available: true })).toMatch(/not a choice/);
    const member = say("-100", "7", "Bob", "/voice on", "m2");
    expect(voiceCommand({ state, entry: member, admins: {}, args: "on", available: true })).toMatch(/Only an admin/);
    expect(voiceCommand({ state, entry: member, admins: { telegram: ["7"] }, args: "on", available: true })).toMatch(/^Voice replies on/);
    const console = { ...entry, platform: "console" as const };
    expect(voiceCommand({ state: freshState(), entry: console, admins: {}, args: "on", available: true })).toMatch(/not available/);
    expect(voiceCommand({ state: freshState(), entry, admins: {}, args: "on", available: false })).toMatch(/not available/);
    expect(state.chat?.voice).toBe("on");
  });
});

describe("voice replies in a turn", () => {
  it("auto: a voice note is answered with the answer spoken; a typed message with text alone", async () => {
    const speaker = speakerOf(() => VOICE);
    const spoken = await answer(engineWith(speaker), [voiceNote("when does the ferry leave?", "m1")], "auto");
    expect(spoken.replies).toHaveLength(1);
    expect(spoken.replies[0]).toMatchObject({ kind: "answer", text: "The ferry leaves at nine.", voice: VOICE });
    expect(speaker.spoken).toEqual(["The ferry leaves at nine."]);

    const typed = await answer(engineWith(speaker), [say(ADA, ADA, "Ada", "when does the ferry leave?", "m2")], "auto");
    expect(typed.replies[0]?.voice).toBeUndefined();
    expect(speaker.spoken).toHaveLength(1);
  });

  it("on speaks every answer; off (no setting) and no speech endpoint speak none", async () => {
    const speaker = speakerOf(() => VOICE);
    const on = await answer(engineWith(speaker), [say(ADA, ADA, "Ada", "hi", "m1")], "on");
    expect(on.replies[0]?.voice).toEqual(VOICE);
    const off = await answer(engineWith(speaker), [voiceNote("hi", "m2")]);
    expect(off.replies[0]?.voice).toBeUndefined();
    const none = await answer(engineWith(undefined), [voiceNote("hi", "m3")], "on");
    expect(none.replies[0]?.voice).toBeUndefined();
    expect(speaker.spoken).toHaveLength(1);
  });

  it("an answer with nothing to speak (code alone) stays text, with a log line", async () => {
    const logs = captureLogs("info");
    const result = await answer(engineWith(speakerOf(() => undefined)), [voiceNote("hi", "m1")], "on", logs.logger);
    expect(result.replies[0]?.voice).toBeUndefined();
    expect(logs.lines.filter((line) => line.includes("voice-reply-skipped"))).toHaveLength(1);
  });

  it("a failed speech leaves the text answer, with one log line naming why", async () => {
    const logs = captureLogs("info");
    const failing: Speaker = { speak: () => Promise.reject(new SpeechError("HTTP 500: server_error")) };
    const result = await answer(engineWith(failing), [voiceNote("hi", "m1")], "auto", logs.logger);
    expect(result.replies).toHaveLength(1);
    expect(result.replies[0]).toMatchObject({ kind: "answer", text: "The ferry leaves at nine." });
    expect(result.replies[0]?.voice).toBeUndefined();
    const lines = logs.lines.filter((line) => line.includes("voice-reply-failed"));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain("HTTP 500: server_error");
  });
});
