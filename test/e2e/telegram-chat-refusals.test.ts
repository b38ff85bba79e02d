/**
 * A chat that refuses the bot (issue 30, Deliver 2 and 6), through the whole pipeline and the fake
 * Bot API, which refuses as Telegram does: the bot kicked from the group (403), its right to send
 * taken (400 "not enough rights"), the forum topic closed (TOPIC_CLOSED) or deleted ("message
 * thread not found") while the model was answering. Each ends that reply at once — one
 * sendMessage, no simpler forms, no retries — with one log line, and other chats are answered as
 * before.
 */
import { describe, expect, it } from "vitest";
import {
  ADA, DM, FORUM, GROUP, mentionOf, sleep, waitUntil, useTelegramE2e, type TelegramE2e,
} from "../helpers/telegram-pipeline.js";
import type { FakeTelegram } from "../fakes/fake-telegram.js";

const startE2e = useTelegramE2e();

const TOPIC = 2040;

const cases: Array<{ name: string; chat: typeof GROUP | typeof FORUM; refuse(telegram: FakeTelegram): void; answer: RegExp }> = [
  { name: "the bot was kicked from the group", chat: GROUP, refuse: (telegram) => telegram.chats.removeBot(GROUP.id), answer: /403 Forbidden: bot was kicked from the supergroup chat/ },
  { name: "an admin took the bot's right to send", chat: GROUP, refuse: (telegram) => telegram.chats.restrictBot(GROUP.id), answer: /400 Bad Request: not enough rights to send text messages to the chat/ },
  { name: "the topic was closed", chat: FORUM, refuse: (telegram) => telegram.closedTopics.add(`${FORUM.id}:${TOPIC}`), answer: /400 Bad Request: TOPIC_CLOSED/ },
  { name: "the topic was deleted", chat: FORUM, refuse: (telegram) => telegram.deletedTopics.add(`${FORUM.id}:${TOPIC}`), answer: /400 Bad Request: message thread not found/ },
];

/** Log lines at warn or above that name this chat. */
const loudLinesAbout = (run: TelegramE2e, chatId: number) =>
  run.logs.lines.filter((line) => line.includes(String(chatId)) && (JSON.parse(line) as { level: number }).level >= 40);

describe("telegram: a chat that refuses the bot", () => {
  it.each(cases)("$name while the model answered: the reply ends at once with one log line; other chats are answered", async ({ chat, refuse, answer }) => {
    const e2e = await startE2e({ env: { ALLOWED_TELEGRAM_CHATS: `${GROUP.id},${FORUM.id}`, STREAMING: "off", TYPING_DELAY_MS: "0" } });
    const { telegram, llm } = e2e;
    const gate = llm.hold();
    const text = "@longhaul_test_bot sum it up";
    const inTopic = chat === FORUM ? { message_thread_id: TOPIC, is_topic_message: true } : {};
    telegram.pushMessage({ chat, from: ADA, text, entities: mentionOf(text), ...inTopic });
    await waitUntil(() => llm.requests.length === 1, "the model asked");
    refuse(telegram);
    gate.release();

    const sends = () => telegram.callsOf("sendMessage").filter((call) => String(call.payload.chat_id) === String(chat.id));
    await waitUntil(() => sends().length === 1, "the reply's send");
    await waitUntil(() => loudLinesAbout(e2e!, chat.id).length > 0, "the log line");
    // Another chat is answered after it, through the same delivery.
    telegram.pushMessage({ chat: DM, from: ADA, text: "still there?" });
    await e2e.waitForSent(DM.id, 1);
    await sleep(500);

    expect(sends()).toHaveLength(1);
    expect(telegram.delivered(chat.id)).toEqual([]);
    const lines = loudLinesAbout(e2e, chat.id);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('"msg":"reply-undeliverable"');
    expect(lines[0]).toMatch(answer);
    expect(telegram.delivered(DM.id).map((call) => call.visible?.text)).toEqual(["echo: still there?"]);
  });
});
