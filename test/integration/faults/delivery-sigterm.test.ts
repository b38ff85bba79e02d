/**
 * A gateway told to stop (a real SIGTERM to a real process) in the middle of a long Telegram
 * reply. The rule (docs/architecture.md, "Shutdown"): from the SIGTERM on, a delivery starts no
 * new part — the part in flight finishes, is recorded, and the rest of the reply is left to the
 * next gateway; a part still waiting for Telegram's answer when SHUTDOWN_TIMEOUT_MS runs out is
 * recorded as sent before the process exits (its outcome is unknown, and a Telegram part whose
 * outcome is unknown is never sent again). Before this rule the gateway went on sending parts
 * until its hard exit timer killed it mid-send, and the restarted gateway sent again the part
 * that was on its way.
 */
import { afterEach, describe, expect, inject, it } from "vitest";
import type { AppProcess } from "../../helpers/app-process.js";
import { startTcpProxy, type TcpProxy } from "../../helpers/tcp-proxy.js";
import { startTelegramApps, type TelegramApps } from "../../helpers/telegram-apps.js";
import { replyParts } from "../../../src/adapters/telegram/send-reply.js";
import { ADA, DM, sleep, textOf, waitUntil } from "../../helpers/telegram-pipeline.js";

let run: TelegramApps | undefined;
let proxy: TcpProxy | undefined;

afterEach(async () => {
  await run?.close();
  run = undefined;
  await proxy?.close();
  proxy = undefined;
});

/** Eight paragraphs of 3,899 characters: eight messages under Telegram's 4,096; each names its part in its first word. */
const WORDS = ["alpha", "bravo", "delta", "hotel", "oscar", "romeo", "tango", "vodka"];
const ANSWER = WORDS.map((word) => `${word} `.repeat(650).trim()).join("\n\n");
const partOf = (text: string) => WORDS.findIndex((word) => text.startsWith(word));

/** A gateway and a worker of `run`, ready: the gateway polling, the worker taking turns. */
async function startGatewayAndWorker(run: TelegramApps): Promise<AppProcess> {
  const gateway = run.start("gateway");
  const worker = run.start("worker");
  await gateway.waitForStderr(/telegram long polling started/, 90_000);
  await worker.waitForStderr(/longhaul-ready/, 90_000);
  return gateway;
}

/** SIGTERMs `gateway` with a part on the wire past its shutdown time, then starts the next gateway. */
async function stopPastShutdownTime(run: TelegramApps, gateway: AppProcess): Promise<void> {
  await gateway.kill("SIGTERM");
  expect(gateway.stderr()).toContain("shutdown-timed-out");
  await run.start("gateway").waitForStderr(/telegram long polling started/, 90_000);
}

