/**
 * Live previews on Telegram (issue 15), end to end: the real adapter and pipeline, the fake Bot
 * API recording every send, edit and delete, the fake LLM streaming slowly. In each mode the
 * chat must end with exactly the committed answer — split past 4,096 characters, sent as new
 * messages that notify, the silent preview deleted (issue 30) — and no message may ever be sent twice.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { RecordedCall } from "../../fakes/fake-telegram.js";
import { CONNECTION_NAMES, createRedis } from "../../../src/queue/index.js";
import { sessionKeys } from "../../../src/session/keys.js";
import { TAKE } from "../../../src/session/previews.js";
import { runs, traceNamedConnections } from "../../helpers/round-trips.js";
import { longAnswer } from "../../helpers/streaming.js";
import { ADA, closeChecked, DM, sleep, startTelegramE2e, waitUntil, warmUpTokenizer, type TelegramE2e } from "../../helpers/telegram-pipeline.js";

let e2e: TelegramE2e | undefined;
beforeAll(() => warmUpTokenizer());
afterEach(async () => {
  await closeChecked(e2e);
  e2e = undefined;
});

/** Whitespace-insensitive: a split may cut at a space. */
const squash = (text: string) => text.replace(/\s+/g, "");

const bodyText = (call: RecordedCall) => call.visible?.text ?? String(call.payload.text ?? "");

/** Every message the bot sent in the chat was sent once: no two sendMessage calls with the same text. */
function expectNoRepeatedSends(calls: RecordedCall[]): void {
  const texts = calls.filter((call) => call.method === "sendMessage" && call.visible).map(bodyText);
  expect(new Set(texts).size).toBe(texts.length);
}

async function finalView(run: TelegramE2e, expected: string, parts: number) {
  await waitUntil(() => {
    const view = run.telegram.chatView(DM.id);
    return view.length === parts && squash(view.map((message) => message.text).join("")) === squash(expected);
  }, `the chat showing the ${parts}-part answer (now: ${JSON.stringify(run.telegram.chatView(DM.id).map((message) => message.text.slice(0, 40)))})`);
  // Nothing changes afterwards (a late preview edit would).
  await sleep(1_500);
  return run.telegram.chatView(DM.id);
}

