/**
 * Telegram end to end (issue 6), continued: webhook mode, pairing, media, the typing indicator,
 * and the app as a child process keeping its secrets. Same setup as telegram.test.ts: the real
 * grammY adapter ↔ the fake Bot API, the real pipeline on Redis, the fake LLM.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Update } from "grammy/types";
import { startFakeLlm, textOf as contentText, withoutStamp, type FakeLlm } from "../fakes/fake-llm.js";
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { TEST_TELEGRAM_TOKEN, testEnv } from "../helpers/config.js";
import {
  closeChecked, ADA, BOT_FROM, DM, GROUP, OTHER_GROUP, SECRETS, sleep, startTelegramE2e, textOf, waitUntil, warmUpTokenizer, type TelegramE2e,
} from "../helpers/telegram-pipeline.js";

const EVE = { id: 900100, is_bot: false as const, first_name: "Eve" };
const EVE_DM = { id: EVE.id, type: "private" as const, first_name: "Eve" };
const SECRET = "hook-secret_42";

let e2e: TelegramE2e | undefined;
let app: AppProcess | undefined;
let childTelegram: FakeTelegram | undefined;
let childLlm: FakeLlm | undefined;

beforeAll(() => warmUpTokenizer());

afterEach(async () => {
  await closeChecked(e2e);
  e2e = undefined;
  await app?.kill("SIGKILL");
  app = undefined;
  await childTelegram?.close();
  childTelegram = undefined;
  await childLlm?.close();
  childLlm = undefined;
});

const userTurns = (e2eRun: TelegramE2e) =>
  e2eRun.llm.requests.map((request) => request.body.messages.filter((message) => message.role === "user").map((message) => withoutStamp(contentText(message.content))));

const dmUpdate = (updateId: number, messageId: number, text: string): Update => ({
  update_id: updateId,
  message: { message_id: messageId, date: Math.floor(Date.now() / 1000), chat: DM, from: ADA, text },
});

describe("telegram end to end: webhook, access, media, typing, secrets", () => {
  it("webhook mode: rejects a wrong or missing secret, answers the right one once", async () => {
    e2e = await startTelegramE2e({ webhookSecret: SECRET });
    const { telegram, llm } = e2e;
    const url = e2e.webhookUrl ?? "";
    expect(telegram.callsOf("setWebhook")[0]?.payload).toMatchObject({ url, secret_token: SECRET });

    expect((await telegram.postWebhook(url, dmUpdate(1, 10, "let me in"), "guess")).status).toBe(401);
    expect((await telegram.postWebhook(url, dmUpdate(2, 11, "let me in"))).status).toBe(401);

    const accepted = await telegram.postWebhook(url, dmUpdate(3, 12, "hello from a webhook"), SECRET);
    expect(accepted.status).toBe(200);
    const [answer] = await e2e.waitForSent(DM.id, 1);
    expect(answer?.payload).toMatchObject({ text: "echo: hello from a webhook", reply_parameters: { message_id: 12 } });
    // Telegram re-delivers when it misses an acknowledgement: still one answer.
    expect((await telegram.postWebhook(url, dmUpdate(3, 12, "hello from a webhook"), SECRET)).status).toBe(200);
    expect(e2e.logs.lines.filter((line) => line.includes('"message-duplicate"'))).toHaveLength(1);
    await sleep(500);
    expect(userTurns(e2e)).toEqual([["hello from a webhook"]]);
    expect(telegram.callsOf("sendMessage")).toHaveLength(1);
    expect(telegram.callsOf("getUpdates")).toHaveLength(0);
    expect(llm.requests).toHaveLength(1);
  });

  it("gives an unknown user a pairing code and answers them once the operator approves it", async () => {
    e2e = await startTelegramE2e({ env: { ALLOWED_TELEGRAM_USERS: undefined } });
    const { telegram, llm } = e2e;
    const first = telegram.pushMessage({ chat: EVE_DM, from: EVE, text: "hi, who are you?" });
    const [notice] = await e2e.waitForSent(EVE.id, 1);
    expect(notice?.payload.reply_parameters).toMatchObject({ message_id: first.message?.message_id });
    const code = /pairing code is ([A-Z0-9]{8})\b/.exec(textOf(notice))?.[1];
    expect(code, textOf(notice)).toBeDefined();
    expect(textOf(notice)).toContain(`npm run pairing -- approve ${code}`);

    // Until approved, the stranger reaches nobody (and is not reminded at every message).
    telegram.pushMessage({ chat: EVE_DM, from: EVE, text: "hello??" });
    await waitUntil(() => e2e?.logs.lines.filter((line) => line.includes('"message-denied"')).length === 2, "the second denial");
    await sleep(300);
    expect(llm.requests).toHaveLength(0);
    expect(e2e.sentTo(EVE.id)).toHaveLength(1);

    const cli = spawnApp(e2e.env, { entry: "src/cli/pairing.ts", args: ["approve", code ?? ""] });
    expect(await cli.exited()).toBe(0);
    expect(cli.stdout()).toContain(`Approved Eve (telegram user ${EVE.id})`);

    telegram.pushMessage({ chat: EVE_DM, from: EVE, text: "can we talk now?" });
    const sent = await e2e.waitForSent(EVE.id, 2);
    expect(textOf(sent[1])).toBe("echo: can we talk now?");
    // The messages sent before the approval never reached the model.
    expect(userTurns(e2e)).toEqual([["can we talk now?"]]);
  });

  it("answers nothing directly where it does not serve: /start and a sticker in a group not enabled; a stranger's /start gets the pairing code", async () => {
    e2e = await startTelegramE2e({ env: { ALLOWED_TELEGRAM_CHATS: String(GROUP.id) } });
    const { telegram } = e2e;
    const start = { text: "/start", entities: [{ type: "bot_command" as const, offset: 0, length: 6 }] };
    const sticker = { sticker: { file_id: "s9", file_unique_id: "u9", type: "regular" as const, width: 9, height: 9, is_animated: false, is_video: false } };
    const botMessage = { message_id: 1, date: Math.floor(Date.now() / 1000), chat: OTHER_GROUP, from: BOT_FROM, text: "an old answer", reply_to_message: undefined };
    telegram.pushMessage({ chat: OTHER_GROUP, from: ADA, ...start });
    telegram.pushMessage({ chat: OTHER_GROUP, from: ADA, ...sticker, reply_to_message: botMessage });
    // The same in the enabled group: the greeting and the notice go out (and show the two were handled).
    telegram.pushMessage({ chat: GROUP, from: ADA, ...start });
    telegram.pushMessage({ chat: GROUP, from: ADA, ...sticker, reply_to_message: { ...botMessage, chat: GROUP } });
    const inGroup = await e2e.waitForSent(GROUP.id, 2);
    expect(textOf(inGroup[0])).toContain(`@${BOT_FROM.username}`);
    expect(textOf(inGroup[1])).toMatch(/can't open this sticker/);
    // A stranger's /start in a private chat: the pairing code, not the greeting.
    telegram.pushMessage({ chat: EVE_DM, from: EVE, ...start });
    const [pairing] = await e2e.waitForSent(EVE.id, 1);
    expect(textOf(pairing)).toMatch(/pairing code is [A-Z0-9]{8}\b/);
    await sleep(400);
    expect(e2e.sentTo(OTHER_GROUP.id)).toEqual([]);
    expect(e2e.sentTo(EVE.id)).toHaveLength(1);
    expect(e2e.llm.requests).toHaveLength(0);
  });

  it("answers media it cannot open with a polite note, and reads the caption of media it can", async () => {
    e2e = await startTelegramE2e({ env: { LLM_VISION: "off" } });
    const { telegram, llm } = e2e;
    const video = telegram.pushMessage({ chat: DM, from: ADA, video: { file_id: "m1", file_unique_id: "u1", duration: 3, width: 90, height: 67 } });
    telegram.pushMessage({ chat: DM, from: ADA, sticker: { file_id: "s1", file_unique_id: "u2", type: "regular", width: 9, height: 9, is_animated: false, is_video: false } });
    const [videoNote, stickerNote] = await e2e.waitForSent(DM.id, 2);
    expect(textOf(videoNote)).toMatch(/can't open this video/);
    expect(videoNote?.payload.reply_parameters).toMatchObject({ message_id: video.message?.message_id });
    expect(textOf(stickerNote)).toMatch(/can't open this sticker/);
    await sleep(400);
    expect(llm.requests).toHaveLength(0);

    telegram.addFile("p2", Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10]), "photos/p2.jpg");
    telegram.pushMessage({ chat: DM, from: ADA, photo: [{ file_id: "p2", file_unique_id: "u3", width: 90, height: 67, file_size: 6 }], caption: "what is this?" });
    const sent = await e2e.waitForSent(DM.id, 3);
    expect(textOf(sent[2])).toBe("echo: [photo photo-u3.jpg, 6 B, 90×67]\nwhat is this?");
    expect(userTurns(e2e)).toEqual([["[photo photo-u3.jpg, 6 B, 90×67]\nwhat is this?"]]);
  });

  it("shows typing while the turn runs and stops once the reply is out", async () => {
    e2e = await startTelegramE2e({ adapter: { typingIntervalMs: 100 } });
    const { telegram, llm } = e2e;
    const gate = llm.hold();
    telegram.pushMessage({ chat: DM, from: ADA, text: "think hard" });
    await llm.waitForRequests(1, 30_000);
    // Refreshed while the model is held.
    await waitUntil(() => telegram.callsOf("sendChatAction").length >= 3, "three typing calls");
    for (const call of telegram.callsOf("sendChatAction")) expect(call.payload).toEqual({ chat_id: String(DM.id), action: "typing" });
    expect(telegram.callsOf("sendMessage")).toHaveLength(0);

    gate.release();
    const [answer] = await e2e.waitForSent(DM.id, 1);
    expect(textOf(answer)).toBe("echo: think hard");
    await sleep(150); // a typing call already on the wire may still land
    const settled = telegram.callsOf("sendChatAction").length;
    await sleep(600);
    expect(telegram.callsOf("sendChatAction")).toHaveLength(settled);
  });

  it("runs as a child process: answers a DM, never prints the token or the LLM key, exits 0 on SIGTERM", async () => {
    childTelegram = await FakeTelegram.start({ token: TEST_TELEGRAM_TOKEN });
    childLlm = await startFakeLlm();
    const telegram = childTelegram;
    app = spawnApp(testEnv({
      LLM_BASE_URL: childLlm.url,
      TELEGRAM_BOT_TOKEN: TEST_TELEGRAM_TOKEN,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      ALLOWED_TELEGRAM_USERS: String(ADA.id),
      LOG_LEVEL: "trace",
      CONSOLE: "off",
    }));
    await app.waitForStderr(/longhaul-ready/);
    await telegram.waitForCall("getUpdates", () => true, 30_000);

    // Error paths are where a token-bearing URL or payload would slip into a log line.
    telegram.failNext("sendChatAction", { error_code: 403, description: "Forbidden: bot was blocked by the user" });
    telegram.failNext("sendMessage", { error_code: 400, description: "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0" });
    telegram.pushMessage({ chat: DM, from: ADA, text: "hello from the outside" });
    await telegram.waitForCall("sendMessage", (call) => call.payload.text === "echo: hello from the outside" && call.payload.parse_mode === undefined, 30_000);
    telegram.pushMessage({ chat: EVE_DM, from: EVE, text: "let me in" });
    await telegram.waitForCall("sendMessage", (call) => String(call.payload.text).includes("pairing code"), 30_000);

    expect(await app.kill("SIGTERM")).toBe(0);
    const output = app.stdout() + app.stderr();
    expect(app.stderr()).toContain("telegram long polling started");
    expect(app.stderr()).toContain("telegram refused the formatted text; sending it simpler");
    for (const secret of SECRETS) expect(output).not.toContain(secret);
  });
});
