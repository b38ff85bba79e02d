import { describe, expect, it } from "vitest";
import { toInboundMessage, type DiscordMessageFacts, type InboundRules } from "../../../../src/adapters/discord/to-inbound-message.js";

const BOT = "100000000000000001";
const CHANNEL = "300000000000000001";
const ALWAYS_ON = "300000000000000002";
const THREAD = "300000000000000003";
const DM_CHANNEL = "300000000000000004";
const USER = "400000000000000001";

const rules: InboundRules = { botUserId: BOT, alwaysOnChannels: new Set([ALWAYS_ON]), maxMessageChars: 50 };

/** A guild message from a person, not addressed to the bot. */
const facts = (overrides: Partial<DiscordMessageFacts> = {}): DiscordMessageFacts => ({
  id: "600000000000000001",
  channelId: CHANNEL,
  threadParentId: null,
  isDirectMessage: false,
  author: { id: USER, username: "ada", globalName: "Ada L.", isBot: false, isSystem: false },
  memberNickname: null,
  content: "hello there",
  createdTimestamp: 1_796_032_800_000,
  isSystemMessage: false,
  mentionsBot: false,
  mentionedUsers: [],
  repliedToUserId: null,
  ...overrides,
});

const mentioned = (content: string, overrides: Partial<DiscordMessageFacts> = {}): DiscordMessageFacts =>
  facts({ content, mentionsBot: true, mentionedUsers: [{ id: BOT, name: "longhaul" }], ...overrides });

describe("toInboundMessage", () => {
  it("ignores a guild message that neither mentions nor replies to the bot", () => {
    expect(toInboundMessage(facts(), rules)).toEqual({ kind: "ignore", reason: "not-addressed" });
  });

  it("takes a guild message that mentions the bot, without the mention", () => {
    const decision = toInboundMessage(mentioned(`<@${BOT}> how do I rotate logs?`, { memberNickname: "Ada (ops)" }), rules);
    expect(decision).toEqual({
      kind: "submit",
      message: {
        platform: "discord", sessionKey: `dc:${CHANNEL}`, messageId: "600000000000000001", chatId: CHANNEL, userId: USER,
        userName: "Ada (ops)", chatType: "group", text: "how do I rotate logs?", sentAt: 1_796_032_800_000,
      },
    });
  });

  it("strips the nickname form of the mention too, wherever it is, and names other mentioned users", () => {
    const decision = toInboundMessage(
      mentioned(`ask <@!${BOT}> about <@${USER}>'s plan and <@999>`, { mentionedUsers: [{ id: BOT, name: "longhaul" }, { id: USER, name: "Ada L." }] }),
      rules,
    );
    expect(decision.kind === "submit" && decision.message.text).toBe("ask about @Ada L.'s plan and <@999>");
  });

  it("forwards text commands as they are", () => {
    const decision = toInboundMessage(mentioned(`<@${BOT}> /compress the deployment plan`), rules);
    expect(decision.kind === "submit" && decision.message.text).toBe("/compress the deployment plan");
  });

  it("does not count @everyone or @here from a user as a mention of the bot", () => {
    const everyone = facts({ content: "@everyone standup in 5 @here" });
    expect(toInboundMessage(everyone, rules)).toEqual({ kind: "ignore", reason: "not-addressed" });
  });

  it("takes a reply to one of the bot's messages without a mention", () => {
    const decision = toInboundMessage(facts({ content: "and for nginx?", repliedToUserId: BOT }), rules);
    expect(decision).toMatchObject({ kind: "submit", message: { text: "and for nginx?" } });
  });

  it("ignores a reply to someone else", () => {
    expect(toInboundMessage(facts({ repliedToUserId: USER }), rules)).toEqual({ kind: "ignore", reason: "not-addressed" });
  });

  it("takes every message in an always-on channel, and in its threads", () => {
    expect(toInboundMessage(facts({ channelId: ALWAYS_ON }), rules)).toMatchObject({ kind: "submit", message: { sessionKey: `dc:${ALWAYS_ON}` } });
    expect(toInboundMessage(facts({ channelId: THREAD, threadParentId: ALWAYS_ON }), rules))
      .toMatchObject({ kind: "submit", message: { sessionKey: `dc:${THREAD}`, parentChatId: ALWAYS_ON } });
  });

  it("gives a thread its own session and names its parent channel", () => {
    const decision = toInboundMessage(mentioned(`<@${BOT}> summarize`, { channelId: THREAD, threadParentId: CHANNEL }), rules);
    expect(decision).toMatchObject({
      kind: "submit",
      message: { sessionKey: `dc:${THREAD}`, chatId: THREAD, parentChatId: CHANNEL, chatType: "group", text: "summarize" },
    });
  });

  it("takes every DM as a private session keyed by the user", () => {
    const decision = toInboundMessage(facts({ channelId: DM_CHANNEL, isDirectMessage: true, content: "/status" }), rules);
    expect(decision).toEqual({
      kind: "submit",
      message: {
        platform: "discord", sessionKey: `dc:dm:${USER}`, messageId: "600000000000000001", chatId: DM_CHANNEL, userId: USER,
        userName: "Ada L.", chatType: "private", text: "/status", sentAt: 1_796_032_800_000,
      },
    });
  });

  it("names the speaker by nickname, then global name, then username", () => {
    const name = (overrides: Partial<DiscordMessageFacts>): string | false => {
      const decision = toInboundMessage(facts({ channelId: ALWAYS_ON, ...overrides }), rules);
      return decision.kind === "submit" && decision.message.userName;
    };
    expect(name({ memberNickname: "Ada (ops)" })).toBe("Ada (ops)");
    expect(name({})).toBe("Ada L.");
    expect(name({ author: { id: USER, username: "ada", globalName: null, isBot: false, isSystem: false } })).toBe("ada");
  });

  it("ignores its own messages, other bots, and system messages, even when addressed", () => {
    const botAuthor = { id: "400000000000000003", username: "otherbot", globalName: null, isBot: true, isSystem: false };
    expect(toInboundMessage(mentioned("hi", { author: { id: BOT, username: "longhaul", globalName: null, isBot: true, isSystem: false } }), rules))
      .toEqual({ kind: "ignore", reason: "own-message" });
    expect(toInboundMessage(mentioned(`<@${BOT}> hi`, { author: botAuthor }), rules)).toEqual({ kind: "ignore", reason: "bot-author" });
    expect(toInboundMessage(facts({ isDirectMessage: true, isSystemMessage: true }), rules)).toEqual({ kind: "ignore", reason: "system-message" });
  });

  it("ignores a bare mention or an attachment-only message: nothing to answer", () => {
    expect(toInboundMessage(mentioned(`<@${BOT}>`), rules)).toEqual({ kind: "ignore", reason: "empty" });
    expect(toInboundMessage(facts({ isDirectMessage: true, content: "" }), rules)).toEqual({ kind: "ignore", reason: "empty" });
  });

  it("truncates text over maxMessageChars and reports the original length, never splitting an emoji", () => {
    const long = toInboundMessage(facts({ isDirectMessage: true, content: "y".repeat(80) }), rules);
    expect(long).toMatchObject({ kind: "submit", truncatedFrom: 80, message: { text: "y".repeat(50) } });

    const emoji = toInboundMessage(facts({ isDirectMessage: true, content: `${"y".repeat(49)}😀 tail` }), rules);
    expect(emoji.kind === "submit" && emoji.message.text).toBe("y".repeat(49));
    expect(toInboundMessage(facts({ isDirectMessage: true, content: "y".repeat(50) }), rules)).not.toHaveProperty("truncatedFrom");
  });
});
