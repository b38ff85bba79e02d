/**
 * Voice replies on Discord (issue 35 item 1, docs/media.md), end to end: real discord.js ↔ the
 * fake Discord (which refuses a voice message with text beside it, with other than one Ogg/Opus
 * attachment, or without its duration and waveform, as Discord does), the real pipeline and
 * worker, and the fake speech endpoint's real Opus.
 */
import { describe, expect, it } from "vitest";
import { isOggOpus } from "../helpers/ogg-opus.js";
import { DiscordE2E, E2E_TIMEOUT, pipelineForEachTest, IDS, fixture, sleep, until } from "../helpers/discord-pipeline.js";

const IS_VOICE_MESSAGE = 1 << 13;

describe("Discord voice replies", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E;
  pipelineForEachTest((started) => (e2e = started));

  it("/voice on: the answer is a voice message (Ogg/Opus, its duration and waveform), and a long answer's text follows it", async () => {
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "/voice on" }));
    const [confirmation] = await e2e.waitForSent(1, IDS.dmChannel);
    expect(confirmation?.content).toMatch(/^Voice replies on/);

    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "hello there" }));
    const sent = await e2e.waitForSent(2, IDS.dmChannel);
    expect(Number(sent[1]!.flags) & IS_VOICE_MESSAGE).toBe(IS_VOICE_MESSAGE);
    expect(sent[1]!.content ?? "").toBe("");
    const upload = e2e.fake.uploads.at(-1)!;
    expect(upload.filename).toBe("voice-message.ogg");
    expect(isOggOpus(upload.bytes)).toBe(true);
    expect(upload.attachment.duration_secs).toBeGreaterThan(0);
    expect(Buffer.from(String(upload.attachment.waveform), "base64").length).toBeGreaterThan(0);
    expect(e2e.llm.speeches[0]?.input).toBe("echo: hello there");
    await sleep(300);
    expect(e2e.sent(IDS.dmChannel)).toHaveLength(2);

    e2e.llm.enqueue(`${"A long answer has its text shown beside the voice. ".repeat(12)}`);
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "tell me more" }));
    const more = await e2e.waitForSent(4, IDS.dmChannel);
    expect(Number(more[2]!.flags) & IS_VOICE_MESSAGE).toBe(IS_VOICE_MESSAGE);
    expect(String(more[3]!.content)).toContain("A long answer has its text shown beside the voice.");
  });

  it("where voice messages are refused (50173), the audio goes as an .ogg file", async () => {
    e2e.fake.voiceMessagesRefused.add(IDS.dmChannel);
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "/voice on" }));
    await e2e.waitForSent(1, IDS.dmChannel);
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "hello" }));
    await until(() => expect(e2e.fake.uploads.map((upload) => upload.filename)).toEqual(["answer.ogg"]));
    const file = e2e.sent(IDS.dmChannel)[1]!;
    expect(Number(file.flags ?? 0) & IS_VOICE_MESSAGE).toBe(0);
    expect(isOggOpus(e2e.fake.uploads[0]!.bytes)).toBe(true);
  });
});

describe("Discord voice replies with live previews", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E;
  pipelineForEachTest((started) => (e2e = started), { DISCORD_STREAMING: "partial", STREAMING_DELAY_MS: "0" });

  it("the silent preview gives way to the voice message, then the text; the preview is deleted after the voice", async () => {
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "/voice on" }));
    await e2e.waitForSent(1, IDS.dmChannel);
    const answer = "The ferry to the island leaves at nine every morning. ".repeat(10).trim();
    // Streamed over ~6 s, so the silent preview is surely posted before the answer is whole (at 150
    // tokens a second the answer was done in under a second and, on a quiet machine, came before any preview).
    e2e.llm.enqueue({ text: answer, tokensPerSecond: 20 });
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "when is the ferry?" }));
    const sent = await e2e.waitForSent(4, IDS.dmChannel);
    expect(Number(sent[1]!.flags)).toBe(4096);
    expect(Number(sent[2]!.flags) & IS_VOICE_MESSAGE).toBe(IS_VOICE_MESSAGE);
    expect(String(sent[3]!.content)).toBe(answer);
    await until(() => expect(e2e.fake.requestsTo("DELETE", /^\/channels\/\d+\/messages\/\d+$/)).toHaveLength(1));
    const [deleted] = e2e.fake.requestsTo("DELETE", /^\/channels\/\d+\/messages\/\d+$/);
    const voicePost = e2e.fake.requestsTo("POST", /^\/channels\/\d+\/messages$/).find((request) => request.status === 200 && (Number((request.body as { flags?: unknown }).flags) & IS_VOICE_MESSAGE) !== 0);
    expect(deleted!.at).toBeGreaterThanOrEqual(voicePost!.at);
    await sleep(1_000);
    const shown = e2e.fake.botMessages(IDS.dmChannel);
    expect(shown).toHaveLength(3);
    expect(shown.map((message) => Number(message.flags ?? 0) & IS_VOICE_MESSAGE)).toEqual([0, IS_VOICE_MESSAGE, 0]);
  });
});