describe("a gateway stopped with SIGTERM mid-reply", () => {
  it("starts no new part after the SIGTERM: exits in time, and the next gateway sends the rest, each part once", { timeout: 240_000 }, async () => {
    // Telegram lets a bot send about one message a second into a chat: eight parts take ~8 s,
    // past the 4 s this process has to stop.
    run = await startTelegramApps({ SHUTDOWN_TIMEOUT_MS: "4000" });
    const { telegram, llm, start } = run;
    llm.enqueue({ text: ANSWER });
    const first = start("gateway");
    const worker = start("worker");
    await first.waitForStderr(/telegram long polling started/, 90_000);
    await worker.waitForStderr(/longhaul-ready/, 90_000);

    telegram.pushMessage({ chat: DM, from: ADA, text: "eight parts, please" });
    await waitUntil(() => telegram.delivered(DM.id).length >= 2, "two parts delivered", 90_000);
    const code = await first.kill("SIGTERM");
    const before = telegram.delivered(DM.id).map((call) => partOf(textOf(call)));
    expect(first.stderr()).not.toContain("shutdown-timed-out");
    expect(code).toBe(0);
    expect(before.length).toBeLessThan(WORDS.length);

    const second = start("gateway");
    await second.waitForStderr(/telegram long polling started/, 90_000);
    await waitUntil(() => telegram.delivered(DM.id).some((call) => partOf(textOf(call)) === WORDS.length - 1), "the last part", 90_000);
    await sleep(1_500);
    expect(telegram.delivered(DM.id).map((call) => partOf(textOf(call)))).toEqual(WORDS.map((_, index) => index));
  });

  it("records the part still on its way when the shutdown time runs out: the next gateway never sends it again", { timeout: 240_000 }, async () => {
    run = await startTelegramApps({ SHUTDOWN_TIMEOUT_MS: "3000" });
    const { telegram, llm, start } = run;
    llm.enqueue({ text: ANSWER });
    // Part 3 reaches the chat, and its answer never comes back: the send is on its way when the
    // shutdown's time runs out.
    telegram.loseAnswer("sendMessage", { applied: true, hang: true, predicate: (call) => partOf(textOf(call)) === 2 });
    const first = start("gateway");
    const worker = start("worker");
    await first.waitForStderr(/telegram long polling started/, 90_000);
    await worker.waitForStderr(/longhaul-ready/, 90_000);

    telegram.pushMessage({ chat: DM, from: ADA, text: "eight parts, please" });
    await waitUntil(() => telegram.delivered(DM.id).some((call) => partOf(textOf(call)) === 2), "part 3 in the chat", 90_000);
    await first.kill("SIGTERM");
    expect(first.stderr()).toContain("shutdown-timed-out");

    const second = start("gateway");
    await second.waitForStderr(/telegram long polling started/, 90_000);
    await waitUntil(() => telegram.delivered(DM.id).some((call) => partOf(textOf(call)) === WORDS.length - 1), "the last part", 90_000);
    await sleep(1_500);
    expect(telegram.delivered(DM.id).map((call) => partOf(textOf(call)))).toEqual(WORDS.map((_, index) => index));
    // Counted as a part whose outcome is unknown (longhaul_reply_parts_unconfirmed_total).
    expect(first.stderr()).toMatch(/"part":2,.*"msg":"reply-part-unconfirmed"/);
  });

  it("records a file on its way (/export's Markdown upload, its answer never coming): the next gateway sends the next file, not that one again", { timeout: 240_000 }, async () => {
    run = await startTelegramApps({ SHUTDOWN_TIMEOUT_MS: "3000" });
    const { telegram } = run;
    const isMarkdown = (name: string | undefined) => name?.endsWith(".md") === true;
    // The reply: its text (part 0), the Markdown file (part 1), the JSON file (part 2).
    telegram.loseAnswer("sendDocument", { applied: true, hang: true, predicate: (call) => isMarkdown(call.files?.[0]?.filename) });
    const first = await startGatewayAndWorker(run);
    telegram.pushMessage({ chat: DM, from: ADA, text: "/export", entities: [{ type: "bot_command", offset: 0, length: 7 }] });
    await waitUntil(() => telegram.documents(DM.id).length === 1, "the Markdown file in the chat", 90_000);
    await stopPastShutdownTime(run, first);

    await waitUntil(() => telegram.documents(DM.id).length >= 2, "the JSON file", 90_000);
    await sleep(1_500);
    expect(telegram.documents(DM.id).map((document) => document.fileName.replace(/.*\./, ""))).toEqual(["md", "json"]);
    expect(telegram.delivered(DM.id).map(textOf).filter((text) => text.startsWith("Your export"))).toHaveLength(1);
    expect(first.stderr()).toMatch(/"part":1,.*"msg":"reply-part-unconfirmed"/);
  });

  it("records a voice note on its way (its answer never coming): the next gateway sends the text after it, not the voice again", { timeout: 240_000 }, async () => {
    run = await startTelegramApps({ SHUTDOWN_TIMEOUT_MS: "3000" });
    const { telegram } = run;
    const first = await startVoiceReply(run, () => telegram.loseAnswer("sendVoice", { applied: true, hang: true }));
    await waitUntil(() => telegram.voices(DM.id).length === 1, "the voice note in the chat", 90_000);
    await stopPastShutdownTime(run, first);

    await expectVoiceReplyOnce(run);
    expect(first.stderr()).toMatch(/"part":0,.*"msg":"reply-part-unconfirmed"/);
  });

  it("records the text part after a voice note on its way under the reply's own index: the next gateway does not send it again", { timeout: 240_000 }, async () => {
    run = await startTelegramApps({ SHUTDOWN_TIMEOUT_MS: "3000" });
    const { telegram } = run;
    // The text's part 3 is the reply's part 3 (the voice is part 0): on the wire, its answer never coming.
    const first = await startVoiceReply(run, () => telegram.loseAnswer("sendMessage", { applied: true, hang: true, predicate: (call) => partOf(textOf(call)) === 2 }));
    await waitUntil(() => telegram.delivered(DM.id).some((call) => partOf(textOf(call)) === 2), "the text's part 3 in the chat", 90_000);
    await stopPastShutdownTime(run, first);

    await expectVoiceReplyOnce(run);
    expect(first.stderr()).toMatch(/"part":3,.*"msg":"reply-part-unconfirmed"/);
  });

  it("records a part Telegram answered whose record had not gone out when the shutdown time ran out: the next gateway does not send it again", { timeout: 240_000 }, async () => {
    run = await startTelegramApps({ SHUTDOWN_TIMEOUT_MS: "3000" });
    const { telegram, llm } = run;
    // The gateway's Redis answers held from the moment the part is in the chat (a stalled
    // connection: what it sends still lands): the reply's finish waits behind a lease heartbeat
    // that is never answered, and is not sent. The part's own answer comes 1.5 s later.
    proxy = await startTcpProxy(inject("redisUrl"));
    llm.enqueue({ text: "the only part" });
    telegram.holdAnswer("sendMessage", 1_500, (call) => textOf(call) === "the only part");
    const first = run.start("gateway", { REDIS_URL: proxy.url });
    const worker = run.start("worker");
    await first.waitForStderr(/telegram long polling started/, 90_000);
    await worker.waitForStderr(/longhaul-ready/, 90_000);

    telegram.pushMessage({ chat: DM, from: ADA, text: "one part, please" });
    await waitUntil(() => telegram.delivered(DM.id).length === 1, "the part in the chat", 90_000);
    proxy.pause();
    await stopPastShutdownTime(run, first);

    // The next reply goes out behind it: by then the next gateway has taken the session over.
    llm.enqueue({ text: "the next answer" });
    telegram.pushMessage({ chat: DM, from: ADA, text: "and then?" });
    await waitUntil(() => telegram.delivered(DM.id).some((call) => textOf(call) === "the next answer"), "the next answer", 90_000);
    await sleep(1_500);
    expect(telegram.delivered(DM.id).map(textOf)).toEqual(["the only part", "the next answer"]);
    expect(first.stderr()).toMatch(/"part":0,.*"msg":"reply-part-recorded-before-exit"/);
  });
});

