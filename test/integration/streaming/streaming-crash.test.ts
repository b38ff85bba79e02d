/**
 * Live previews across crashes (issue 15), with real processes: a worker SIGKILLed while it
 * streams (another worker retries the turn and continues the same preview, which becomes the
 * final: no second message), and a gateway SIGKILLed in the middle of the final (the restarted
 * gateway finishes it from the durable record: it edits the preview again, never sends it anew).
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
  for (const fault of ["SIGKILL", "SIGSTOP"] as const) it(`a worker ${fault === "SIGKILL" ? "killed" : "paused past its lease"} mid-stream: another worker finishes, the same preview becomes the final, no second message`, { timeout: 240_000 }, async () => {
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

    await waitUntil(() => telegram.chatView(DM.id)[0]?.text === answer, "the final in the preview", 90_000);
    // The paused worker wakes up mid-stream: it is superseded, and nothing it still sends shows.
    if (fault === "SIGSTOP") first.signal("SIGCONT");
    await sleep(3_000);
    const view = telegram.chatView(DM.id);
    expect(view).toHaveLength(1);
    expect(view[0]?.messageId).toBe(preview.messageId);
    expect(telegram.callsOf("sendMessage").filter((call) => call.visible)).toHaveLength(1);
    expect(llm.requests.length).toBeGreaterThanOrEqual(2);
    expect(telegram.chatView(DM.id)[0]?.text).toBe(answer);
  });

  it("a gateway SIGKILLed in the middle of the final: the restarted gateway completes it without duplicates", { timeout: 240_000 }, async () => {
    const { telegram, llm, start } = await setUp();
    const answer = longAnswer(6_000);
    llm.enqueue({ text: answer, tokensPerSecond: 300 });
    // The final's edit lands, but its answer never comes back: the gateway dies waiting.
    telegram.loseAnswer("editMessageText", { applied: true, hang: true, predicate: (call) => call.payload.parse_mode === "HTML" });
    const gateway = start("gateway");
    const worker = start("worker");
    await gateway.waitForStderr(/telegram long polling started/, 90_000);
    await worker.waitForStderr(/longhaul-ready/, 90_000);

    telegram.pushMessage({ chat: DM, from: ADA, text: "write a lot" });
    await telegram.waitForCall("editMessageText", (call) => call.payload.parse_mode === "HTML", 60_000);
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
    // The preview and part 2: part 1 went into the preview, twice ("not modified" the second time).
    expect(sends).toHaveLength(2);
    expect(telegram.callsOf("editMessageText").filter((call) => call.payload.parse_mode === "HTML")).toHaveLength(2);
    expect(telegram.callsOf("deleteMessage")).toHaveLength(0);
  });
});
