/**
 * Tool approval on Telegram end to end: the request goes out with an inline keyboard, a press
 * arrives as a callback_query through the real grammY adapter and the ingress, the query is
 * answered once, and the request message is edited to show the outcome (its keyboard gone).
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { textOf as contentText } from "../fakes/fake-llm.js";
import { FILESYSTEM, assertCallsAnswered, writeConfigFile } from "../helpers/mcp.js";
import { ADA, DM, GRACE, GROUP, SECRETS, mentionOf, sleep, startTelegramE2e, textOf, waitUntil, warmUpTokenizer, type TelegramE2e } from "../helpers/telegram-pipeline.js";

let e2e: TelegramE2e | undefined;

beforeAll(() => warmUpTokenizer());

afterEach(async () => {
  const logs = e2e?.logs.lines.join("") ?? "";
  await e2e?.close();
  e2e = undefined;
  for (const secret of SECRETS) expect(logs).not.toContain(secret);
});

/**
 * Ada (Grace allowed too) asks in GROUP for a write that waits for approval; returns the fake
 * Telegram, the running app, the request's keyboard and the request message, still waiting for a press.
 */
async function groupRequest(adapter?: { pressAnswerHoldMs: number }) {
  const root = mkdtempSync(join(tmpdir(), "lh-tg-approval-"));
  const file = writeConfigFile({ mcp: { servers: { files: { command: process.execPath, args: [FILESYSTEM, root], approval: "always" } } } });
  e2e = await startTelegramE2e({ env: { LONGHAUL_CONFIG_FILE: file, ALLOWED_TELEGRAM_USERS: `${ADA.id},${GRACE.id}`, ALLOWED_TELEGRAM_CHATS: String(GROUP.id) }, adapter });
  const { telegram, llm } = e2e;
  llm.setHandler(() => ({ toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "no.txt"), content: "x" } }] }));
  const text = "@longhaul_test_bot save a note";
  telegram.pushMessage({ chat: GROUP, from: ADA, text, entities: mentionOf(text) });
  const [request] = await e2e.waitForSent(GROUP.id, 1);
  const keyboard = (request?.payload.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> }).inline_keyboard;
  const [sent] = [...telegram.botMessages.values()].filter((message) => message.chat.id === GROUP.id);
  return { app: e2e, telegram, keyboard, sent: sent! };
}

