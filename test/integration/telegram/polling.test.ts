/**
 * The real adapter (grammY, runner, auto-retry) against the fake Bot API over HTTP, in long
 * polling mode. The ingress is an in-test IngressPort that records submissions and answers
 * with scripted results; the full pipeline replaces it in the e2e tests.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Update } from "grammy/types";
import type { ChatMove, ChatMoveResult, InboundMessage, IngressPort, OutboundReply, SubmitResult } from "../../../src/adapters/channel-adapter.js";
import { SUBMIT_FAILED_NOTICE, TelegramAdapter, type TelegramAdapterOptions } from "../../../src/adapters/telegram/index.js";
import { PermanentError, RetryableError } from "../../../src/errors.js";
import { createLogger } from "../../../src/logger.js";
import { FAKE_BOT, FAKE_TOKEN, FakeTelegram, parseTelegramHtml, type RecordedCall } from "../../fakes/fake-telegram.js";

class RecordingIngress implements IngressPort {
  readonly submissions: InboundMessage[] = [];
  constructor(private readonly answer: (message: InboundMessage) => SubmitResult | Promise<SubmitResult> = () => ({ status: "accepted" })) {}
  async submit(message: InboundMessage): Promise<SubmitResult> {
    this.submissions.push(message);
    return this.answer(message);
  }
}

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const DM = { id: 5012345678, type: "private" as const, first_name: "Ada" };
const ADA = { id: 5012345678, is_bot: false, first_name: "Ada" };
const GROUP = { id: -1001987654321, type: "supergroup" as const, title: "Compiler nerds" };
const OTHER_GROUP = { id: -1005550001111, type: "supergroup" as const, title: "Not enabled" };
const FORUM = { id: -1002233445566, type: "supergroup" as const, title: "Team HQ", is_forum: true as const };
const GRACE = { id: 6111222333, is_bot: false, first_name: "Grace", last_name: "Hopper" };
const mention = (text: string) => [{ type: "mention" as const, offset: text.indexOf("@longhaul_test_bot"), length: 18 }];

let fake: FakeTelegram;
let adapter: TelegramAdapter | undefined;
let logLines: string[] = [];

async function startAdapter(ingress: IngressPort, overrides: Partial<TelegramAdapterOptions> = {}): Promise<TelegramAdapter> {
  logLines = [];
  adapter = new TelegramAdapter({
    token: FAKE_TOKEN,
    apiRoot: fake.apiRoot,
    maxMessageChars: 16_000,
    logger: createLogger({ level: "trace", destination: { write: (line: string) => void logLines.push(line) } }),
    botInfo: FAKE_BOT,
    pollingTimeoutSeconds: 1,
    ...overrides,
  });
  await adapter.start(ingress);
  return adapter;
}

function reply(text: string, target: OutboundReply["target"], kind: OutboundReply["kind"] = "answer"): OutboundReply {
  return { replyId: `${target.chatId}#1`, sessionKey: `tg:${target.chatId}`, target, text, inReplyTo: [], kind };
}

const textOf = (call: RecordedCall) => String(call.payload.text);

afterEach(async () => {
  await adapter?.stop();
  adapter = undefined;
  await fake?.close();
  // Whatever happened in the test, the token never reached a log line.
  expect(logLines.join("\n")).not.toContain(FAKE_TOKEN.split(":")[1]);
});

describe("telegram adapter, long polling", () => {
  it("hands a DM to the ingress and registers the commands", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    const started = await startAdapter(ingress);
    expect(started.isConnected()).toBe(true);
    const update = fake.pushMessage({ chat: DM, from: ADA, text: "hello there" });

    await waitUntil(() => ingress.submissions.length === 1);
    expect(ingress.submissions[0]).toMatchObject({
      platform: "telegram",
      sessionKey: "tg:5012345678",
      messageId: String(update.message?.message_id),
      chatType: "private",
      userId: "5012345678",
      text: "hello there",
    });
    // One menu per scope, from the command registry: /export only in private chats, /persona for
    // private chats and group admins (a chat-wide setting), and so /voice.
    await waitUntil(() => fake.commandMenus.size === 3);
    const menu = (type: string) => fake.commandMenus.get(JSON.stringify({ type }))?.map((entry) => entry.command);
    const common = ["help", "new", "compress", "status", "usage", "stop", "context", "memory", "forget", "pin", "unpin", "model"];
    expect(menu("all_private_chats")).toEqual([...common, "persona", "tools", "reminders", "checkin", "timezone", "voice", "export"]);
    expect(menu("all_group_chats")).toEqual([...common, "tools", "reminders", "checkin", "timezone"]);
    expect(menu("all_chat_administrators")).toEqual([...common, "persona", "tools", "reminders", "checkin", "timezone", "voice"]);
    expect(fake.callsOf("setMyCommands")).toHaveLength(3);
    expect(fake.callsOf("getMyCommands")).toHaveLength(3);
    // No webhook was set, so none is deleted: deleteWebhook would disconnect another deployment's.
    expect(fake.callsOf("getWebhookInfo")).toHaveLength(1);
    expect(fake.callsOf("deleteWebhook")).toHaveLength(0);
    expect(fake.callsOf("getMe")).toHaveLength(0);
    // The adapter sent nothing by itself: the reply comes from the worker.
    expect(fake.callsOf("sendMessage")).toHaveLength(0);
  });

  it("ignores a group message without a mention and takes one with it (privacy mode off: the bot sees every message)", async () => {
    const sees = { ...FAKE_BOT, can_read_all_group_messages: true };
    fake = await FakeTelegram.start({ bot: sees });
    const ingress = new RecordingIngress();
    await startAdapter(ingress, { botInfo: sees });
    fake.pushMessage({ chat: GROUP, from: GRACE, text: "lunch anyone?" });
    const text = "@longhaul_test_bot what does COBOL stand for?";
    fake.pushMessage({ chat: GROUP, from: GRACE, text, entities: mention(text) });

    await waitUntil(() => ingress.submissions.length === 1);
    await sleep(100);
    expect(ingress.submissions).toHaveLength(1);
    expect(ingress.submissions[0]).toMatchObject({ chatType: "group", userName: "Grace Hopper", text: "what does COBOL stand for?", sessionKey: "tg:-1001987654321" });

    // A reply to one of the bot's messages addresses it too; a reply to someone else does not.
    const botMessage = { message_id: 880, date: 1764500150, chat: GROUP, from: { id: FAKE_BOT.id, is_bot: true as const, first_name: "Longhaul" }, text: "COBOL: COmmon Business-Oriented Language." };
    fake.pushMessage({ chat: GROUP, from: GRACE, text: "nice", reply_to_message: { ...botMessage, from: { id: 1, is_bot: false, first_name: "Alan" } } as never });
    fake.pushMessage({ chat: GROUP, from: GRACE, text: "and who designed it?", reply_to_message: botMessage as never });
    await waitUntil(() => ingress.submissions.length === 2);
    await sleep(100);
    expect(ingress.submissions.map((message) => message.text)).toEqual(["what does COBOL stand for?", "and who designed it?"]);
  });

  it("answers a forum topic message in its topic", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    const started = await startAdapter(ingress);
    const text = "@longhaul_test_bot draft the release notes";
    fake.pushMessage({ chat: FORUM, from: GRACE, text, entities: mention(text), message_thread_id: 2040, is_topic_message: true });
    await waitUntil(() => ingress.submissions.length === 1);
    const inbound = ingress.submissions[0] as InboundMessage;
    expect(inbound).toMatchObject({ sessionKey: "tg:-1002233445566:2040", threadId: "2040" });

    await started.send(
      reply("Here are the notes.", { platform: "telegram", chatId: inbound.chatId, threadId: "2040", replyToMessageId: inbound.messageId }),
      { fromPart: 0, onPartSent: async () => {} },
    );
    const sent = await fake.waitForCall("sendMessage");
    expect(sent.payload).toMatchObject({
      chat_id: "-1002233445566",
      message_thread_id: 2040,
      parse_mode: "HTML",
      reply_parameters: { message_id: Number(inbound.messageId), allow_sending_without_reply: true },
    });
  });

  it("sends a 10,000-character reply as several valid messages, in order, code blocks intact", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress());
    const blocks = Array.from({ length: 5 }, (_, index) =>
      Array.from({ length: 26 }, (_, line) => `let value_${index}_${line} = compute(${line}) < limit && ready; // keep`).join("\n"),
    );
    const markdown = blocks.map((code, index) => `### Part ${index}\n\n${"Some **explanation** of <this> & that. ".repeat(16)}\n\n\`\`\`rust\n${code}\n\`\`\``).join("\n\n");
    expect(markdown.length).toBeGreaterThan(10_000);
    const progress: number[] = [];
    const lastFlags: boolean[] = [];

    await started.send(reply(markdown, { platform: "telegram", chatId: "5012345678", replyToMessageId: "77" }), {
      fromPart: 0,
      onPartSent: async (index, { last }) => void (progress.push(index), lastFlags.push(last)),
    });

    const sent = fake.delivered();
    expect(sent.length).toBeGreaterThanOrEqual(3);
    expect(progress).toEqual(sent.map((_, index) => index));
    // Only the last part says so: the delivery records every other one.
    expect(lastFlags).toEqual(sent.map((_, index) => index === sent.length - 1));
    for (const [index, call] of sent.entries()) {
      expect(call.payload.parse_mode).toBe("HTML");
      const seen = parseTelegramHtml(textOf(call));
      expect(seen).not.toHaveProperty("error");
      expect((seen as { text: string }).text.length).toBeLessThanOrEqual(4096);
      expect(call.payload.reply_parameters === undefined).toBe(index > 0);
    }
    for (const [index] of blocks.entries()) {
      const holding = sent.filter((call) => textOf(call).includes(`value_${index}_0 `));
      expect(holding).toHaveLength(1);
      expect(textOf(holding[0] as RecordedCall)).toContain(`value_${index}_25 `);
    }

    // Resuming a partly delivered reply sends only the rest, without the reply reference.
    const before = sent.length;
    await started.send(reply(markdown, { platform: "telegram", chatId: "5012345678", replyToMessageId: "77" }), { fromPart: 2, onPartSent: async () => {} });
    const resumed = fake.delivered().slice(before);
    expect(resumed.map(textOf)).toEqual(sent.slice(2).map(textOf));
    expect(resumed.every((call) => call.payload.reply_parameters === undefined)).toBe(true);
  });

  it("reports the reply's last part as its last file when it has files, else as its last text part", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress());
    const target = { platform: "telegram" as const, chatId: "5012345678" };
    const file = (filename: string) => ({ filename, mime: "text/plain", base64: Buffer.from(`${filename} body`).toString("base64") });
    const flags: Array<[number, boolean]> = [];
    await started.send({ ...reply("Your export: two files.", target), documents: [file("a.md"), file("b.json")] }, {
      fromPart: 0,
      onPartSent: async (index, { last }) => void flags.push([index, last]),
    });
    // The text's only part is not the reply's last: the files follow it.
    expect(flags).toEqual([[0, false], [1, false], [2, true]]);
    expect(fake.callsOf("sendDocument")).toHaveLength(2);

    flags.length = 0;
    await started.send(reply("no files", target), { fromPart: 0, onPartSent: async (index, { last }) => void flags.push([index, last]) });
    expect(flags).toEqual([[0, true]]);
  });

  it("a file Telegram refuses (empty) is given up alone with one error line; the reply's other files go out", async () => {
    fake = await FakeTelegram.start({ rateLimits: false });
    const started = await startAdapter(new RecordingIngress());
    const target = { platform: "telegram" as const, chatId: "5012345678" };
    const file = (filename: string, body: string) => ({ filename, mime: "text/plain", base64: Buffer.from(body).toString("base64") });
    const flags: Array<[number, boolean]> = [];
    await started.send({ ...reply("Your export: three files.", target), documents: [file("a.md", "a"), file("empty.json", ""), file("c.txt", "c")] }, {
      fromPart: 0,
      onPartSent: async (index, { last }) => void flags.push([index, last]),
    });
    expect(fake.documents(target.chatId).map((document) => document.fileName)).toEqual(["a.md", "c.txt"]);
    expect(flags).toEqual([[0, false], [1, false], [2, false], [3, true]]);
    expect(logLines.filter((line) => line.includes("the file is given up"))).toHaveLength(1);
  });

  it("resends with its links written out when Telegram cannot parse the entities", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress());
    fake.failNext("sendMessage", { error_code: 400, description: 'Bad Request: can\'t parse entities: Can\'t find end tag corresponding to start tag "b"' });

    await started.send(reply("**Done** <ok> — see [the docs](https://e.com/d)", { platform: "telegram", chatId: "5012345678", replyToMessageId: "9" }), {
      fromPart: 0,
      onPartSent: async () => {},
    });

    const [html, simpler] = fake.callsOf("sendMessage");
    expect(html?.payload.parse_mode).toBe("HTML");
    expect(simpler?.payload.parse_mode).toBe("HTML");
    expect(simpler?.visible?.text).toBe("Done <ok> — see the docs (https://e.com/d)");
    expect(simpler?.visible?.entities.map((entity) => entity.type)).toEqual(["bold"]);
    expect(simpler?.payload.reply_parameters).toEqual({ message_id: 9, allow_sending_without_reply: true });
  });

  it("starts on a Bot API server without getWebhookInfo (a third-party emulator), and names such a server's refusals", async () => {
    fake = await FakeTelegram.start();
    fake.unsupported.add("getWebhookInfo");
    fake.unsupported.add("sendChatAction");
    const ingress = new RecordingIngress();
    const started = await startAdapter(ingress);
    fake.pushMessage({ chat: DM, from: ADA, text: "hello there" });
    await waitUntil(() => ingress.submissions.length === 1);
    expect(logLines.some((line) => line.includes("has no getWebhookInfo"))).toBe(true);
    fake.unsupported.add("sendMessage");
    await expect(started.send(reply("hi", { platform: "telegram", chatId: "111" }), { fromPart: 0, onPartSent: async () => {} })).rejects.toThrow(/sendMessage: the Bot API server answered without an error code/);
  });

  it("ACK_REACTIONS: 👀 on a message the ingress took, none on a refused one; a group is asked what it allows first (getChat, once), so one that forbids 👀 gets no failing call", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress((message) => (message.text === "let me in" ? { status: "denied" } : { status: "accepted" }));
    await startAdapter(ingress, { ackReactions: true });
    const taken = fake.pushMessage({ chat: DM, from: ADA, text: "hello" });
    const refused = fake.pushMessage({ chat: DM, from: ADA, text: "let me in" });
    await waitUntil(() => ingress.submissions.length === 2 && fake.callsOf("setMessageReaction").length === 1);
    await sleep(200);
    expect(fake.callsOf("setMessageReaction")).toHaveLength(1);
    expect(fake.reactions.get(`${DM.id}:${taken.message!.message_id}`)).toEqual(["👀"]);
    expect(fake.reactions.has(`${DM.id}:${refused.message!.message_id}`)).toBe(false);

    // The private chat was never asked: every reaction is allowed there.
    expect(fake.callsOf("getChat")).toHaveLength(0);

    // Reactions turned off in the group (available_reactions empty): asked once, never reacted to.
    fake.chats.setAvailableReactions(GROUP.id, []);
    const inGroup = (chat: typeof GROUP, text: string) => fake.pushMessage({ chat, from: ADA, text: `@longhaul_test_bot ${text}`, entities: mention(`@longhaul_test_bot ${text}`) });
    inGroup(GROUP, "one");
    inGroup(GROUP, "two");
    await waitUntil(() => ingress.submissions.length === 4 && fake.callsOf("getChat").length === 1);
    inGroup(GROUP, "three");
    await waitUntil(() => ingress.submissions.length === 5);
    await sleep(200);
    expect(fake.callsOf("getChat")).toHaveLength(1);
    expect(fake.callsOf("setMessageReaction").filter((call) => String(call.payload.chat_id) === String(GROUP.id))).toEqual([]);
    expect(logLines.filter((line) => line.includes("does not allow the acknowledgement reaction"))).toHaveLength(1);

    // A group that allows a few reactions, 👀 among them, gets it; one that allows only 👍 does not.
    const [withEyes, thumbsOnly] = [{ ...GROUP, id: -1001000000001 }, { ...GROUP, id: -1001000000002 }];
    fake.chats.setAvailableReactions(withEyes.id, ["👍", "👀"]);
    fake.chats.setAvailableReactions(thumbsOnly.id, ["👍"]);
    const eyes = inGroup(withEyes, "four");
    inGroup(thumbsOnly, "five");
    await waitUntil(() => ingress.submissions.length === 7 && fake.callsOf("getChat").length === 3);
    await waitUntil(() => fake.callsOf("setMessageReaction").length === 2);
    await sleep(200);
    expect(fake.reactions.get(`${withEyes.id}:${eyes.message!.message_id}`)).toEqual(["👀"]);
    expect(fake.callsOf("setMessageReaction").map((call) => String(call.payload.chat_id))).toEqual([String(DM.id), String(withEyes.id)]);
    // Every setMessageReaction was accepted: none answered REACTION_INVALID.
    expect(logLines.filter((line) => line.includes("refuses the acknowledgement reaction"))).toEqual([]);
  });

  it("the fake Bot API refuses a reaction the chat does not allow (REACTION_INVALID), as Telegram does", async () => {
    fake = await FakeTelegram.start();
    fake.chats.setAvailableReactions(GROUP.id, ["👍"]);
    const call = (emoji: string) => fetch(`${fake!.apiRoot}/bot${fake!.token}/setMessageReaction`, {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ chat_id: GROUP.id, message_id: 1, reaction: [{ type: "emoji", emoji }] }),
    }).then(async (response) => ({ status: response.status, body: (await response.json()) as { description?: string } }));
    expect(await call("👀")).toEqual({ status: 400, body: expect.objectContaining({ description: "Bad Request: REACTION_INVALID" }) });
    expect((await call("👍")).status).toBe(200);
  });

  it("no reply lost to a 400 about its text: simpler formatting, then plain text with the URLs, then plain", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress());
    fake.failNext("sendMessage", { error_code: 400, description: "Bad Request: ENTITIES_TOO_LONG" });
    fake.failNext("sendMessage", { error_code: 400, description: "Bad Request: can't parse entities: Unsupported start tag \"x\" at byte offset 0" });
    await started.send(reply("**Done** — see [the docs](https://e.com/d)", { platform: "telegram", chatId: "111" }), { fromPart: 0, onPartSent: async () => {} });
    const [, , plain] = fake.callsOf("sendMessage");
    expect(fake.delivered("111")).toEqual([plain]);
    expect(plain?.payload.parse_mode).toBeUndefined();
    expect(plain?.payload.text).toBe("Done — see the docs (https://e.com/d)");

    for (let index = 0; index < 3; index++) fake.failNext("sendMessage", { error_code: 400, description: "Bad Request: ENTITY_TEXT_INVALID" });
    await started.send(reply("**Second** — see [the docs](https://e.com/d)", { platform: "telegram", chatId: "222" }), { fromPart: 0, onPartSent: async () => {} });
    expect(fake.delivered("222").map((call) => call.payload.text)).toEqual(["Second — see the docs"]);
    expect(logLines.filter((line) => line.includes("sending it simpler"))).toHaveLength(5);
  });

  it("a part Telegram refuses in every form, plain text included, is given up alone: the reply goes on with its next part (issue 30)", async () => {
    fake = await FakeTelegram.start({ rateLimits: false });
    const started = await startAdapter(new RecordingIngress(), { maxPartLength: 100 });
    // The HTML, the links written out, plain with the URL, plain: all refused, part 1 only.
    for (let index = 0; index < 4; index++) fake.failNext("sendMessage", { error_code: 400, description: "Bad Request: text must be encoded in UTF-8" });
    const sent: number[] = [];
    const text = `**First** part, see [the docs](https://e.com/d) ${"a".repeat(60)}\n\nSecond part ${"b".repeat(60)}`;
    await started.send(reply(text, { platform: "telegram", chatId: "111" }), { fromPart: 0, onPartSent: async (partIndex) => void sent.push(partIndex) });
    expect(fake.callsOf("sendMessage")).toHaveLength(5);
    expect(fake.delivered("111").map((call) => call.visible?.text)).toEqual([`Second part ${"b".repeat(60)}`]);
    expect(sent).toEqual([0, 1]);
    expect(logLines.filter((line) => line.includes("the part is given up"))).toHaveLength(1);
  });

  it("the 48-hour window: an outcome for a request that old is sent anew, a final still replaces a status that old (left in place, logged), a /stop finds it not editable; a /stop refused for its formatting is edited simpler (issue 30)", async () => {
    fake = await FakeTelegram.start({ rateLimits: false });
    const started = await startAdapter(new RecordingIngress());
    const target = { platform: "telegram" as const, chatId: "111" };
    const twoDays = 48 * 60 * 60;
    await started.send({ ...reply("Run `rm`?", target, "notice"), actions: [{ id: "ap:1:y", label: "Approve" }] }, { fromPart: 0, onPartSent: async () => {} });
    const request = fake.delivered("111")[0]!;
    const requestId = fake.chatView("111")[0]!.messageId;
    fake.age("111", requestId, twoDays);
    await started.send({ ...reply("Approved.", target, "notice"), replyId: "111#2", replaces: String(requestId) }, { fromPart: 0, onPartSent: async () => {} });
    expect(fake.callsOf("editMessageText").map((call) => call.visible)).toEqual([undefined]);
    expect(fake.delivered("111").map((call) => call.visible?.text)).toEqual([request.visible?.text, "Approved."]);

    const statusId = Number(await started.previews.create(target, "✍️ Writing the answer…", AbortSignal.timeout(5_000)));
    fake.age("111", statusId, twoDays + 60);
    await started.send({ ...reply("The answer.", target), replyId: "111#3", preview: "111#3" }, { fromPart: 0, onPartSent: async () => {}, preview: { messageId: String(statusId), only: false, onRefused: async () => {} } });
    expect(fake.notifications("111").at(-1)?.visible?.text).toBe("The answer.");
    expect(fake.chatView("111").map((message) => message.text).slice(-2)).toEqual(["✍️ Writing the answer…", "The answer."]);
    expect(logLines.filter((line) => line.includes("message can't be deleted for everyone"))).toHaveLength(1);

    let refused = 0;
    await started.send({ ...reply("⏹ Stopped.", target), replyId: "111#4", preview: "111#4", previewOnly: true }, { fromPart: 0, onPartSent: async () => {}, preview: { messageId: String(statusId), only: true, onRefused: async () => void refused++ } });
    expect(refused).toBe(1);
    expect(fake.chatView("111").at(-2)?.text).toBe("✍️ Writing the answer…");

    // A /stop whose formatted edit is refused (not for its age) is edited in a simpler form.
    const freshId = Number(await started.previews.create(target, "✍️ Writing the answer…", AbortSignal.timeout(5_000)));
    fake.failNext("editMessageText", { error_code: 400, description: "Bad Request: ENTITIES_TOO_LONG" });
    await started.send({ ...reply("⏹ **Stopped.**", target), replyId: "111#5", preview: "111#5", previewOnly: true }, { fromPart: 0, onPartSent: async () => {}, preview: { messageId: String(freshId), only: true, onRefused: async () => void refused++ } });
    expect(refused).toBe(1);
    expect(fake.chatView("111").find((message) => message.messageId === freshId)?.text).toBe("⏹ Stopped.");
  });

  it("a 400 that says the chat refuses ends the reply at once, with no simpler sends (chat gone, topic closed or deleted)", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress());
    fake.failNext("sendMessage", { error_code: 400, description: "Bad Request: chat not found" });
    await expect(started.send(reply("**hi**", { platform: "telegram", chatId: "111" }), { fromPart: 0, onPartSent: async () => {} })).rejects.toBeInstanceOf(PermanentError);
    expect(fake.callsOf("sendMessage")).toHaveLength(1);

    fake.closedTopics.add(`${FORUM.id}:77`);
    fake.deletedTopics.add(`${FORUM.id}:78`);
    for (const threadId of ["77", "78"]) {
      const attempt = started.send(reply("**in the topic**", { platform: "telegram", chatId: String(FORUM.id), threadId }), { fromPart: 0, onPartSent: async () => {} });
      await expect(attempt).rejects.toBeInstanceOf(PermanentError);
    }
    expect(fake.callsOf("sendMessage")).toHaveLength(3);
    expect(fake.delivered()).toHaveLength(0);
  });

  it("the fake refuses as Telegram: a bot kicked or blocked (403 on every call), without the right to send (400), a topic not there, closed or deleted; the adapter ends such a reply at once and stops typing there", async () => {
    fake = await FakeTelegram.start({ rateLimits: false });
    const started = await startAdapter(new RecordingIngress(), { typingIntervalMs: 50 });
    const file = { filename: "notes.md", mime: "text/plain", base64: Buffer.from("notes").toString("base64") };
    const sendTo = (chatId: number, threadId?: string, documents?: OutboundReply["documents"]) =>
      started.send({ ...reply("**hi**", { platform: "telegram", chatId: String(chatId), ...(threadId ? { threadId } : {}) }), ...(documents ? { documents } : {}) }, { fromPart: 0, onPartSent: async () => {} });

    // Kicked from the group, blocked in a private chat: 403 on whatever names the chat.
    fake.chats.removeBot(GROUP.id);
    fake.chats.removeBot(DM.id);
    await expect(sendTo(GROUP.id)).rejects.toThrow(/403 Forbidden: bot was kicked from the supergroup chat/);
    await expect(sendTo(DM.id)).rejects.toThrow(/403 Forbidden: bot was blocked by the user/);
    await expect(started.previews.create({ platform: "telegram", chatId: String(GROUP.id) }, "💭", AbortSignal.timeout(5_000))).rejects.toThrow();
    started.onActivity({ type: "turn-started", sessionKey: "tg:kicked", target: { platform: "telegram", chatId: String(GROUP.id) } });
    await waitUntil(() => fake!.callsOf("sendChatAction").length === 1);
    expect(fake.callsOf("sendMessage")).toHaveLength(3);

    // Restricted: a member that may not send; each of text and files refused once, no simpler form.
    fake.chats.restrictBot(OTHER_GROUP.id);
    await expect(sendTo(OTHER_GROUP.id)).rejects.toThrow(/not enough rights to send text messages to the chat/);
    await expect(started.send({ ...reply("", { platform: "telegram", chatId: String(OTHER_GROUP.id) }), documents: [file] }, { fromPart: 0, onPartSent: async () => {} }))
      .rejects.toThrow(/not enough rights to send documents to the chat/);
    expect(fake.callsOf("sendMessage").filter((call) => String(call.payload.chat_id) === String(OTHER_GROUP.id))).toHaveLength(1);

    // A forum the fake knows (a user wrote in its topic 40): topic 41 was never there; 40 works until closed.
    fake.pushMessage({ chat: FORUM, from: ADA, text: "in the topic", message_thread_id: 40, is_topic_message: true });
    await expect(sendTo(FORUM.id, "41")).rejects.toThrow(/message thread not found/);
    await sendTo(FORUM.id, "40", [file]);
    expect(fake.delivered(FORUM.id)).toHaveLength(1);
    expect(fake.documents(FORUM.id)).toHaveLength(1);
    fake.closedTopics.add(`${FORUM.id}:40`);
    await expect(sendTo(FORUM.id, "40")).rejects.toThrow(/TOPIC_CLOSED/);
    started.onActivity({ type: "turn-started", sessionKey: "tg:closed-topic", target: { platform: "telegram", chatId: String(FORUM.id), threadId: "40" } });
    await waitUntil(() => fake!.callsOf("sendChatAction").length === 2);

    // Typing stopped where it was refused (its interval is 50 ms): no further sendChatAction to either chat.
    await sleep(300);
    expect(fake.callsOf("sendChatAction")).toHaveLength(2);
  });

  it("a link-heavy answer: every part keeps its formatting within 100 entities and Telegram's entity size (no ENTITIES_TOO_LONG)", async () => {
    fake = await FakeTelegram.start({ rateLimits: false });
    const started = await startAdapter(new RecordingIngress());
    const links = Array.from({ length: 250 }, (_, index) => `[ref ${index}](https://docs.example.com/reference/chapter-${index}/section/a-rather-long-anchor-name)`);
    await started.send(reply(`Sources: ${links.join(", ")}.`, { platform: "telegram", chatId: "111" }), { fromPart: 0, onPartSent: async () => {} });
    const delivered = fake.delivered("111");
    expect(delivered.length).toBe(fake.callsOf("sendMessage").length);
    expect(delivered.every((call) => call.payload.parse_mode === "HTML" && call.visible?.droppedEntities === undefined)).toBe(true);
    const linkEntities = delivered.flatMap((call) => call.visible?.entities ?? []).filter((entity) => entity.type === "text_link");
    expect(linkEntities).toHaveLength(250);
  });

  it("honours a 429's retry_after without holding up other chats", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress());
    fake.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 1", parameters: { retry_after: 1 } });
    const finished: Record<string, number> = {};
    const begin = Date.now();

    const limited = started
      .send(reply("first chat", { platform: "telegram", chatId: "111" }), { fromPart: 0, onPartSent: async () => {} })
      .then(() => (finished.limited = Date.now()));
    await fake.waitForCall("sendMessage");
    await started
      .send(reply("second chat", { platform: "telegram", chatId: "222" }), { fromPart: 0, onPartSent: async () => {} })
      .then(() => (finished.other = Date.now()));
    await limited;

    const attempts = fake.callsOf("sendMessage").filter((call) => call.payload.chat_id === "111");
    expect(attempts).toHaveLength(2);
    const gap = (attempts[1] as RecordedCall).at - (attempts[0] as RecordedCall).at;
    expect(gap).toBeGreaterThanOrEqual(950);
    expect(gap).toBeLessThan(3000);
    expect((finished.other ?? 0) - begin).toBeLessThan(900);
    expect(finished.limited).toBeGreaterThan(finished.other ?? Infinity);
  });

  it("gives up on a long rate limit with a retryable error for the reply sender", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress());
    fake.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 120", parameters: { retry_after: 120 } });
    const attempt = started.send(reply("hi", { platform: "telegram", chatId: "111" }), { fromPart: 0, onPartSent: async () => {} });
    await expect(attempt).rejects.toBeInstanceOf(RetryableError);
    await expect(attempt).rejects.toMatchObject({ retryAfterMs: 120_000 });
  });

  it("passes a re-delivered update on with the same message id (the ingress dedupes)", async () => {
    fake = await FakeTelegram.start();
    const update: Update = {
      update_id: 900,
      message: { message_id: 31, date: Math.floor(Date.now() / 1000), chat: DM, from: ADA, text: "only once please" },
    };
    fake.pushUpdate(update);
    fake.pushUpdate(update);
    const seen = new Set<string>();
    const ingress = new RecordingIngress((message) => {
      const key = `${message.chatId}/${message.messageId}`;
      const status = seen.has(key) ? "duplicate" : "accepted";
      seen.add(key);
      return { status };
    });
    await startAdapter(ingress);
    await waitUntil(() => ingress.submissions.length === 2);
    expect(ingress.submissions.map((message) => message.messageId)).toEqual(["31", "31"]);
    await sleep(100);
    expect(fake.callsOf("sendMessage")).toHaveLength(0);
  });

  it("sends the ingress's notice when the sender is denied or rate-limited", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress((message) =>
      message.text === "flood" ? { status: "rate-limited", notice: "Slow down a little, please." } : { status: "denied", notice: "Your pairing code is `K7Q-42`." },
    );
    await startAdapter(ingress);
    const stranger = fake.pushMessage({ chat: { id: 900100, type: "private", first_name: "Eve" }, from: { id: 900100, is_bot: false, first_name: "Eve" }, text: "hi" });
    const notice = await fake.waitForCall("sendMessage");
    expect(notice.payload).toMatchObject({
      chat_id: "900100",
      text: "Your pairing code is <code>K7Q-42</code>.",
      reply_parameters: { message_id: stranger.message?.message_id },
    });
    fake.pushMessage({ chat: DM, from: ADA, text: "flood" });
    await fake.waitForCall("sendMessage", (call) => call.payload.text === "Slow down a little, please.");
  });

  it("answers media it cannot open with a polite note and does not submit it; pictures and voice go on as attachment references", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    await startAdapter(ingress);
    fake.pushMessage({ chat: DM, from: ADA, video: { file_id: "m1", file_unique_id: "u1", duration: 3, width: 9, height: 9 } });
    const note = await fake.waitForCall("sendMessage");
    expect(textOf(note)).toContain("can't open this video");
    fake.pushMessage({ chat: DM, from: ADA, photo: [{ file_id: "p", file_unique_id: "p", width: 9, height: 9 }], caption: "what is this?" });
    fake.pushMessage({ chat: DM, from: ADA, voice: { file_id: "v1", file_unique_id: "u1", duration: 3 } });
    await waitUntil(() => ingress.submissions.length === 2);
    expect(ingress.submissions[0]).toMatchObject({ text: "what is this?", attachments: [{ kind: "image", source: { platform: "telegram", fileId: "p" } }] });
    expect(ingress.submissions[1]).toMatchObject({ text: "", attachments: [{ kind: "audio", voice: true, source: { platform: "telegram", fileId: "v1" } }] });
    expect(fake.callsOf("sendMessage")).toHaveLength(1);
  });

  it("greets /start directly without going through the ingress", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    await startAdapter(ingress);
    fake.pushMessage({ chat: DM, from: ADA, text: "/start", entities: [{ type: "bot_command", offset: 0, length: 6 }] });
    const greeting = await fake.waitForCall("sendMessage");
    expect(greeting.payload.parse_mode).toBe("HTML");
    expect(textOf(greeting)).toContain("<b>longhaul</b>");
    expect(textOf(greeting)).toContain("@longhaul_test_bot");
    fake.pushMessage({ chat: DM, from: ADA, text: "/status", entities: [{ type: "bot_command", offset: 0, length: 7 }] });
    await waitUntil(() => ingress.submissions.length === 1);
    expect(ingress.submissions[0]?.text).toBe("/status");
  });

  it("truncates oversize text and tells the user once the message is accepted", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    await startAdapter(ingress, { maxMessageChars: 500 });
    fake.pushMessage({ chat: DM, from: ADA, text: "x".repeat(1200) });
    await waitUntil(() => ingress.submissions.length === 1);
    expect(ingress.submissions[0]?.text.length).toBeLessThanOrEqual(500);
    const notice = await fake.waitForCall("sendMessage");
    expect(textOf(notice)).toBe("Your message was 1,200 characters long, so I only read the first 500.");
  });

  it("keeps typing while a turn runs and stops at turn-finished or when the answer is out", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress(), { typingIntervalMs: 100 });
    const target = { platform: "telegram" as const, chatId: "-1002233445566", threadId: "2040", replyToMessageId: "5" };
    started.onActivity({ type: "turn-started", sessionKey: "tg:-1002233445566:2040", target });
    await waitUntil(() => fake.callsOf("sendChatAction").length >= 3);
    expect(fake.callsOf("sendChatAction")[0]?.payload).toEqual({ chat_id: "-1002233445566", action: "typing", message_thread_id: 2040 });
    started.onActivity({ type: "turn-finished", sessionKey: "tg:-1002233445566:2040", target });
    await sleep(50); // a call already on the wire may still land
    const afterFinish = fake.callsOf("sendChatAction").length;
    await sleep(350);
    expect(fake.callsOf("sendChatAction")).toHaveLength(afterFinish);

    // A failing typing call is only logged, never thrown, and the answer itself stops it.
    fake.failNext("sendChatAction", { error_code: 429, description: "Too Many Requests: retry after 40", parameters: { retry_after: 40 } });
    started.onActivity({ type: "turn-started", sessionKey: "tg:5012345678", target: { platform: "telegram", chatId: "5012345678" } });
    await waitUntil(() => fake.callsOf("sendChatAction").length >= afterFinish + 2);
    await started.send({ ...reply("done", { platform: "telegram", chatId: "5012345678" }), sessionKey: "tg:5012345678" }, { fromPart: 0, onPartSent: async () => {} });
    await sleep(50);
    const afterAnswer = fake.callsOf("sendChatAction").length;
    await sleep(350);
    expect(fake.callsOf("sendChatAction")).toHaveLength(afterAnswer);
  });

  it("sets a scope's menu only when Telegram holds a different one", async () => {
    fake = await FakeTelegram.start();
    await startAdapter(new RecordingIngress());
    await waitUntil(() => fake.callsOf("setMyCommands").length === 3);
    await adapter?.stop();
    // The group menu was changed meanwhile (another deployment, an older version of ours).
    fake.commandMenus.set(JSON.stringify({ type: "all_group_chats" }), [{ command: "help", description: "Old help" }]);
    await startAdapter(new RecordingIngress());
    await waitUntil(() => fake.callsOf("getMyCommands").length === 6);
    await waitUntil(() => fake.callsOf("setMyCommands").length === 4);
    await sleep(100);
    expect(fake.callsOf("setMyCommands").slice(3).map((call) => call.payload.scope)).toEqual([{ type: "all_group_chats" }]);
    expect(fake.commandMenus.get(JSON.stringify({ type: "all_group_chats" }))?.map((entry) => entry.command)).toContain("new");
  });

  it("survives a failing setMyCommands, a malformed update and a failing ingress", async () => {
    fake = await FakeTelegram.start();
    fake.failNext("setMyCommands", { error_code: 400, description: "Bad Request: BOT_COMMAND_INVALID" });
    let failures = 1;
    const ingress = new RecordingIngress(() => {
      if (failures-- > 0) throw new Error("redis unavailable");
      return { status: "accepted" };
    });
    await startAdapter(ingress, { submitRetryDelaysMs: [50] });
    await fake.waitForCall("setMyCommands");
    fake.pushUpdate({ update_id: 500, message: { message_id: 1, date: 1764500000, text: "no chat" } } as unknown as Update);
    fake.pushMessage({ chat: DM, from: ADA, text: "still there?" });
    await waitUntil(() => ingress.submissions.length === 2);
    expect(ingress.submissions.map((message) => message.text)).toEqual(["still there?", "still there?"]);
    expect(logLines.some((line) => line.includes("malformed telegram update skipped"))).toBe(true);
    expect(logLines.some((line) => line.includes("setMyCommands failed"))).toBe(true);
  });

  it("fails to start with a named error when the token is refused", async () => {
    fake = await FakeTelegram.start({ token: "999:another-token" });
    const refused = startAdapter(new RecordingIngress(), { botInfo: undefined });
    await expect(refused).rejects.toBeInstanceOf(PermanentError);
    await expect(refused).rejects.toThrow(/getMe: 401 Unauthorized/);
    expect(adapter?.isConnected()).toBe(false);
  });

  it("waits for an unreachable Bot API at start, logging each failure, until stopped", async () => {
    fake = await FakeTelegram.start();
    const lines: string[] = [];
    const logger = createLogger({ level: "debug", destination: { write: (line: string) => void lines.push(line) } });
    const unreachable = new TelegramAdapter({ token: FAKE_TOKEN, apiRoot: "http://127.0.0.1:9", maxMessageChars: 100, logger });
    const starting = unreachable.start(new RecordingIngress()).catch((caught: unknown) => caught);
    await waitUntil(() => lines.filter((line) => line.includes("getMe failed")).length >= 2);
    await unreachable.stop();
    const error = await starting;
    expect(error).toBeInstanceOf(Error);
    expect(unreachable.isConnected()).toBe(false);
    logger.error({ err: error }, "start failed");
    expect(lines.join("\n")).toContain("Network request for 'getMe' failed");
    expect(lines.join("\n")).not.toContain(FAKE_TOKEN.split(":")[1]);
  });

  it("backs off on 409 (another poller on this token) with a clear log line, and recovers", async () => {
    fake = await FakeTelegram.start();
    const conflict = { error_code: 409, description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running" };
    for (let index = 0; index < 2; index++) fake.failNext("getUpdates", conflict);
    const fatal: Error[] = [];
    const ingress = new RecordingIngress();
    const started = await startAdapter(ingress, { onFatal: (error) => void fatal.push(error) });
    await waitUntil(() => !started.isConnected());
    await waitUntil(() => logLines.some((line) => line.includes("409 Conflict: another process polls this bot token")));
    fake.pushMessage({ chat: DM, from: ADA, text: "still there?" });
    await waitUntil(() => ingress.submissions.length === 1, 10_000);
    expect(started.isConnected()).toBe(true);
    expect(fatal).toEqual([]);
  });

  it("gives up on a 409 that does not clear: onFatal, so the process exits for its supervisor", async () => {
    fake = await FakeTelegram.start();
    for (let index = 0; index < 20; index++) fake.failNext("getUpdates", { error_code: 409, description: "Conflict: terminated by other getUpdates request" });
    const fatal: Error[] = [];
    await startAdapter(new RecordingIngress(), { onFatal: (error) => void fatal.push(error), conflictGiveUpMs: 1500 });
    await waitUntil(() => fatal.length === 1, 10_000);
    expect(fatal[0]?.message).toMatch(/409/);
    expect(logLines.some((line) => line.includes("exiting so the supervisor restarts this gateway"))).toBe(true);
  });

  it("refuses to poll over a webhook set elsewhere, unless told to take over", async () => {
    fake = await FakeTelegram.start();
    fake.setWebhookElsewhere("https://other-deployment.example.com/telegram/webhook/s3cret");
    await expect(startAdapter(new RecordingIngress())).rejects.toThrow(/a webhook is set for this bot \(host other-deployment\.example\.com\).*TELEGRAM_FORCE_POLLING/);
    expect(fake.callsOf("deleteWebhook")).toHaveLength(0);
    expect(fake.callsOf("getUpdates")).toHaveLength(0);
    expect(fake.webhookUrl).not.toBe("");
    adapter = undefined;

    const ingress = new RecordingIngress();
    await startAdapter(ingress, { forcePolling: true });
    expect(fake.callsOf("deleteWebhook")).toHaveLength(1);
    fake.pushMessage({ chat: DM, from: ADA, text: "polling now" });
    await waitUntil(() => ingress.submissions.length === 1);
  });

  it("confirms an update's offset only once its submit resolved, and hands back what is unstored at shutdown", async () => {
    fake = await FakeTelegram.start();
    let release: (() => void) | undefined;
    const ingress = new RecordingIngress(() => new Promise<SubmitResult>((resolve) => (release = () => resolve({ status: "accepted" }))));
    const started = await startAdapter(ingress);
    const first = fake.pushMessage({ chat: DM, from: ADA, text: "one" });
    await waitUntil(() => ingress.submissions.length === 1);
    // Fetched but not stored: several long polls later, Telegram still holds it.
    await sleep(300);
    expect(fake.confirmedOffset).toBeLessThanOrEqual(first.update_id);
    release?.();
    await waitUntil(() => fake.confirmedOffset > first.update_id);

    // A submit that hangs when the gateway stops: the update stays unconfirmed for the next process.
    const second = fake.pushMessage({ chat: DM, from: ADA, text: "two" });
    await waitUntil(() => ingress.submissions.length === 2);
    await started.stop();
    expect(fake.confirmedOffset).toBeLessThanOrEqual(second.update_id);
    const next = new RecordingIngress();
    await startAdapter(next);
    await waitUntil(() => next.submissions.length === 1);
    expect(next.submissions[0]?.text).toBe("two");
  });

  it("keeps chats side by side and each chat in order while submits are slow", async () => {
    fake = await FakeTelegram.start();
    const order: string[] = [];
    const ingress = new RecordingIngress(async (message) => {
      order.push(`start ${message.text}`);
      await sleep(message.text === "a1" ? 300 : 10);
      order.push(`end ${message.text}`);
      return { status: "accepted" };
    });
    await startAdapter(ingress);
    const ADA_GROUP = { ...GROUP };
    fake.pushMessage({ chat: DM, from: ADA, text: "a1" });
    fake.pushMessage({ chat: DM, from: ADA, text: "a2" });
    fake.pushMessage({ chat: ADA_GROUP, from: GRACE, text: "@longhaul_test_bot b1", entities: mention("@longhaul_test_bot b1") });
    await waitUntil(() => order.length === 6);
    // The group's message did not wait for the slow DM; the DM's second message did.
    expect(order.indexOf("end b1")).toBeLessThan(order.indexOf("end a1"));
    expect(order.indexOf("start a2")).toBeGreaterThan(order.indexOf("end a1"));
  });

  it("retries a failing submit with a bound, then tells the user and moves on", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress(() => Promise.reject(new Error("redis down")));
    await startAdapter(ingress, { submitRetryDelaysMs: [20, 20] });
    const update = fake.pushMessage({ chat: DM, from: ADA, text: "are you there?" });
    const notice = await fake.waitForCall("sendMessage");
    expect(textOf(notice)).toBe(SUBMIT_FAILED_NOTICE);
    expect(ingress.submissions).toHaveLength(3);
    await waitUntil(() => fake.confirmedOffset > update.update_id);
  });

  it("never says 'send it again' while a timed-out submit may still land: waits for it, confirms once it is stored (issue 28 item 3)", async () => {
    fake = await FakeTelegram.start();
    // A frozen Redis: the first submit's command stays queued in ioredis past every attempt's
    // timeout and every retry, then lands when Redis thaws. On main the user was told to send
    // it again (and the message was then answered as well).
    let release: (() => void) | undefined;
    const held = new Promise<void>((resolve) => { release = resolve; });
    let calls = 0;
    const ingress = new RecordingIngress(async () => {
      if (calls++ === 0) await held;
      else await new Promise(() => undefined);
      return { status: "accepted" };
    });
    await startAdapter(ingress, { submitRetryDelaysMs: [20, 20], submitAttemptTimeoutMs: 100 });
    const update = fake.pushMessage({ chat: DM, from: ADA, text: "are you there?" });
    await waitUntil(() => ingress.submissions.length === 3);
    await sleep(800);
    expect(fake.callsOf("sendMessage")).toHaveLength(0);
    expect(fake.confirmedOffset).toBeLessThanOrEqual(update.update_id);
    release?.();
    await waitUntil(() => fake.confirmedOffset > update.update_id);
    await sleep(300);
    expect(fake.callsOf("sendMessage").map(textOf)).not.toContain(SUBMIT_FAILED_NOTICE);
    expect(logLines.some((line) => line.includes("ingress submit still unanswered"))).toBe(true);
  });

  it("sends one notice for an album of uncaptioned videos (media it cannot open)", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    await startAdapter(ingress);
    const video = { file_id: "m", file_unique_id: "u", duration: 1, width: 1, height: 1 };
    for (let index = 0; index < 4; index++) fake.pushMessage({ chat: DM, from: ADA, media_group_id: "album-1", video });
    fake.pushMessage({ chat: DM, from: ADA, text: "after the album" });
    await waitUntil(() => ingress.submissions.length === 1);
    await sleep(100);
    expect(fake.callsOf("sendMessage")).toHaveLength(1);
    expect(textOf(fake.callsOf("sendMessage")[0] as RecordedCall)).toContain("video");
  });

  it("privacy mode: the rest of a long paste in a group never reaches the bot (Telegram withholds it), and the start log says so", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    await startAdapter(ingress, { botInfo: FAKE_BOT });
    const first = `@longhaul_test_bot ${"please review this log line. ".repeat(140)}`;
    fake.pushMessage({ chat: GROUP, from: GRACE, text: first, entities: mention(first) });
    fake.pushMessage({ chat: GROUP, from: GRACE, text: "the rest of the paste" });
    await waitUntil(() => ingress.submissions.length === 1);
    await sleep(200);
    expect(ingress.submissions).toHaveLength(1);
    expect(fake.withheld).toHaveLength(1);
    expect(logLines.some((line) => line.includes("privacy mode is on") && line.includes("/setprivacy"))).toBe(true);
  });

  it("several bots, privacy mode: a bare /new reaches us only when we spoke last in the group (Telegram's last-bot rule, which the fake enforces); /new@ourbot always", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    const started = await startAdapter(ingress, { botInfo: FAKE_BOT });
    const command = (text: string) => fake.pushMessage({ chat: GROUP, from: GRACE, text, entities: [{ type: "bot_command", offset: 0, length: text.length }] });
    // Another bot answered in the group after us: the bare /new is that bot's, and never reaches ours.
    await started.send(reply("an answer of ours", { platform: "telegram", chatId: String(GROUP.id) }), { fromPart: 0, onPartSent: async () => {} });
    fake.chats.botSpoke(GROUP.id, 7000000099);
    command("/new");
    command("/new@longhaul_test_bot");
    await waitUntil(() => ingress.submissions.length === 1);
    await sleep(200);
    expect(ingress.submissions.map((message) => message.text)).toEqual(["/new"]);
    expect(fake.withheld.map((update) => update.message?.text)).toEqual(["/new"]);

    // We spoke last again: the bare command is ours, and taken as ours.
    await started.send(reply("another answer", { platform: "telegram", chatId: String(GROUP.id) }), { fromPart: 0, onPartSent: async () => {} });
    command("/new");
    await waitUntil(() => ingress.submissions.length === 2);
    expect(ingress.submissions[1]?.text).toBe("/new");
  });

  it("takes the continuation of a long paste in a group when its first part addressed the bot (privacy mode off)", async () => {
    const sees = { ...FAKE_BOT, can_read_all_group_messages: true };
    fake = await FakeTelegram.start({ bot: sees });
    const ingress = new RecordingIngress();
    await startAdapter(ingress, { botInfo: sees });
    const first = `@longhaul_test_bot ${"please review this log line. ".repeat(140)}`;
    fake.pushMessage({ chat: GROUP, from: GRACE, text: first, entities: mention(first) });
    fake.pushMessage({ chat: GROUP, from: GRACE, text: "the rest of the paste" });
    fake.pushMessage({ chat: GROUP, from: ADA, text: "unrelated chatter" });
    await waitUntil(() => ingress.submissions.length === 2);
    await sleep(200);
    expect(ingress.submissions.map((message) => message.text.slice(0, 20))).toEqual(["please review this l", "the rest of the past"]);
    expect(ingress.submissions[0]?.mayContinue).toBe(true);
  });

  it("passes reply context, the forward origin and a /start payload to the ingress", async () => {
    fake = await FakeTelegram.start();
    const ingress = new RecordingIngress();
    await startAdapter(ingress);
    const bob = { id: 77, is_bot: false, first_name: "Bob" };
    fake.pushMessage({ chat: DM, from: ADA, text: "is this right?", reply_to_message: { message_id: 3, date: 1, chat: DM, from: bob, text: "the answer is 42" } as never, quote: { text: "42", position: 14 } });
    fake.pushMessage({ chat: DM, from: ADA, text: "look at this", forward_origin: { type: "user", date: 1, sender_user: bob } });
    fake.pushMessage({ chat: DM, from: ADA, text: "/start plan-42", entities: [{ type: "bot_command", offset: 0, length: 6 }] });
    await waitUntil(() => ingress.submissions.length === 3);
    expect(ingress.submissions[0]?.replyTo).toEqual({ author: "Bob", text: "the answer is 42", quote: "42" });
    expect(ingress.submissions[1]?.forwardedFrom).toBe("Bob");
    expect(ingress.submissions[2]?.text).toContain('"plan-42"');
  });

  it("follows a group upgraded to a supergroup: moves the chat once and sends to the new id", async () => {
    fake = await FakeTelegram.start();
    const moves: ChatMove[] = [];
    const ingress = Object.assign(new RecordingIngress(), {
      moveChat: async (move: ChatMove): Promise<ChatMoveResult> => {
        moves.push(move);
        return moves.length === 1 ? "moved" : "already-moved";
      },
    });
    const started = await startAdapter(ingress);
    fake.migrateChat(-4001, -1004001);
    await waitUntil(() => moves.length === 2);
    expect(moves[0]).toEqual({ platform: "telegram", fromChatId: "-4001", toChatId: "-1004001", fromSessionKey: "tg:-4001", toSessionKey: "tg:-1004001" });

    // A reply of the moved session that still names the old id follows the new one.
    await started.send({ ...reply("hello again", { platform: "telegram", chatId: "-4001" }), sessionKey: "tg:-1004001" }, { fromPart: 0, onPartSent: async () => {} });
    expect(fake.delivered(-1004001).map(textOf)).toEqual(["hello again"]);
    // A delivery of the old session stops: the moved session delivers its outbox.
    await expect(started.send(reply("old", { platform: "telegram", chatId: "-4001" }), { fromPart: 0, onPartSent: async () => {} })).rejects.toBeInstanceOf(RetryableError);
    expect(fake.delivered(-1004001)).toHaveLength(1);
  });

  it("tells the ingress when the bot is removed from a group or blocked, and confirms the update after it", async () => {
    fake = await FakeTelegram.start();
    const closed: string[] = [];
    let failFirst = true;
    const ingress = Object.assign(new RecordingIngress(), {
      chatClosed: async (platform: string, chatId: string) => {
        if (failFirst) {
          failFirst = false;
          throw new Error("redis is away");
        }
        closed.push(`${platform}:${chatId}`);
      },
    });
    await startAdapter(ingress, { submitRetryDelaysMs: [20] });
    const bot = { id: FAKE_BOT.id, is_bot: true, first_name: FAKE_BOT.first_name, username: FAKE_BOT.username };
    const membership = (chat: Record<string, unknown>, from: Record<string, unknown>, oldStatus: string, newStatus: string) => ({
      chat, from, date: 1764501000, old_chat_member: { user: bot, status: oldStatus }, new_chat_member: { user: bot, status: newStatus },
    });
    fake.pushUpdate({ update_id: 900, my_chat_member: membership(OTHER_GROUP, GRACE, "left", "member") } as unknown as Update);
    fake.pushUpdate({ update_id: 901, my_chat_member: membership(GROUP, GRACE, "member", "kicked") } as unknown as Update);
    fake.pushUpdate({ update_id: 902, my_chat_member: membership(DM, ADA, "member", "kicked") } as unknown as Update);
    await waitUntil(() => closed.length === 2 && fake.confirmedOffset > 902);
    expect(closed.sort()).toEqual([`telegram:${DM.id}`, `telegram:${GROUP.id}`].sort());
    expect(ingress.submissions).toHaveLength(0);
  });

  it("turns link previews off unless asked, stops typing on 403, and logs a group it is not allowed in once", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress(() => ({ status: "denied" })), { typingIntervalMs: 30 });
    await started.send(reply("see https://example.com", { platform: "telegram", chatId: "5012345678" }), { fromPart: 0, onPartSent: async () => {} });
    expect(fake.delivered()[0]?.payload.link_preview_options).toEqual({ is_disabled: true });

    fake.failNext("sendChatAction", { error_code: 403, description: "Forbidden: bot was blocked by the user" });
    started.onActivity({ type: "turn-started", sessionKey: "tg:5012345678", target: { platform: "telegram", chatId: "5012345678" } });
    await sleep(200);
    expect(fake.callsOf("sendChatAction")).toHaveLength(1);

    for (const text of ["@longhaul_test_bot hi", "@longhaul_test_bot again"]) fake.pushMessage({ chat: OTHER_GROUP, from: GRACE, text, entities: mention(text) });
    await waitUntil(() => fake.confirmedOffset > 0 && logLines.filter((line) => line.includes("group is not allowed")).length === 1);
    await sleep(200);
    expect(logLines.filter((line) => line.includes("group is not allowed"))).toHaveLength(1);
    expect(fake.callsOf("sendMessage")).toHaveLength(1);
    await started.stop();

    adapter = undefined;
    const withPreviews = await startAdapter(new RecordingIngress(), { linkPreviews: true });
    await withPreviews.send(reply("see https://example.com", { platform: "telegram", chatId: "5012345678" }), { fromPart: 0, onPartSent: async () => {} });
    expect(fake.delivered()[1]?.payload.link_preview_options).toBeUndefined();
  });

  it("reports the connection down when the Bot API is unreachable, and stops cleanly", async () => {
    fake = await FakeTelegram.start();
    const started = await startAdapter(new RecordingIngress(), { typingIntervalMs: 50 });
    await fake.waitForCall("getUpdates");
    await fake.close();
    await waitUntil(() => !started.isConnected(), 8000);
    started.onActivity({ type: "turn-started", sessionKey: "tg:1", target: { platform: "telegram", chatId: "1" } });
    await sleep(100);
    await started.stop();
    await started.stop();
    expect(started.isConnected()).toBe(false);
    expect(logLines.some((line) => line.includes("getUpdates failed"))).toBe(true);
  });
});