/**
 * A voice reply whose text is not shown beside the voice (short when spoken: four words), and
 * whose text is still several Telegram parts: each `---` renders as a ten-character rule. The
 * user forbids voice notes (VOICE_MESSAGES_FORBIDDEN): the text goes in the voice's place, part
 * by part. Before each of its parts was recorded, a gateway stopped between two of them left
 * nothing recorded (the next one attempted the voice again and sent every part again), and one
 * stopped with a part on the wire recorded it as the voice (the next one sent nothing more).
 */
const RULED = ["alpha", "bravo", "delta", "hotel", "oscar", "romeo", "tango", "vodka"].map((word) => `${word}\n\n${"---\n\n".repeat(340)}`).join("").trim();
const RULED_PARTS = replyParts(RULED);
/** Spoken in full (no cut) and never shown beside the voice: the text exists only in the voice's place. */
const NO_TEXT_BESIDE = { TTS_MAX_CHARS: "4096", VOICE_SHOW_TEXT_CHARS: "100000" };

describe("a gateway stopped with SIGTERM while the text goes in a refused voice note's place", () => {
  it("starts no new part after the SIGTERM: the next gateway sends the rest of the text, each part once, without trying the voice again", { timeout: 240_000 }, async () => {
    run = await startTelegramApps({ SHUTDOWN_TIMEOUT_MS: "4000", ...NO_TEXT_BESIDE });
    const { telegram } = run;
    telegram.voiceForbidden.add(String(DM.id));
    const first = await startVoiceReply(run, () => undefined, RULED);
    await waitUntil(() => telegram.delivered(DM.id).length >= 3, "the text's part 2 in the chat", 90_000);
    const code = await first.kill("SIGTERM");
    expect(first.stderr()).not.toContain("shutdown-timed-out");
    expect(code).toBe(0);

    await run.start("gateway").waitForStderr(/telegram long polling started/, 90_000);
    await expectRuledOnce(run);
  });

  it("records the text part on the wire when the time runs out under its own index: the next gateway sends the parts after it", { timeout: 240_000 }, async () => {
    run = await startTelegramApps({ SHUTDOWN_TIMEOUT_MS: "3000", ...NO_TEXT_BESIDE });
    const { telegram } = run;
    telegram.voiceForbidden.add(String(DM.id));
    const held = (call: Parameters<typeof textOf>[0]) => textOf(call) === RULED_PARTS[2];
    const first = await startVoiceReply(run, () => telegram.loseAnswer("sendMessage", { applied: true, hang: true, predicate: held }), RULED);
    await waitUntil(() => telegram.delivered(DM.id).some(held), "the text's part 3 in the chat", 90_000);
    await stopPastShutdownTime(run, first);

    await expectRuledOnce(run);
    expect(first.stderr()).toMatch(/"msg":"reply-part-unconfirmed"/);
  });
});