describe("telegram: tool approval with buttons", () => {
  it("asks with an inline keyboard, takes the press, edits the request to the outcome, and answers", async () => {
    const root = mkdtempSync(join(tmpdir(), "lh-tg-approval-"));
    const file = writeConfigFile({ mcp: { servers: { files: { command: process.execPath, args: [FILESYSTEM, root], approval: "always" } } } });
    e2e = await startTelegramE2e({ env: { LONGHAUL_CONFIG_FILE: file } });
    const { telegram, llm } = e2e;
    llm.setHandler((request) => request.body.messages.at(-1)?.role === "tool"
      ? { text: `wrote it: ${contentText(request.body.messages.at(-1)?.content)}` }
      : { toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "tg.txt"), content: "from telegram" } }] });

    telegram.pushMessage({ chat: DM, from: ADA, text: "save a note" });
    const [request] = await e2e.waitForSent(DM.id, 1);
    const keyboard = (request?.payload.reply_markup as { inline_keyboard: Array<Array<{ text: string; callback_data: string }>> }).inline_keyboard;
    expect(keyboard[0]?.map((button) => button.text)).toEqual(["Approve", "Deny"]);
    expect(textOf(request)).toContain("write_file");
    const [sent] = [...telegram.botMessages.values()].filter((message) => message.chat.id === DM.id);

    telegram.pushCallbackQuery(ADA, DM.id, sent!.message_id, keyboard[0]![0]!.callback_data);
    const answers = await e2e.waitForSent(DM.id, 2);
    expect(textOf(answers[1])).toBe("wrote it: Successfully wrote to " + join(root, "tg.txt"));
    expect(readFileSync(join(root, "tg.txt"), "utf8")).toBe("from telegram");

    await waitUntil(() => telegram.callsOf("editMessageText").length === 1, "the request to be edited");
    const edit = telegram.callsOf("editMessageText")[0]!;
    expect(edit.payload).toMatchObject({ chat_id: String(DM.id), message_id: sent!.message_id, reply_markup: { inline_keyboard: [] } });
    const edited = telegram.botMessages.get(`${DM.id}:${sent!.message_id}`)!;
    expect(edited.text).toBe("✅ Approved by Ada Lovelace: ran files__write_file.");
    expect("reply_markup" in edited).toBe(false);
    // The press was answered exactly once (the fake refuses a second answer).
    expect(telegram.callsOf("answerCallbackQuery")).toHaveLength(1);
    for (const sentRequest of llm.requests) assertCallsAnswered(sentRequest);
  });

  it("a press on a request answered before /new keeps its outcome: the presser alone is told, the new conversation never sees it", async () => {
    const root = mkdtempSync(join(tmpdir(), "lh-tg-approval-"));
    const file = writeConfigFile({ mcp: { servers: { files: { command: process.execPath, args: [FILESYSTEM, root], approval: "always" } } } });
    // A hold of 1 ms: the stale press must be refused at the gateway, at once, not by a turn after it.
    e2e = await startTelegramE2e({ env: { LONGHAUL_CONFIG_FILE: file }, adapter: { pressAnswerHoldMs: 1 } });
    const { telegram, llm } = e2e;
    llm.setHandler((request) => request.body.messages.at(-1)?.role === "tool"
      ? { text: "wrote it" }
      : { toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "old.txt"), content: "before /new" } }] });
    telegram.pushMessage({ chat: DM, from: ADA, text: "save a note" });
    const [request] = await e2e.waitForSent(DM.id, 1);
    const approve = (request?.payload.reply_markup as { inline_keyboard: Array<Array<{ callback_data: string }>> }).inline_keyboard[0]![0]!.callback_data;
    const [sent] = [...telegram.botMessages.values()].filter((message) => message.chat.id === DM.id);
    telegram.pushCallbackQuery(ADA, DM.id, sent!.message_id, approve);
    await e2e.waitForSent(DM.id, 2);
    await waitUntil(() => telegram.callsOf("editMessageText").length === 1, "the request to show its outcome");
    const outcome = "✅ Approved by Ada Lovelace: ran files__write_file.";
    expect(telegram.botMessages.get(`${DM.id}:${sent!.message_id}`)?.text).toBe(outcome);

    telegram.pushMessage({ chat: DM, from: ADA, text: "/new" });
    const afterNew = await e2e.waitForSent(DM.id, 3);
    expect(textOf(afterNew[2])).toBe("Started a new conversation. The previous one is archived.");
    const llmRequests = llm.requests.length;

    // A press on the old request (a client that still shows its buttons, a stale notification).
    telegram.pushCallbackQuery(ADA, DM.id, sent!.message_id, approve);
    await waitUntil(() => telegram.callsOf("answerCallbackQuery").length === 2, "the stale press to be answered");
    expect(telegram.callsOf("answerCallbackQuery")[1]?.payload).toMatchObject({ show_alert: true, text: "This request was already answered." });
    await sleep(300);
    // The request still shows who approved it, nothing went to the chat, no model ran.
    expect(telegram.callsOf("editMessageText")).toHaveLength(1);
    expect(telegram.botMessages.get(`${DM.id}:${sent!.message_id}`)?.text).toBe(outcome);
    expect(e2e.sentTo(DM.id)).toHaveLength(3);
    expect(llm.requests).toHaveLength(llmRequests);

    // The new conversation knows nothing of the press (nor of the old one).
    llm.setHandler(() => ({ text: "fresh" }));
    telegram.pushMessage({ chat: DM, from: ADA, text: "hello again" });
    await e2e.waitForSent(DM.id, 4);
    const fresh = JSON.stringify(llm.requests.at(-1)?.body.messages);
    expect(fresh).not.toContain("write_file");
    expect(fresh).not.toContain("button");
  });

  it("answers the wrong presser with an alert on their press, not a message to the group; the request keeps waiting", async () => {
    const { app, telegram, keyboard, sent } = await groupRequest();

    telegram.pushCallbackQuery(GRACE, GROUP.id, sent.message_id, keyboard[0]![0]!.callback_data);
    await waitUntil(() => telegram.callsOf("answerCallbackQuery").length === 1, "the press to be answered");
    expect(telegram.callsOf("answerCallbackQuery")[0]?.payload).toMatchObject({ show_alert: true, text: "Only Ada Lovelace, who asked, or an admin can answer this request." });
    await sleep(300);
    // Nothing public: the group got only the request, which still has its buttons.
    expect(app.sentTo(GROUP.id)).toHaveLength(1);
    expect(telegram.callsOf("editMessageText")).toHaveLength(0);
  });

  it("answers the wrong presser with an alert at once, even when no turn could answer within the press's hold", async () => {
    // A hold of 1 ms: a busy worker's answer always comes after the press was answered plainly.
    const { app, telegram, keyboard, sent } = await groupRequest({ pressAnswerHoldMs: 1 });

    telegram.pushCallbackQuery(GRACE, GROUP.id, sent.message_id, keyboard[0]![1]!.callback_data);
    await waitUntil(() => telegram.callsOf("answerCallbackQuery").length === 1, "the press to be answered");
    expect(telegram.callsOf("answerCallbackQuery")[0]?.payload).toMatchObject({ show_alert: true, text: "Only Ada Lovelace, who asked, or an admin can answer this request." });
    await sleep(500);
    expect(telegram.callsOf("answerCallbackQuery")).toHaveLength(1);
    expect(app.sentTo(GROUP.id)).toHaveLength(1);
    expect(telegram.callsOf("editMessageText")).toHaveLength(0);
  });
});
