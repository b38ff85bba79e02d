/**
 * Voice replies end to end (issue 35 item 1, docs/media.md): the real grammY adapter ↔ the fake
 * Bot API (whose sendVoice takes only Ogg with an Opus stream, and a caption of at most 1,024
 * characters after parsing), the real pipeline and worker, and the fake LLM's speech endpoint,
 * which answers real Opus made at test time. Every test ends with closeChecked: no secret in the logs.
 */
import { describe, expect, it } from "vitest";
import type { Message } from "grammy/types";
import { httpError, textOf as contentText } from "../fakes/fake-llm.js";
import { isOggOpus } from "../helpers/ogg-opus.js";
import { writeConfigFile } from "../helpers/config-file.js";
import { ADA, DM, sleep, textOf, waitUntil, useTelegramE2e, type TelegramE2e } from "../helpers/telegram-pipeline.js";

const startE2e = useTelegramE2e();

let nextFile = 1;

/** A voice note as Telegram sends it; what it "says" is the transcriber's answer. */
function voiceNote(run: TelegramE2e): Partial<Message> {
  const id = `AwACvoice${nextFile++}`;
  run.telegram.addFile(id, Buffer.from("OggS a voice note"), `voice/${id}.oga`);
  return { voice: { file_id: id, file_unique_id: `${id}-u`, duration: 2, mime_type: "audio/ogg", file_size: 17 } };
}

/** Sends a command and waits for its answer (the `count`th message of the chat). */
async function command(run: TelegramE2e, text: string, count: number): Promise<string> {
  run.telegram.pushMessage({ chat: DM, from: ADA, text });
  const sent = await run.waitForSent(DM.id, count);
  return textOf(sent[count - 1]);
}

const voicesTo = (run: TelegramE2e, count: number) =>
  waitUntil(() => run.telegram.voices(DM.id).length >= count, `${count} voice notes to ${DM.id}`).then(() => run.telegram.voices(DM.id));

