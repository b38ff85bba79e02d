/**
 * A gateway SIGKILLed in the middle of a three-part Telegram reply, with real processes. Every
 * part but the last is recorded once it went out; the last one is recorded by the reply's
 * finish (FINISH_REPLY pops it), so: killed while part 3 is on its way, the restarted gateway
 * sends part 3 and never parts 1–2 again; killed after part 3 reached the chat (its answer
 * lost), the restarted gateway sends part 3 once more and nothing else — the window the docs
 * promise (docs/architecture.md, delivery).
 */
import { afterEach, describe, expect, it } from "vitest";
import { startTelegramApps, type TelegramApps } from "../../helpers/telegram-apps.js";
import { ADA, DM, sleep, textOf, waitUntil } from "../../helpers/telegram-pipeline.js";

let run: TelegramApps | undefined;

afterEach(async () => {
  await run?.close();
  run = undefined;
});

/** Three paragraphs of 3,900 characters: three messages under Telegram's 4,096; the last word marks the last part. */
const ANSWER = ["alpha", "bravo", "delta"].map((word) => `${word} `.repeat(650).trim()).join("\n\n").concat(" omega");
const squash = (text: string) => text.replace(/\s+/g, "");

describe("a gateway killed mid-reply", () => {
  for (const applied of [false, true]) {
    it(`${applied ? "after the last part reached the chat: sends only the last part again" : "while the last part is on its way: resumes at it, never re-sends parts 1–2"}`, { timeout: 240_000 }, async () => {
      run = await startTelegramApps();
      const { telegram, llm, start } = run;
      llm.enqueue({ text: ANSWER });
      // The last part's answer never comes back: the gateway dies waiting for it.
      telegram.loseAnswer("sendMessage", { applied, hang: true, predicate: (call) => textOf(call).endsWith("omega") });
      const gateway = start("gateway");
      const worker = start("worker");
      await gateway.waitForStderr(/telegram long polling started/, 90_000);
      await worker.waitForStderr(/longhaul-ready/, 90_000);

      telegram.pushMessage({ chat: DM, from: ADA, text: "three parts, please" });
      await telegram.waitForCall("sendMessage", (call) => textOf(call).endsWith("omega"), 60_000);
      const before = telegram.callsOf("sendMessage").map(textOf);
      expect(before, JSON.stringify(before.map((text) => text.slice(0, 40) + "…" + text.slice(-20) + " " + text.length))).toHaveLength(3);
      await gateway.kill("SIGKILL");
      const restarted = start("gateway");
      await restarted.waitForStderr(/telegram long polling started/, 90_000);

      const last = before[2]!;
      await waitUntil(() => telegram.delivered(DM.id).filter((call) => textOf(call) === last).length === (applied ? 2 : 1), "the last part from the restarted gateway", 90_000);
      await sleep(1_500);
      const delivered = telegram.delivered(DM.id).map(textOf);
      // Parts 1 and 2 once each (the first gateway's), part 3 from the restarted one (and once
      // before it, when it reached the chat).
      expect(delivered).toEqual(applied ? [before[0], before[1], last, last] : before);
      expect(squash(before.join(""))).toBe(squash(ANSWER));
      expect(telegram.callsOf("sendMessage")).toHaveLength(4);
    });
  }
});
