/**
 * Messages sent as a chat (issue 29 item 8): in a Telegram group, a linked channel's posts and an
 * anonymous admin's messages carry `sender_chat` and a placeholder `from` (Channel_Bot,
 * GroupAnonymousBot) that every such message shares. They must be counted against the sending
 * chat's own identity, with the same limits as a person: not exempt as a "bot", not pooled under
 * the placeholder with every other channel, and not charged to the people of the group.
 * The real grammY adapter ↔ the fake Bot API, the real pipeline on Redis, the fake LLM.
 */
import { describe, expect, it } from "vitest";
import type { Message } from "grammy/types";
import {
  ADA, GROUP, mentionOf, sleep, textOf, waitUntil, useTelegramE2e, type TelegramE2e,
} from "../helpers/telegram-pipeline.js";

/** What Telegram puts in `from` for every channel post forwarded into a linked group. */
const CHANNEL_BOT = { id: 136817688, is_bot: true as const, first_name: "Channel", username: "Channel_Bot" };
/** What Telegram puts in `from` for an anonymous admin's message. */
const ANONYMOUS_ADMIN = { id: 1087968824, is_bot: true as const, first_name: "Group", username: "GroupAnonymousBot" };
const NEWS = { id: -1003000000001, type: "channel" as const, title: "Compiler News" };
const DIGEST = { id: -1003000000002, type: "channel" as const, title: "Weekly Digest" };

const startE2e = useTelegramE2e();

const asked = (text: string) => `@longhaul_test_bot ${text}`;

function post(run: TelegramE2e, sender: { from: Message["from"]; sender_chat: Message["sender_chat"] }, text: string) {
  const full = asked(text);
  return run.telegram.pushMessage({ chat: GROUP, ...sender, text: full, entities: mentionOf(full) } as Partial<Message> & { chat: Message["chat"] });
}

const rateNotices = (run: TelegramE2e) => run.sentTo(GROUP.id).filter((call) => textOf(call).includes("faster than I can keep up"));

describe("telegram: a chat speaking in a group has its own identity and a person's limits", () => {
  it("a channel is limited like a user, apart from other channels, anonymous admins and the group's people", async () => {
    const e2e = await startE2e({ env: { ALLOWED_TELEGRAM_CHATS: String(GROUP.id), RATE_LIMIT_PER_MINUTE: "2" } });
    const run = e2e;
    // Keep all posts inside one rate-limit minute (the counter is per calendar minute).
    const second = Date.now() % 60_000;
    if (second > 45_000) await sleep(60_000 - second + 200);

    const news = { from: CHANNEL_BOT, sender_chat: NEWS };
    post(run, news, "first headline");
    await run.waitForSent(GROUP.id, 1);
    post(run, news, "second headline");
    await run.waitForSent(GROUP.id, 2);
    // The channel's third message in the minute gets the notice, like a person's would.
    post(run, news, "third headline");
    await waitUntil(() => rateNotices(run).length === 1, "the channel's rate notice");

    // Another channel posting through the same Channel_Bot placeholder is not limited by it;
    // nor is an anonymous admin, nor a person of the group. (One at a time: messages that arrive
    // during a turn are answered together.)
    post(run, { from: CHANNEL_BOT, sender_chat: DIGEST }, "digest is out");
    await run.waitForSent(GROUP.id, 4);
    post(run, { from: ANONYMOUS_ADMIN, sender_chat: GROUP }, "pin the rules please");
    await run.waitForSent(GROUP.id, 5);
    const ada = asked("what did the news say?");
    run.telegram.pushMessage({ chat: GROUP, from: ADA, text: ada, entities: mentionOf(ada) });
    await run.waitForSent(GROUP.id, 6);
    await sleep(300);

    const texts = run.sentTo(GROUP.id).map(textOf);
    expect(texts.filter((text) => text.startsWith("echo: "))).toHaveLength(5);
    expect(rateNotices(run)).toHaveLength(1);
    // Each speaker is named by its own chat, never by the placeholder account.
    expect(texts).toContain("echo: Compiler News: first headline");
    expect(texts).toContain("echo: Weekly Digest: digest is out");
    expect(texts).toContain("echo: Compiler nerds: pin the rules please");
    expect(texts.some((text) => text.includes("Channel_Bot") || text.includes("GroupAnonymousBot"))).toBe(false);
    // The limited message never reached the model.
    const modelSaw = JSON.stringify(run.llm.requests.map((request) => request.body.messages));
    expect(modelSaw).not.toContain("third headline");

    // The rate key is the channel's id: a fourth post is dropped silently (one notice a minute).
    post(run, news, "fourth headline");
    await sleep(500);
    expect(rateNotices(run)).toHaveLength(1);
    expect(run.sentTo(GROUP.id)).toHaveLength(6);
  });
});
