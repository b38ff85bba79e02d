/**
 * The Telegram bot end to end on a replicated Redis topology, shared by
 * topology/cluster-telegram.test.ts and topology/sentinel-telegram.test.ts: the real grammY
 * adapter against the fake Bot API, every connection — BullMQ's delayed reminder job and the
 * approval's button press included — on the topology `start` sets up, each message acknowledged
 * after WAIT 1. Each test runs a fresh pipeline on it: a conversation with a reminder, a tool
 * approval, a long session that compacts.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { textOf as contentText } from "../fakes/fake-llm.js";
import { isSummarizerRequest } from "./agent-fixtures.js";
import { FILESYSTEM, writeConfigFile } from "./mcp.js";
import { remindMePlan, schedulingModel } from "./schedule.js";
import { longAnswer } from "./streaming.js";
import { ADA, DM, closeChecked, sleep, startTelegramE2e, textOf, waitUntil, warmUpTokenizer, type TelegramE2e } from "./telegram-pipeline.js";

export interface TelegramTopology {
  /** Names the topology in the approval's note and its temporary directory ("cluster", "sentinel"). */
  name: string;
  /** Starts the servers; → the settings every process gets, and how to stop them. */
  start(): Promise<{ env: Record<string, string>; dispose(): Promise<void> }>;
}

export function describeTelegramOn(title: string, topology: TelegramTopology): void {
  describe(title, () => {
    let servers: Awaited<ReturnType<TelegramTopology["start"]>> | undefined;
    let e2e: TelegramE2e | undefined;
    const on = (env: Record<string, string> = {}) => ({ ...servers!.env, ...env });

    beforeAll(async () => {
      warmUpTokenizer();
      servers = await topology.start();
    }, 120_000);
    afterEach(async () => {
      await closeChecked(e2e);
      e2e = undefined;
    });
    afterAll(async () => {
      await servers?.dispose();
    });

    it("answers a conversation in order, then a reminder set in it arrives once", async () => {
      e2e = await startTelegramE2e({ env: on() });
      e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "hello there" });
      const [first] = await e2e.waitForSent(DM.id, 1);
      expect(textOf(first)).toBe("echo: hello there");

      e2e.llm.setHandler(schedulingModel(remindMePlan));
      const ask = e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "remind me in 2s to stretch your legs" });
      const [, confirmation] = await e2e.waitForSent(DM.id, 2);
      expect(textOf(confirmation)).toMatch(/^Done\. Scheduled r1, a reminder: “stretch your legs”/);
      const [, , reminder] = await e2e.waitForSent(DM.id, 3);
      expect(textOf(reminder)).toBe("⏰ Reminder: stretch your legs");
      await sleep(2_500);
      expect(e2e.sentTo(DM.id)).toHaveLength(3);
      // Every update was confirmed to Telegram: the ingress had a replica's word for each.
      await waitUntil(() => e2e!.telegram.confirmedOffset > ask.update_id, "the last update to be confirmed");
    }, 120_000);

    it("a tool approval: the button press goes through the ingress and the tool runs once", async () => {
      const root = mkdtempSync(join(tmpdir(), `lh-${topology.name}-approval-`));
      const file = writeConfigFile({ mcp: { servers: { files: { command: process.execPath, args: [FILESYSTEM, root], approval: "always" } } } });
      e2e = await startTelegramE2e({ env: on({ LONGHAUL_CONFIG_FILE: file }) });
      const { telegram, llm } = e2e;
      llm.setHandler((request) => request.body.messages.at(-1)?.role === "tool"
        ? { text: `wrote it: ${contentText(request.body.messages.at(-1)?.content)}` }
        : { toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "note.txt"), content: `on ${topology.name}` } }] });

      telegram.pushMessage({ chat: DM, from: ADA, text: "save a note" });
      const [request] = await e2e.waitForSent(DM.id, 1);
      const keyboard = (request?.payload.reply_markup as { inline_keyboard: Array<Array<{ text: string; callback_data: string }>> }).inline_keyboard;
      const [sent] = [...telegram.botMessages.values()].filter((message) => message.chat.id === DM.id);
      telegram.pushCallbackQuery(ADA, DM.id, sent!.message_id, keyboard[0]![0]!.callback_data);
      const answers = await e2e.waitForSent(DM.id, 2);
      expect(textOf(answers[1])).toBe(`wrote it: Successfully wrote to ${join(root, "note.txt")}`);
      expect(readFileSync(join(root, "note.txt"), "utf8")).toBe(`on ${topology.name}`);
      await waitUntil(() => telegram.callsOf("editMessageText").length === 1, "the request to be edited");
      expect(telegram.callsOf("answerCallbackQuery")).toHaveLength(1);
    }, 120_000);

    it("live previews (pub/sub from the worker to the gateway): the silent preview is edited as the answer streams, then replaced by it", async () => {
      e2e = await startTelegramE2e({ env: on({ STREAMING: "partial" }) });
      const { telegram, llm } = e2e;
      const answer = longAnswer(1_500);
      llm.enqueue({ text: answer, tokensPerSecond: 150 });
      telegram.pushMessage({ chat: DM, from: ADA, text: "write a page" });
      const preview = await telegram.waitForCall("sendMessage", () => true, 60_000);
      expect(preview.notified).toBe(false);
      await waitUntil(() => telegram.callsOf("deleteMessage").length === 1, "the preview to be replaced by the answer", 60_000);
      const edits = telegram.callsOf("editMessageText").filter((call) => call.visible && call.payload.message_id === telegram.callsOf("deleteMessage")[0]!.payload.message_id);
      expect(edits.length).toBeGreaterThan(0);
      await waitUntil(() => telegram.chatView(DM.id).map((message) => message.text).join("").replace(/\s+/g, "") === answer.replace(/\s+/g, ""), "the chat to show the answer", 30_000);
    }, 120_000);

    it("a long session compacts (the summarizer called) and the chat goes on", async () => {
      e2e = await startTelegramE2e({ env: on({ LLM_CONTEXT_WINDOW: "8000" }) });
      e2e.llm.route(isSummarizerRequest, { text: "## Goal\nA long chat about the sea." });
      let sent = 0;
      for (let turn = 0; turn < 40 && !e2e.llm.requests.some(isSummarizerRequest); turn++) {
        e2e.telegram.pushMessage({ chat: DM, from: ADA, text: `chapter ${turn}: ${"the waves, the wind and the salt on the deck ".repeat(40)}` });
        sent = (await e2e.waitForSent(DM.id, sent + 1, 60_000)).length;
      }
      expect(e2e.llm.requests.some(isSummarizerRequest)).toBe(true);
      e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "and now?" });
      await waitUntil(() => e2e!.sentTo(DM.id).some((call) => textOf(call) === "echo: and now?"), "the answer after the compaction", 60_000);
    }, 300_000);
  });
}
