/**
 * Telegram end to end (issue 6): the real grammY adapter ↔ the fake Bot API over HTTP, the real
 * ingress, queue and worker on Redis, and the fake LLM. Conversations and replies; access,
 * webhook, typing and secrets are in telegram-access.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { Update } from "grammy/types";
import { renderMarkdown } from "../../src/adapters/telegram/render.js";
import { textOf as contentText, withoutStamp } from "../fakes/fake-llm.js";
import { parseTelegramHtml } from "../fakes/fake-telegram.js";
import {
  ADA, BOT_FROM, DM, FORUM, GRACE, GROUP, OTHER_GROUP, mentionOf, sleep, textOf, waitUntil, useTelegramE2e, type TelegramE2e,
} from "../helpers/telegram-pipeline.js";

const startE2e = useTelegramE2e();

/** How many log lines contain all of `parts`. */
const logged = (run: TelegramE2e | undefined, ...parts: string[]) =>
  run?.logs.lines.filter((line) => parts.every((part) => line.includes(part))).length ?? 0;

const conversation = (messages: ReadonlyArray<{ role: string; content?: unknown }>) =>
  messages.filter((message) => message.role !== "system").map((message) => `${message.role}: ${message.role === "user" ? withoutStamp(contentText(message.content)) : contentText(message.content)}`);

