import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { Update } from "grammy/types";
import { showsOtherBot, toInboundMessage, type Intake, type IntakeOptions } from "../../../../src/adapters/telegram/to-inbound-message.js";

const options: IntakeOptions = { bot: { id: 7000000001, username: "longhaul_test_bot" }, maxMessageChars: 16_000 };

const fixture = (name: string): Update =>
  JSON.parse(readFileSync(new URL(`../../../fixtures/telegram/${name}.json`, import.meta.url), "utf8")) as Update;

function submitted(intake: Intake) {
  if (intake.kind !== "message") throw new Error(`expected a message, got ${intake.kind}: ${"reason" in intake ? intake.reason : ""}`);
  return intake;
}

describe("toInboundMessage", () => {
  it("normalises a private message", () => {
    const { message, target } = submitted(toInboundMessage(fixture("dm-text"), options));
    expect(message).toEqual({
      platform: "telegram",
      sessionKey: "tg:5012345678",
      messageId: "1201",
      chatId: "5012345678",
      userId: "5012345678",
      userName: "Ada Lovelace",
      chatType: "private",
      text: "Can you summarise what we decided about the database last week?",
      sentAt: 1764500000 * 1000,
    });
    expect(target).toEqual({ platform: "telegram", chatId: "5012345678", replyToMessageId: "1201" });
  });

  it("takes a group message that mentions the bot, without the mention", () => {
    const { message } = submitted(toInboundMessage(fixture("group-mention"), options));
    expect(message).toMatchObject({
      sessionKey: "tg:-1001987654321",
      chatType: "group",
      userId: "6111222333",
      userName: "Grace Hopper",
      text: "what does COBOL stand for?",
    });
  });

  it("matches the mention case-insensitively and keeps other mentions", () => {
    const { message } = submitted(toInboundMessage(fixture("group-mention-middle"), options));
    expect(message.text).toBe("hey can you check @someone_else's idea?");
  });

  it("ignores a group message that does not address the bot", () => {
    expect(toInboundMessage(fixture("group-no-mention"), options)).toEqual({ kind: "ignore", reason: "group message not addressed to the bot" });
  });

  it("takes a reply to one of the bot's messages in a group", () => {
    const { message } = submitted(toInboundMessage(fixture("group-reply-to-bot"), options));
    expect(message).toMatchObject({ text: "and who designed it?", chatType: "group", sessionKey: "tg:-1001987654321" });
  });

  it("takes /cmd@bot as the bare command and ignores commands for other bots", () => {
    const { message } = submitted(toInboundMessage(fixture("group-command-with-botname"), options));
    expect(message.text).toBe("/compress keep the naming decisions");
    expect(toInboundMessage(fixture("group-command-other-bot"), options)).toEqual({ kind: "ignore", reason: "command for another bot" });
  });

  it("takes our own commands without a suffix in groups (clients drop it when we are the only bot)", () => {
    const update = fixture("group-no-mention");
    const message = { ...update.message!, text: "/status", entities: [{ type: "bot_command" as const, offset: 0, length: 7 }] };
    expect(submitted(toInboundMessage({ ...update, message }, options)).message.text).toBe("/status");
    const foreign = { ...message, text: "/weather", entities: [{ type: "bot_command" as const, offset: 0, length: 8 }] };
    expect(toInboundMessage({ ...update, message: foreign }, options).kind).toBe("ignore");
  });

  it("in a group with another bot, takes only /new@ourbot, not a bare /new (unless privacy mode: Telegram then gives it to the bot that spoke last)", () => {
    const update = fixture("group-no-mention");
    const bare = { ...update.message!, text: "/new", entities: [{ type: "bot_command" as const, offset: 0, length: 4 }] };
    const addressed = { ...bare, text: "/new@longhaul_test_bot", entities: [{ type: "bot_command" as const, offset: 0, length: 22 }] };
    const withOtherBot = { ...options, hasOtherBot: () => true, privacyMode: false };
    expect(toInboundMessage({ ...update, message: bare }, withOtherBot)).toEqual({ kind: "ignore", reason: "group message not addressed to the bot" });
    expect(submitted(toInboundMessage({ ...update, message: addressed }, withOtherBot)).message.text).toBe("/new");
    expect(submitted(toInboundMessage({ ...update, message: bare }, { ...options, hasOtherBot: () => false, privacyMode: false })).message.text).toBe("/new");
    expect(submitted(toInboundMessage({ ...update, message: bare }, { ...options, hasOtherBot: () => true, privacyMode: true })).message.text).toBe("/new");
  });

  it("learns of another bot from one joining, a command for it, or a reply to it", () => {
    const update = fixture("group-no-mention");
    const base = update.message!;
    const otherBot = { id: 7000000099, is_bot: true as const, first_name: "Other", username: "other_bot" };
    expect(showsOtherBot(base, 7000000001, "longhaul_test_bot")).toBe(false);
    expect(showsOtherBot({ ...base, new_chat_members: [otherBot] } as typeof base, 7000000001, "longhaul_test_bot")).toBe(true);
    expect(showsOtherBot({ ...base, text: "/new@other_bot", entities: [{ type: "bot_command", offset: 0, length: 14 }] }, 7000000001, "longhaul_test_bot")).toBe(true);
    expect(showsOtherBot({ ...base, text: "/new@longhaul_test_bot", entities: [{ type: "bot_command", offset: 0, length: 22 }] }, 7000000001, "longhaul_test_bot")).toBe(false);
    expect(showsOtherBot({ ...base, reply_to_message: { ...base, from: otherBot } } as typeof base, 7000000001, "longhaul_test_bot")).toBe(true);
  });

  it("takes every command of ours without a suffix in a group, those outside the menu too", () => {
    const update = fixture("group-no-mention");
    for (const name of ["memory", "forget", "pin", "unpin", "context", "model", "persona", "budget", "pair", "tools", "timezone"]) {
      const text = `/${name} x`;
      const message = { ...update.message!, text, entities: [{ type: "bot_command" as const, offset: 0, length: name.length + 1 }] };
      expect(submitted(toInboundMessage({ ...update, message }, options)).message.text, name).toBe(text);
    }
  });

  it("keys a forum topic message by chat and topic and carries the thread id back", () => {
    const { message, target } = submitted(toInboundMessage(fixture("forum-topic"), options));
    expect(message).toMatchObject({ sessionKey: "tg:-1002233445566:2040", threadId: "2040", text: "draft the release notes" });
    expect(target).toEqual({ platform: "telegram", chatId: "-1002233445566", threadId: "2040", replyToMessageId: "2055" });
  });

  it("does not take the topic's root message for a reply to the bot", () => {
    expect(toInboundMessage(fixture("forum-topic-unaddressed"), options)).toMatchObject({ kind: "ignore" });
  });

  it("gives a reply thread in a plain group no topic (its message_thread_id is not a topic)", () => {
    const { message, target } = submitted(toInboundMessage(fixture("group-reply-thread-not-topic"), options));
    expect(message.sessionKey).toBe("tg:-1001987654321");
    expect(message.threadId).toBeUndefined();
    expect(target.threadId).toBeUndefined();
  });

  it("reads a caption as text and takes the photo or file as an attachment reference (no bytes)", () => {
    const photo = submitted(toInboundMessage(fixture("photo-with-caption"), options)).message;
    expect(photo.text).toBe("what is wrong with this stack trace?");
    expect(photo.attachments).toEqual([expect.objectContaining({ kind: "image", label: "photo", inline: true, source: expect.objectContaining({ platform: "telegram" }) })]);
    const document = submitted(toInboundMessage(fixture("document-with-caption"), options)).message;
    expect(document.text).toBe("see page 3");
    expect(document.attachments).toEqual([{
      kind: "document", label: "file", name: "report.pdf", mimeType: "application/pdf", size: 204800,
      source: { platform: "telegram", fileId: "BQACAgIAAxkBAAIBtmZ-doc", fileUniqueId: "AgADdoc" },
    }]);
  });

  it.each([
    ["photo-no-caption", "image"],
    ["voice", "audio"],
  ])("takes %s without a caption as a message with an empty text and one %s attachment", (name, kind) => {
    const { message } = submitted(toInboundMessage(fixture(name), options));
    expect(message.text).toBe("");
    expect(message.attachments).toEqual([expect.objectContaining({ kind })]);
  });

  it("reads a sticker as its emoji; a sticker without one gets a polite note naming it", () => {
    const { message } = submitted(toInboundMessage(fixture("sticker"), options));
    expect(message.text).toBe("[sticker] 👍");
    expect(message.attachments).toBeUndefined();
    const update = fixture("sticker");
    const { emoji: _emoji, ...sticker } = (update.message as unknown as { sticker: Record<string, unknown> }).sticker;
    const bare = { ...update, message: { ...update.message!, sticker } } as unknown as Update;
    const intake = toInboundMessage(bare, options);
    expect(intake).toMatchObject({ kind: "answer-directly", reason: "unsupported-media", target: { chatId: "5012345678" } });
    expect(intake.kind === "answer-directly" && intake.text).toContain("this sticker");
  });

  it("takes a GIF as its first frame (an image), not as an MP4 file it cannot open", () => {
    const update = fixture("photo-no-caption");
    const file = { file_id: "CgACAgIAAxkBAAIBgif", file_unique_id: "AgADgif", file_name: "dance.gif.mp4", mime_type: "video/mp4", file_size: 90_000 };
    const thumbnail = { file_id: "AAMCAgADgifthumb", file_unique_id: "AQADthumb", width: 320, height: 180, file_size: 4_000 };
    const { photo: _photo, ...rest } = update.message as unknown as Record<string, unknown>;
    const gif = { ...update, message: { ...rest, caption: "look", animation: { ...file, width: 320, height: 180, duration: 3, thumbnail }, document: { ...file, thumbnail } } } as unknown as Update;
    const { message } = submitted(toInboundMessage(gif, options));
    expect(message.text).toBe("look");
    expect(message.attachments).toEqual([expect.objectContaining({ kind: "image", mimeType: "image/jpeg", width: 320, height: 180, source: expect.objectContaining({ fileId: "AAMCAgADgifthumb" }) })]);
    const { thumbnail: _thumbnail, ...noThumbnail } = file as typeof file & { thumbnail?: unknown };
    const bare = { ...update, message: { ...rest, animation: { ...noThumbnail, width: 1, height: 1, duration: 1 }, document: noThumbnail } } as unknown as Update;
    const intake = toInboundMessage(bare, options);
    expect(intake.kind === "answer-directly" && intake.text).toContain("GIF");
  });

  it("marks album items so the worker joins them, and takes an uncaptioned group album item when its album addressed the bot", () => {
    const update = fixture("photo-no-caption");
    const item = { ...update, message: { ...update.message!, media_group_id: "album-1" } } as Update;
    const { message } = submitted(toInboundMessage(item, options));
    expect(message).toMatchObject({ mediaGroupId: "album-1", mayContinue: true });
    const group = { id: -1001987654321, type: "supergroup" as const, title: "G" };
    const inGroup = { ...item, message: { ...item.message!, chat: group } } as Update;
    expect(toInboundMessage(inGroup, options)).toMatchObject({ kind: "ignore" });
    expect(toInboundMessage(inGroup, { ...options, continuesAlbum: (id) => id === "album-1" })).toMatchObject({ kind: "message" });
  });

  it("answers /start directly with a greeting that names the bot", () => {
    const intake = toInboundMessage(fixture("start"), options);
    expect(intake).toMatchObject({ kind: "answer-directly", reason: "start" });
    expect(intake.kind === "answer-directly" && intake.text).toContain("@longhaul_test_bot");
  });

  it("ignores edited messages, service messages and messages from bots", () => {
    expect(toInboundMessage(fixture("edited-message"), options)).toMatchObject({ kind: "ignore", reason: expect.stringContaining("edited") });
    expect(toInboundMessage(fixture("new-chat-members"), options)).toEqual({ kind: "ignore", reason: "service message" });
    const update = fixture("dm-text");
    const fromBot = { ...update.message!, from: { id: 99, is_bot: true, first_name: "Other" } };
    expect(toInboundMessage({ ...update, message: fromBot }, options)).toEqual({ kind: "ignore", reason: "message from a bot" });
  });

  it("speaks for an anonymous admin as the group", () => {
    const { message } = submitted(toInboundMessage(fixture("anonymous-admin"), options));
    expect(message).toMatchObject({ userId: "-1001987654321", userName: "Compiler nerds", text: "pin the summary please" });
  });

  it("reports a malformed update instead of throwing", () => {
    expect(toInboundMessage(fixture("malformed"), options)).toMatchObject({ kind: "malformed" });
    expect(toInboundMessage({ update_id: 1 } as Update, options)).toMatchObject({ kind: "ignore" });
  });

  it("truncates oversize text with a marker and reports the original length", () => {
    const update = fixture("dm-text");
    const text = `${"a".repeat(299)}😀${"b".repeat(700)}`;
    const intake = submitted(toInboundMessage({ ...update, message: { ...update.message!, text } }, { ...options, maxMessageChars: 322 }));
    expect(intake.truncatedFrom).toBe(text.length);
    expect(intake.message.text.length).toBeLessThanOrEqual(322);
    expect(intake.message.text).toMatch(/^a{299}\n\[… message truncated\]$/);
  });
  it("turns both service messages of a supergroup upgrade into one move", () => {
    const base = { update_id: 1, message: { message_id: 1, date: 1, from: { id: 42, is_bot: false, first_name: "Ada" } } };
    const oldSide = toInboundMessage({ ...base, message: { ...base.message, chat: { id: -4001, type: "group", title: "G" }, migrate_to_chat_id: -1004001 } } as never, options);
    const newSide = toInboundMessage({ ...base, message: { ...base.message, chat: { id: -1004001, type: "supergroup", title: "G" }, migrate_from_chat_id: -4001 } } as never, options);
    expect(oldSide).toEqual({ kind: "migrate", fromChatId: "-4001", toChatId: "-1004001" });
    expect(newSide).toEqual(oldSide);
  });

  it("closes a chat the bot was removed from or blocked in, and ignores being added", () => {
    expect(toInboundMessage(fixture("my-chat-member-kicked"), options)).toEqual({ kind: "chat-closed", chatId: "-1001987654321", status: "kicked" });
    expect(toInboundMessage(fixture("my-chat-member-blocked"), options)).toEqual({ kind: "chat-closed", chatId: "5012345678", status: "kicked" });
    const left = fixture("my-chat-member-kicked");
    left.my_chat_member!.new_chat_member = { ...left.my_chat_member!.new_chat_member, status: "left" } as never;
    expect(toInboundMessage(left, options)).toEqual({ kind: "chat-closed", chatId: "-1001987654321", status: "left" });
    expect(toInboundMessage(fixture("my-chat-member-added"), options).kind).toBe("ignore");
    expect(toInboundMessage({ update_id: 1, my_chat_member: { chat: { id: -5 } } } as never, options).kind).toBe("malformed");
  });

  it("gives the model what a message replies to, quotes or forwards, and never the topic's root", () => {
    const dm = { id: 5, type: "private", first_name: "Ada" };
    const from = { id: 5, is_bot: false, first_name: "Ada" };
    const take = (fields: Record<string, unknown>) => {
      const intake = toInboundMessage({ update_id: 1, message: { message_id: 9, date: 1, chat: dm, from, text: "is this right?", ...fields } } as never, options);
      if (intake.kind !== "message") throw new Error(intake.kind);
      return intake.message;
    };
    const long = "word ".repeat(300);
    expect(take({ reply_to_message: { message_id: 3, date: 1, chat: dm, from: { id: 77, is_bot: false, first_name: "Bob" }, text: long } }).replyTo?.text).toMatch(/…$/);
    expect(take({ reply_to_message: { message_id: 3, date: 1, chat: dm, from: { id: 77, is_bot: false, first_name: "Bob" }, photo: [{}], caption: "my cat" } }).replyTo).toEqual({ author: "Bob", text: "[photo] my cat" });
    expect(take({ reply_to_message: { message_id: 3, date: 1, chat: dm, from: { id: options.bot.id, is_bot: true, first_name: "Longhaul" }, text: "2 + 2 = 5" } }).replyTo).toEqual({ author: "you (the assistant)", text: "2 + 2 = 5", isBot: true });
    expect(take({ external_reply: { origin: { type: "channel", date: 1, chat: { id: -100, type: "channel", title: "News" } } }, quote: { text: "rates rise", position: 0 } }).replyTo).toEqual({ author: "News", text: "rates rise", quote: "rates rise" });
    expect(take({ forward_origin: { type: "hidden_user", date: 1, sender_user_name: "Anon Y." } }).forwardedFrom).toBe("Anon Y.");
    expect(take({ is_topic_message: true, message_thread_id: 3, reply_to_message: { message_id: 3, date: 1, chat: dm, forum_topic_created: { name: "t", icon_color: 1 } } }).replyTo).toBeUndefined();
  });

  it("marks a message long enough to be the first part of a split paste", () => {
    const intake = toInboundMessage({ update_id: 1, message: { message_id: 9, date: 1, chat: { id: 5, type: "private", first_name: "Ada" }, from: { id: 5, is_bot: false, first_name: "Ada" }, text: "z".repeat(4096) } } as never, options);
    expect(intake.kind === "message" && intake.message.mayContinue).toBe(true);
  });
});