describe("voice replies on telegram", () => {
  it("auto: a voice note is answered with a voice note (Ogg/Opus from /audio/speech), a typed message with text; the answer stays in the transcript", async () => {
    const e2e = await startE2e();
    e2e.llm.setTranscriber(() => "when does the ferry leave?");
    expect(await command(e2e, "/voice auto", 1)).toMatch(/^Voice replies auto/);
    const asked = e2e.telegram.pushMessage({ chat: DM, from: ADA, ...voiceNote(e2e) });
    const [voice] = await voicesTo(e2e, 1);
    expect(e2e.llm.speeches).toHaveLength(1);
    expect(e2e.llm.speeches[0]).toMatchObject({ model: "tts-1", voice: "alloy", responseFormat: "opus" });
    expect(e2e.llm.speeches[0]?.input).toContain("when does the ferry leave?");
    expect(isOggOpus(voice!.voice!.bytes)).toBe(true);
    expect(JSON.parse(String(voice!.payload.reply_parameters))).toMatchObject({ message_id: asked.message?.message_id });
    expect(Number(voice!.payload.duration)).toBeGreaterThanOrEqual(1);
    // A short answer: the voice alone, no caption, no text message besides the /voice answer.
    expect(voice!.voice!.caption).toBeUndefined();
    await sleep(300);
    expect(e2e.sentTo(DM.id)).toHaveLength(1);

    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "and on sunday?" });
    const sent = await e2e.waitForSent(DM.id, 2);
    expect(textOf(sent[1])).toContain("and on sunday?");
    expect(e2e.telegram.voices(DM.id)).toHaveLength(1);
    // The spoken answer is in the conversation as text: the model reads it back.
    const history = e2e.llm.requests.at(-1)!.body.messages.filter((message) => message.role === "assistant").map((message) => contentText(message.content));
    expect(history.some((text) => text.includes("when does the ferry leave?"))).toBe(true);
  });

  it("/voice off answers a voice note in text, and nothing is spoken", async () => {
    const e2e = await startE2e();
    e2e.llm.setTranscriber(() => "what is the weather?");
    await command(e2e, "/voice on", 1);
    expect(await command(e2e, "/voice off", 2)).toMatch(/^Voice replies off/);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, ...voiceNote(e2e) });
    const sent = await e2e.waitForSent(DM.id, 3);
    expect(textOf(sent[2])).toContain("what is the weather?");
    expect(e2e.llm.speeches).toHaveLength(0);
    expect(e2e.telegram.callsOf("sendVoice")).toHaveLength(0);
  });

  it("a long answer with code: the voice says where the code is, and the text goes beside it — as the caption when it fits, else as its own message", async () => {
    const e2e = await startE2e();
    await command(e2e, "/voice on", 1);
    const code = "```sh\nnpm ci --no-audit\n```";
    e2e.llm.enqueue(`Install it first:\n\n${code}\n\nThen start it.`);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "how do I install it?" });
    const [captioned] = await voicesTo(e2e, 1);
    expect(e2e.llm.speeches[0]?.input).toBe("Install it first:\n(code in the text)\nThen start it.");
    expect(captioned!.voice!.caption?.text).toContain("npm ci --no-audit");
    expect(e2e.sentTo(DM.id)).toHaveLength(1);

    const long = `Run this first:\n\n${code}\n\n${"This part of the answer explains the steps one by one. ".repeat(30)}`;
    e2e.llm.enqueue(long);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "and in detail?" });
    const voices = await voicesTo(e2e, 2);
    const sent = await e2e.waitForSent(DM.id, 2);
    expect(voices[1]!.voice!.caption).toBeUndefined();
    expect(textOf(sent[1])).toContain("npm ci --no-audit");
    // The voice went first, then the text.
    expect(e2e.telegram.calls.indexOf(voices[1]!)).toBeLessThan(e2e.telegram.calls.indexOf(sent[1]!));
    // Longer than TTS_MAX_CHARS (1,500): spoken up to a sentence end, then told where the rest is.
    const spoken = e2e.llm.speeches[1]!.input;
    expect(spoken.startsWith("Run this first:\n(code in the text)\nThis part")).toBe(true);
    expect(spoken.endsWith("one by one. The rest is in the text.")).toBe(true);
    expect(spoken.length).toBeLessThanOrEqual(1_500);
    expect(spoken).not.toContain("npm ci");
  });

  it("the speech endpoint's 500 leaves the text answer, with one log line", async () => {
    const e2e = await startE2e();
    e2e.llm.setTranscriber(() => "tell me a joke");
    e2e.llm.setSpeaker(() => httpError.server(500));
    await command(e2e, "/voice auto", 1);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, ...voiceNote(e2e) });
    const sent = await e2e.waitForSent(DM.id, 2);
    expect(textOf(sent[1])).toContain("tell me a joke");
    expect(e2e.llm.speeches).toHaveLength(1);
    expect(e2e.telegram.callsOf("sendVoice")).toHaveLength(0);
    const failures = e2e.logs.lines.filter((line) => line.includes("voice-reply-failed"));
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain("HTTP 500");
  });

  it("a user who forbids voice notes gets the text in the voice's place", async () => {
    const e2e = await startE2e();
    e2e.telegram.voiceForbidden.add(String(DM.id));
    await command(e2e, "/voice on", 1);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "good morning" });
    const sent = await e2e.waitForSent(DM.id, 2);
    expect(textOf(sent[1])).toBe("echo: good morning");
    expect(e2e.telegram.callsOf("sendVoice")).toHaveLength(1);
    expect(e2e.telegram.voices(DM.id)).toHaveLength(0);
    await sleep(300);
    expect(e2e.sentTo(DM.id)).toHaveLength(2);
  });

  it("speech that cannot be used leaves the text with one log line: an answer that is not Ogg/Opus, a budget that cannot pay for it", async () => {
    const e2e = await startE2e({
      env: { TTS_PRICE_PER_MILLION_CHARS: "1000000", LONGHAUL_CONFIG_FILE: writeConfigFile("budgets:\n  chat: { daily: { usd: 10 } }\n") },
    });
    await command(e2e, "/voice on", 1);
    // An endpoint that ignores response_format and answers MP3.
    e2e.llm.setSpeaker(() => ({ audio: Buffer.from([0x49, 0x44, 0x33, 0x04, 0, 0, 0, 0, 0, 0x21, 0xff, 0xfb, 0x90, 0x64]), contentType: "audio/mpeg" }));
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "one" });
    expect(textOf((await e2e.waitForSent(DM.id, 2))[1])).toBe("echo: one");
    e2e.llm.setSpeaker(undefined);
    // The MP3 was paid for ("echo: one", $9: the endpoint did the work), so $1 is left; "echo: a
    // longer question" is 23 characters, $23 at $1 a character: refused before the call.
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "a longer question" });
    expect(textOf((await e2e.waitForSent(DM.id, 3))[2])).toBe("echo: a longer question");
    expect(e2e.llm.speeches).toHaveLength(1);
    expect(e2e.telegram.callsOf("sendVoice")).toHaveLength(0);
    const failures = e2e.logs.lines.filter((line) => line.includes("voice-reply-failed"));
    expect(failures).toHaveLength(2);
    expect(failures[0]).toContain("the audio is not Ogg");
    expect(failures[1]).toMatch(/budget/i);
  });

  it("streaming: the live preview gives way to the voice note, which carries the text as its caption", async () => {
    const e2e = await startE2e({ env: { STREAMING: "partial", STREAMING_DELAY_MS: "0" } });
    await command(e2e, "/voice on", 1);
    const answer = "The ferry to the island leaves at nine every morning. ".repeat(10).trim();
    e2e.llm.enqueue({ text: answer, tokensPerSecond: 150 });
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "when is the ferry?" });
    const [voice] = await voicesTo(e2e, 1);
    const deleted = await e2e.telegram.waitForCall("deleteMessage");
    // The preview was a silent message of its own, deleted once the voice note was out.
    const preview = e2e.telegram.callsOf("sendMessage").find((call) => call.visible && call.notified === false);
    expect(preview).toBeDefined();
    expect(deleted.at).toBeGreaterThanOrEqual(voice!.at);
    expect(voice!.voice!.caption?.text).toBe(answer);
    await sleep(1_000);
    const view = e2e.telegram.chatView(DM.id);
    expect(view).toHaveLength(2);
    expect(view.map((message) => message.messageId)).not.toContain(Number(deleted.payload.message_id));
    expect(e2e.telegram.voices(DM.id)).toHaveLength(1);
  });

  it("a voice note whose answer was lost is counted as sent, never sent twice, and the text follows it", async () => {
    const e2e = await startE2e();
    await command(e2e, "/voice on", 1);
    // Telegram sent the voice note, and the connection dropped before its answer came back.
    e2e.telegram.loseAnswer("sendVoice", { applied: true });
    const answer = "The ferry to the island leaves at nine every morning. ".repeat(10).trim();
    e2e.llm.enqueue(`${answer}\n\n\`\`\`\ntimetable.pdf\n\`\`\`\n\n${answer}`);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "when is the ferry?" });
    const sent = await e2e.waitForSent(DM.id, 2);
    expect(textOf(sent[1])).toContain("timetable.pdf");
    await sleep(1_000);
    expect(e2e.telegram.callsOf("sendVoice")).toHaveLength(1);
    expect(e2e.telegram.voices(DM.id)).toHaveLength(1);
    expect(e2e.sentTo(DM.id)).toHaveLength(2);
    expect(e2e.logs.lines.filter((line) => line.includes("reply-part-unconfirmed"))).toHaveLength(1);
  });

  it("speech is paid from the chat's budget at TTS_PRICE_PER_MILLION_CHARS, by the characters spoken", async () => {
    const e2e = await startE2e({
      env: { TTS_PRICE_PER_MILLION_CHARS: "1000000", LONGHAUL_CONFIG_FILE: writeConfigFile("budgets:\n  chat: { daily: { usd: 100 } }\n") },
    });
    await command(e2e, "/voice on", 1);
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "hi there" });
    await voicesTo(e2e, 1);
    const characters = e2e.llm.speeches[0]!.input.length;
    // The main model costs nothing here (no prices): what the budget shows is the speech, $1 a character.
    const usage = await command(e2e, "/usage", 2);
    expect(usage).toContain(`Budget today for this chat: $${characters.toFixed(2)} of $100.00 used`);
  });
});
