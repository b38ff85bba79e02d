/**
 * Live previews across crashes (issue 15), with real processes: a worker SIGKILLed while it
 * streams (another worker retries the turn and continues the same preview, which the final then
 * replaces: one preview, one answer), and a gateway SIGKILLed in the middle of the final (the
 * restarted gateway finishes it from the durable record, after the parts already recorded), and
 * a gateway SIGKILLed between the final's record and the deletion of the status it replaced.
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTelegramApps, type TelegramApps } from "../../helpers/telegram-apps.js";
import { ADA, DM, sleep, waitUntil } from "../../helpers/telegram-pipeline.js";
import { longAnswer } from "../../helpers/streaming.js";

let run: TelegramApps | undefined;

afterEach(async () => {
  await run?.close();
  run = undefined;
});

async function setUp() {
  run = await startTelegramApps({ STREAMING: "partial" });
  return run;
}

const squash = (text: string) => text.replace(/\s+/g, "");

describe("streaming across crashes", () => {
  for (const fault of ["SIGKILL", "SIGSTOP"] as const) it(`a worker ${fault === "SIGKILL" ? "killed" : "paused past its lease"} mid-stream: another worker finishes in the same preview, the final replaces it, no second answer`, { timeout: 240_000 }, async () => {
    const { telegram, llm, start } = await setUp();
    const answer = Array.from({ length: 90 }, (_, index) => `word${index}`).join(" ");
    // The first attempt streams slowly; the retry answers at once.
    llm.setHandler((request) => (request.index === 0 ? { text: answer, tokensPerSecond: 12 } : { text: answer }));
    const gateway = start("gateway");
    const first = start("worker");
    await gateway.waitForStderr(/telegram long polling started/, 90_000);
    await first.waitForStderr(/longhaul-ready/, 90_000);

    telegram.pushMessage({ chat: DM, from: ADA, text: "go" });
    await waitUntil(() => telegram.chatView(DM.id).some((message) => message.text.startsWith("word0 word1")), "the answer streaming into the preview", 60_000);
    const preview = telegram.chatView(DM.id)[0]!;
    if (fault === "SIGKILL") await first.kill("SIGKILL");
    else first.signal("SIGSTOP");
    start("worker");

    await waitUntil(() => telegram.chatView(DM.id)[0]?.text === answer, "the final in place of the preview", 90_000);
    // The paused worker wakes up mid-stream: it is superseded, and nothing it still sends shows.
    if (fault === "SIGSTOP") first.signal("SIGCONT");
    await sleep(3_000);
    const view = telegram.chatView(DM.id);
    expect(view).toHaveLength(1);
    // One preview for both attempts (deleted once the answer was out), one answer, which notified.
    expect(view[0]?.messageId).not.toBe(preview.messageId);
    expect(telegram.callsOf("sendMessage").filter((call) => call.visible)).toHaveLength(2);
    expect(telegram.callsOf("deleteMessage").map((call) => call.payload.message_id)).toEqual([preview.messageId]);
    expect(telegram.notifications(DM.id).map((call) => call.visible?.text)).toEqual([answer]);
    expect(llm.requests.length).toBeGreaterThanOrEqual(2);
    expect(telegram.chatView(DM.id)[0]?.text).toBe(answer);
  });

  it("a gateway SIGKILLed in the middle of the final: the restarted gateway completes it without duplicates", { timeout: 240_000 }, async () => {
    const { telegram, llm, start } = await setUp();
    const answer = longAnswer(6_000);
    llm.enqueue({ text: answer, tokensPerSecond: 300 });
    // The final's part 2 never gets an answer (nor lands): the gateway dies waiting, after
    // part 1 went out, the preview was deleted and part 1 recorded.
    let finals = 0;
    telegram.loseAnswer("sendMessage", { applied: false, hang: true, predicate: (call) => call.payload.parse_mode === "HTML" && ++finals === 2 });
    const gateway = start("gateway");
    const worker = start("worker");
    await gateway.waitForStderr(/telegram long polling started/, 90_000);
    await worker.waitForStderr(/longhaul-ready/, 90_000);

    telegram.pushMessage({ chat: DM, from: ADA, text: "write a lot" });
    await waitUntil(() => finals >= 2, "the final's part 2 sent", 60_000);
    await gateway.kill("SIGKILL");
    const restarted = start("gateway");
    await restarted.waitForStderr(/telegram long polling started/, 90_000);

    await waitUntil(() => {
      const view = telegram.chatView(DM.id);
      return view.length === 2 && squash(view.map((message) => message.text).join("")) === squash(answer);
    }, "the whole answer in two messages", 90_000);
    await sleep(1_500);
    const view = telegram.chatView(DM.id);
    expect(view).toHaveLength(2);
    const sends = telegram.callsOf("sendMessage").filter((call) => call.visible);
    // The silent preview, then parts 1 and 2 once each: the restarted gateway resumed at part 2.
    expect(sends).toHaveLength(3);
    expect(sends.map((call) => call.notified)).toEqual([false, true, true]);
    // The status was deleted after part 1's record; the delivery resumed at part 2 cannot know
    // that the deletion happened and asks once more (Telegram: already gone).
    const deletes = telegram.callsOf("deleteMessage");
    expect(deletes).toHaveLength(2);
    expect(new Set(deletes.map((call) => call.payload.message_id)).size).toBe(1);
  });

  it("a gateway SIGKILLed after the final was recorded but before its status was deleted: the restarted gateway deletes the status and never sends the answer twice (issue 30)", { timeout: 240_000 }, async () => {
    const { telegram, llm, start } = await setUp();
    const answer = Array.from({ length: 60 }, (_, index) => `word${index}`).join(" ");
    llm.enqueue({ text: answer, tokensPerSecond: 20 });
    // The status's deletion never gets an answer (nor happens): the gateway dies waiting, after
    // the answer (one part, the reply's last) went out.
    telegram.loseAnswer("deleteMessage", { applied: false, hang: true });
    const gateway = start("gateway");
    const worker = start("worker");
    await gateway.waitForStderr(/telegram long polling started/, 90_000);
    await worker.waitForStderr(/longhaul-ready/, 90_000);

    telegram.pushMessage({ chat: DM, from: ADA, text: "go" });
    await waitUntil(() => telegram.callsOf("deleteMessage").length === 1, "the status's deletion asked for", 60_000);
    const preview = telegram.chatView(DM.id)[0]!;
    expect(telegram.chatView(DM.id).map((message) => message.text)).toEqual([preview.text, answer]);
    await gateway.kill("SIGKILL");
    const restarted = start("gateway");
    await restarted.waitForStderr(/telegram long polling started/, 90_000);

    await waitUntil(() => telegram.callsOf("deleteMessage").length === 2, "the restarted gateway deleting the status", 90_000);
    await sleep(1_500);
    expect(telegram.chatView(DM.id).map((message) => message.text)).toEqual([answer]);
    expect(telegram.callsOf("deleteMessage").map((call) => call.payload.message_id)).toEqual([preview.messageId, preview.messageId]);
    // The silent status and the answer, once: the answer notified, once.
    expect(telegram.callsOf("sendMessage").filter((call) => call.visible).map((call) => call.notified)).toEqual([false, true]);
    expect(telegram.notifications(DM.id).map((call) => call.visible?.text)).toEqual([answer]);
  });
});