/** The refused voice reply's text reached the chat whole, each part once and in order, after one voice attempt. */
async function expectRuledOnce({ telegram }: TelegramApps): Promise<void> {
  expect(RULED_PARTS.length).toBeGreaterThan(4);
  await waitUntil(() => telegram.delivered(DM.id).some((call) => textOf(call) === RULED_PARTS.at(-1)), "the text's last part", 90_000);
  await sleep(1_500);
  expect(telegram.delivered(DM.id).slice(1).map(textOf)).toEqual(RULED_PARTS);
  expect(telegram.callsOf("sendVoice")).toHaveLength(1);
  expect(telegram.voices(DM.id)).toHaveLength(0);
}

/**
 * Starts a gateway and a worker, turns voice replies on, sets `trap`, and asks for ANSWER: spoken,
 * and shown after the voice note (too long for its caption) — part 0 the voice, parts 1–8 the text.
 */
async function startVoiceReply(run: TelegramApps, trap: () => void, answer = ANSWER): Promise<AppProcess> {
  const { telegram, llm } = run;
  const gateway = await startGatewayAndWorker(run);
  telegram.pushMessage({ chat: DM, from: ADA, text: "/voice on" });
  await waitUntil(() => telegram.delivered(DM.id).length === 1, "the /voice answer", 90_000);
  llm.enqueue({ text: answer });
  trap();
  telegram.pushMessage({ chat: DM, from: ADA, text: "eight parts, spoken" });
  return gateway;
}

/** The voice reply reached the chat whole, each part once: one voice note, the text's eight parts after the /voice answer. */
async function expectVoiceReplyOnce({ telegram }: TelegramApps): Promise<void> {
  await waitUntil(() => telegram.delivered(DM.id).some((call) => partOf(textOf(call)) === WORDS.length - 1), "the last part", 90_000);
  await sleep(1_500);
  expect(telegram.voices(DM.id)).toHaveLength(1);
  expect(telegram.delivered(DM.id).slice(1).map((call) => partOf(textOf(call)))).toEqual(WORDS.map((_, index) => index));
}