describe("telegram streaming: the chat ends with exactly the committed answer", () => {
  for (const mode of ["progress", "partial"] as const) {
    it(`${mode}: a 6,000-character answer replaces its silent preview with 2 notifying messages, nothing twice`, async () => {
      e2e = await startTelegramE2e({ env: { STREAMING: mode } });
      const { telegram, llm } = e2e;
      const answer = longAnswer(6_000);
      llm.enqueue({ text: answer, tokensPerSecond: 600 });
      telegram.pushMessage({ chat: DM, from: ADA, text: "write a lot" });

      const view = await finalView(e2e, answer, 2);
      const sends = telegram.callsOf("sendMessage").filter((call) => call.visible);
      const edits = telegram.callsOf("editMessageText").filter((call) => call.visible);
      // The first message the chat got was the preview, plain text and silent; it is deleted
      // once the answer's first part is out, and every edit went to it.
      const preview = sends[0]!;
      expect(preview.payload.parse_mode).toBeUndefined();
      expect(preview.notified).toBe(false);
      const previewId = (await telegram.waitForCall("deleteMessage")).payload.message_id;
      expect(telegram.callsOf("deleteMessage")).toHaveLength(1);
      expect(edits.every((call) => call.payload.message_id === previewId)).toBe(true);
      expect(view.some((message) => message.messageId === previewId)).toBe(false);
      // The answer: two new HTML messages, each notifying; the phone buzzed for nothing else.
      expect(sends).toHaveLength(3);
      expect(sends.slice(1).every((call) => call.payload.parse_mode === "HTML")).toBe(true);
      expect(telegram.notifications(DM.id)).toEqual(sends.slice(1));
      expect(view.every((message) => message.text.length <= 4096 && !message.edited)).toBe(true);
      expect((telegram.callsOf("deleteMessage")[0]?.at ?? 0)).toBeGreaterThanOrEqual(sends[1]!.at);
      expectNoRepeatedSends(telegram.calls);
      if (mode === "progress") {
        expect(bodyText(sends[0]!)).toMatch(/^💭|^✍️/u);
        expect(edits.every((call) => /^(💭|✍️|🔧)/u.test(bodyText(call)))).toBe(true);
      } else {
        // The answer showed as it was written: some interim edit held a beginning of it.
        const interim = edits.map(bodyText).filter((text) => !/^(💭|✍️)/u.test(text));
        expect(interim.length).toBeGreaterThan(0);
        for (const text of interim) expect(squash(answer).startsWith(squash(text).replace(/…$/u, ""))).toBe(true);
      }
    });
  }

  it("off: no preview at all, the answer is sent as before", async () => {
    e2e = await startTelegramE2e({ env: { STREAMING: "off" } });
    const { telegram, llm } = e2e;
    const answer = longAnswer(6_000);
    llm.enqueue({ text: answer });
    telegram.pushMessage({ chat: DM, from: ADA, text: "write a lot" });
    await finalView(e2e, answer, 2);
    expect(telegram.callsOf("editMessageText")).toHaveLength(0);
    expect(llm.requests[0]?.body.stream).toBeUndefined();
  });

  it("STREAMING_DELAY_MS: a turn quicker than the delay sends its answer alone; a slower one shows its preview only after the delay", async () => {
    const trace = traceNamedConnections([CONNECTION_NAMES.gateway]);
    e2e = await startTelegramE2e({ env: { STREAMING: "progress", STREAMING_DELAY_MS: "1500" } }).catch((error: unknown) => {
      trace.restore();
      throw error;
    });
    const { telegram, llm } = e2e;
    const takes = () => trace.sent(CONNECTION_NAMES.gateway).filter((entry) => runs(entry, TAKE));
    try {
      telegram.pushMessage({ chat: DM, from: ADA, text: "hi" });
      await finalView(e2e, "echo: hi", 1);
      // The quick turn published nothing, so its final asked for no preview: the outbox
      // script found no record and closed it (no preview can appear after the answer).
      expect(takes()).toHaveLength(0);
    } finally {
      trace.restore();
    }
    const redis = createRedis(e2e.config.REDIS_URL!);
    try {
      const records = await redis.hgetall(sessionKeys(e2e.config.REDIS_PREFIX, `tg:${DM.id}`).previews);
      expect(Object.values(records).map((raw) => (JSON.parse(raw) as { s: string }).s)).toEqual(["closed"]);
    } finally {
      redis.disconnect();
    }
    // One message, the answer itself: no status message was sent or edited.
    expect(telegram.callsOf("sendMessage").filter((call) => call.visible).map(bodyText)).toEqual(["echo: hi"]);
    expect(telegram.callsOf("editMessageText")).toHaveLength(0);

    // About 4 s of streaming: the status message appears, but not before the delay.
    const answer = "slow ".repeat(200).trim();
    llm.enqueue({ text: answer, tokensPerSecond: 50 });
    const pushedAt = Date.now();
    telegram.pushMessage({ chat: DM, from: ADA, text: "take your time" });
    await waitUntil(() => telegram.chatView(DM.id).some((message) => message.text === answer), "the slow answer");
    const sends = telegram.callsOf("sendMessage").filter((call) => call.visible && call.at >= pushedAt);
    expect(bodyText(sends[0]!)).toMatch(/^(💭|✍️)/u);
    expect(sends[0]!.at - pushedAt).toBeGreaterThanOrEqual(1_500);
    // The answer replaced the silent status message: sent as a notifying message, the status deleted.
    expect(sends).toHaveLength(2);
    expect(sends.map((call) => call.notified)).toEqual([false, true]);
    await waitUntil(() => telegram.callsOf("deleteMessage").length === 1, "the status message deleted");
    expect(telegram.chatView(DM.id)).toHaveLength(2);
    // The quick answer was one notifying message.
    expect(telegram.notifications(DM.id).map(bodyText)).toEqual(["echo: hi", answer]);
  });

  it("TELEGRAM_STREAMING overrides STREAMING", async () => {
    e2e = await startTelegramE2e({ env: { STREAMING: "partial", TELEGRAM_STREAMING: "off" } });
    const { telegram, llm } = e2e;
    telegram.pushMessage({ chat: DM, from: ADA, text: "hi" });
    await finalView(e2e, "echo: hi", 1);
    expect(telegram.callsOf("editMessageText")).toHaveLength(0);
    expect(llm.requests[0]?.body.stream).toBeUndefined();
  });
  it("LINK_PREVIEWS=on: the streamed final shows its link preview (the status never does)", async () => {
    e2e = await startTelegramE2e({ env: { STREAMING: "progress", LINK_PREVIEWS: "on" } });
    const { telegram, llm } = e2e;
    const answer = `See https://example.com/docs for ${"the details ".repeat(20).trim()}`;
    llm.enqueue({ text: answer, tokensPerSecond: 30 });
    telegram.pushMessage({ chat: DM, from: ADA, text: "a link please" });
    await finalView(e2e, answer, 1);
    const [status, final] = telegram.callsOf("sendMessage").filter((call) => call.visible);
    expect(status?.payload.link_preview_options).toEqual({ is_disabled: true });
    expect(final?.payload.link_preview_options).toBeUndefined();
    expect(final?.notified).toBe(true);
  });
});