describe("telegram end to end: conversations", () => {
  it("answers a DM conversation in order, with the first exchange in the second request", async () => {
    const e2e = await startE2e();
    const { telegram, llm } = e2e;
    const first = telegram.pushMessage({ chat: DM, from: ADA, text: "hello there" });
    const [answer] = await e2e.waitForSent(DM.id, 1);
    expect(answer?.payload).toMatchObject({
      chat_id: String(DM.id),
      text: "echo: hello there",
      parse_mode: "HTML",
      reply_parameters: { message_id: first.message?.message_id, allow_sending_without_reply: true },
    });

    const second = telegram.pushMessage({ chat: DM, from: ADA, text: "and how are you?" });
    const sent = await e2e.waitForSent(DM.id, 2);
    expect(sent.map(textOf)).toEqual(["echo: hello there", "echo: and how are you?"]);
    expect(sent[1]?.payload.reply_parameters).toEqual({ message_id: second.message?.message_id, allow_sending_without_reply: true });

    expect(llm.requests).toHaveLength(2);
    expect(conversation(llm.requests[1]?.body.messages ?? [])).toEqual([
      "user: hello there",
      "assistant: echo: hello there",
      "user: and how are you?",
    ]);
    await sleep(200);
    expect(telegram.callsOf("sendMessage")).toHaveLength(2);
  });

  it("in an allowed group answers a mention and a reply to the bot, ignores the rest, and names the speaker", async () => {
    const e2e = await startE2e({ env: { ALLOWED_TELEGRAM_CHATS: String(GROUP.id) } });
    const { telegram, llm } = e2e;
    telegram.pushMessage({ chat: GROUP, from: GRACE, text: "lunch anyone?" });
    const question = "@longhaul_test_bot what does COBOL stand for?";
    const mentioned = telegram.pushMessage({ chat: GROUP, from: GRACE, text: question, entities: mentionOf(question) });

    const [answer] = await e2e.waitForSent(GROUP.id, 1);
    expect(answer?.payload).toMatchObject({ reply_parameters: { message_id: mentioned.message?.message_id } });
    expect(textOf(answer)).toBe("echo: Grace Hopper: what does COBOL stand for?");
    // The unaddressed message reached neither the model nor the transcript.
    expect(llm.requests).toHaveLength(1);
    expect(conversation(llm.requests[0]?.body.messages ?? [])).toEqual(["user: Grace Hopper: what does COBOL stand for?"]);

    // A reply to one of the bot's messages addresses it, without a mention.
    const botMessage = { message_id: 880, date: Math.floor(Date.now() / 1000), chat: GROUP, from: BOT_FROM, text: textOf(answer) };
    const followUp = telegram.pushMessage({ chat: GROUP, from: ADA, text: "and who designed it?", reply_to_message: botMessage as never });
    const sent = await e2e.waitForSent(GROUP.id, 2);
    const replyContext = "[in reply to you (the assistant):]\n> echo: Grace Hopper: what does COBOL stand for?\n";
    expect(textOf(sent[1])).toMatch(/^echo: Ada Lovelace: .*and who designed it\?/s);
    expect(sent[1]?.payload.reply_parameters).toMatchObject({ message_id: followUp.message?.message_id });
    expect(conversation(llm.requests[1]?.body.messages ?? [])).toEqual([
      "user: Grace Hopper: what does COBOL stand for?",
      "assistant: echo: Grace Hopper: what does COBOL stand for?",
      `user: Ada Lovelace: ${replyContext}and who designed it?`,
    ]);

    // A group that is not in ALLOWED_TELEGRAM_CHATS is silent, even when it mentions the bot.
    telegram.pushMessage({ chat: OTHER_GROUP, from: GRACE, text: question, entities: mentionOf(question) });
    telegram.pushMessage({ chat: GROUP, from: GRACE, text: "thanks all" });
    // The ingress denied the first; the unaddressed ones never reached the bot: Telegram withholds
    // them from a bot in privacy mode (the adapter's own filter is tested with privacy off).
    await waitUntil(() => logged(e2e, "message-denied", `tg:${OTHER_GROUP.id}`) === 1, "the denial");
    expect(telegram.withheld.map((update) => update.message?.text)).toEqual(["lunch anyone?", "thanks all"]);
    await sleep(400);
    expect(llm.requests).toHaveLength(2);
    expect(e2e.sentTo(OTHER_GROUP.id)).toHaveLength(0);
    expect(telegram.callsOf("sendMessage")).toHaveLength(2);
  });

  it("answers a forum-topic message in its topic", async () => {
    // Typing at once: the echo answers before the default delay would show it.
    const e2e = await startE2e({ env: { ALLOWED_TELEGRAM_CHATS: String(FORUM.id), TYPING_DELAY_MS: "0" } });
    const { telegram, llm } = e2e;
    const text = "@longhaul_test_bot draft the release notes";
    const topicRoot = { message_id: 2040, message_thread_id: 2040, date: 1764400000, chat: FORUM, from: GRACE, forum_topic_created: { name: "Release planning", icon_color: 7322096 }, is_topic_message: true };
    const message = telegram.pushMessage({
      chat: FORUM, from: GRACE, text, entities: mentionOf(text), message_thread_id: 2040, is_topic_message: true, reply_to_message: topicRoot as never,
    });

    const [answer] = await e2e.waitForSent(FORUM.id, 1);
    expect(answer?.payload).toMatchObject({
      chat_id: String(FORUM.id),
      message_thread_id: 2040,
      text: "echo: Grace Hopper: draft the release notes",
      reply_parameters: { message_id: message.message?.message_id, allow_sending_without_reply: true },
    });
    expect(llm.requests).toHaveLength(1);
    // The typing indicator went to the topic too.
    expect(telegram.callsOf("sendChatAction")[0]?.payload).toEqual({ chat_id: String(FORUM.id), action: "typing", message_thread_id: 2040 });
  });

  it("delivers a 10,000-character reply with code blocks as several valid messages, in order", async () => {
    const e2e = await startE2e();
    const { telegram, llm } = e2e;
    const blocks = Array.from({ length: 5 }, (_, index) =>
      Array.from({ length: 26 }, (_, line) => `let value_${index}_${line} = compute(${line}) < limit && ready; // keep`).join("\n"),
    );
    const markdown = blocks
      .map((code, index) => `### Part ${index}\n\n${"Some **explanation** of <this> & that. ".repeat(16)}\n\n\`\`\`rust\n${code}\n\`\`\``)
      .join("\n\n");
    expect(markdown.length).toBeGreaterThan(10_000);
    llm.enqueue(markdown);
    const question = telegram.pushMessage({ chat: DM, from: ADA, text: "explain it in detail" });

    // The parts go out one after another: wait until all of the rendered text has arrived.
    const expectedText = (parseTelegramHtml(renderMarkdown(markdown)) as { text: string }).text;
    const delivered = () => e2e?.sentTo(DM.id).map((call) => (parseTelegramHtml(textOf(call)) as { text?: string }).text ?? "").join("") ?? "";
    await waitUntil(() => delivered().length >= expectedText.length, "the whole long reply");
    await sleep(300);
    const sent = e2e.sentTo(DM.id);

    expect(sent.length).toBeGreaterThanOrEqual(3);
    const parsed = sent.map((call) => parseTelegramHtml(textOf(call)));
    for (const [index, call] of sent.entries()) {
      expect(call.payload.parse_mode).toBe("HTML");
      expect(parsed[index]).not.toHaveProperty("error");
      expect((parsed[index] as { text: string }).text.length).toBeLessThanOrEqual(4096);
      expect(call.payload.reply_parameters === undefined).toBe(index > 0);
    }
    expect(sent[0]?.payload.reply_parameters).toEqual({ message_id: question.message?.message_id, allow_sending_without_reply: true });
    // In order and complete: the parts' texts joined are exactly the rendered reply.
    expect(parsed.map((part) => ("text" in part ? part.text : "")).join("")).toBe(expectedText);
    // Every code block is intact in one message, still marked as Rust.
    for (const index of blocks.keys()) {
      const holding = sent.filter((call) => textOf(call).includes(`value_${index}_0 `));
      expect(holding).toHaveLength(1);
      expect(textOf(holding[0])).toContain(`value_${index}_25 `);
      expect(textOf(holding[0])).toMatch(new RegExp(`<pre><code class="language-rust">let value_${index}_0 `));
    }
    expect(llm.requests).toHaveLength(1);
  });

  it("falls back to simpler formatting (links written out) when Telegram cannot parse the entities", async () => {
    const e2e = await startE2e();
    const { telegram, llm } = e2e;
    llm.enqueue("**Done** <ok> — see [the docs](https://e.com/d)");
    telegram.failNext("sendMessage", { error_code: 400, description: 'Bad Request: can\'t parse entities: Can\'t find end tag corresponding to start tag "b"' });
    const question = telegram.pushMessage({ chat: DM, from: ADA, text: "is it done?" });

    await e2e.waitForSent(DM.id, 1);
    const [html, simpler] = telegram.callsOf("sendMessage");
    expect(html?.payload.parse_mode).toBe("HTML");
    expect(simpler?.visible).toEqual({ text: "Done <ok> — see the docs (https://e.com/d)", entities: [{ type: "bold", offset: 0, length: 4 }] });
    expect(simpler?.payload).toMatchObject({
      chat_id: String(DM.id),
      parse_mode: "HTML",
      reply_parameters: { message_id: question.message?.message_id, allow_sending_without_reply: true },
      link_preview_options: { is_disabled: true },
    });
    await sleep(300);
    expect(telegram.callsOf("sendMessage")).toHaveLength(2);
  });

  it("retries a 429 after retry_after and delivers the reply once", async () => {
    const e2e = await startE2e();
    const { telegram } = e2e;
    telegram.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 1", parameters: { retry_after: 1 } });
    telegram.pushMessage({ chat: DM, from: ADA, text: "ping" });

    await e2e.waitForSent(DM.id, 1);
    const [refused, accepted] = telegram.callsOf("sendMessage");
    expect(textOf(refused)).toBe("echo: ping");
    expect(textOf(accepted)).toBe("echo: ping");
    expect((accepted?.at ?? 0) - (refused?.at ?? 0)).toBeGreaterThanOrEqual(950);
    await sleep(500);
    expect(telegram.callsOf("sendMessage")).toHaveLength(2);
  });

  it("answers an update delivered twice only once", async () => {
    const e2e = await startE2e();
    const { telegram, llm } = e2e;
    const update: Update = {
      update_id: 910_001,
      message: { message_id: 31, date: Math.floor(Date.now() / 1000), chat: DM, from: ADA, text: "only once please" },
    };
    telegram.pushUpdate(update);
    telegram.pushUpdate(update);
    await e2e.waitForSent(DM.id, 1);
    // Both copies reached the ingress, which recognised the second.
    await waitUntil(() => logged(e2e, "message-duplicate") === 1, "the duplicate");
    await sleep(500);
    expect(llm.requests).toHaveLength(1);
    expect(conversation(llm.requests[0]?.body.messages ?? [])).toEqual(["user: only once please"]);
    expect(e2e.sentTo(DM.id).map(textOf)).toEqual(["echo: only once please"]);
  });
});
