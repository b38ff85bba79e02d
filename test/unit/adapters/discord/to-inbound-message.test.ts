import { describe, expect, it } from "vitest";
import {
  completeInbound, planInbound, replyContextFrom, truncate, type AttachmentFacts, type DiscordMessageFacts, type InboundOutcome, type InboundRules, type ReadFile,
} from "../../../../src/adapters/discord/to-inbound-message.js";
import { awaitsGifEmbed } from "../../../../src/adapters/discord/gifs.js";

const BOT = "100000000000000001";
const BOT_ROLE = "200000000000000002";
const STAFF_ROLE = "200000000000000003";
const CHANNEL = "300000000000000001";
const ALWAYS_ON = "300000000000000002";
const THREAD = "300000000000000003";
const DM_CHANNEL = "300000000000000004";
const USER = "400000000000000001";
const MAX_FILE_BYTES = 200;

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
  botRoleId: BOT_ROLE,
  mentionedUsers: [],
  repliedToUserId: null,
  replyReference: null,
  forwardedFrom: null,
  attachments: [],
  ...overrides,
});

const mentioned = (content: string, overrides: Partial<DiscordMessageFacts> = {}): DiscordMessageFacts =>
  facts({ content, mentionsBot: true, mentionedUsers: [{ id: BOT, name: "longhaul" }], ...overrides });

const file = (name: string, contentType: string | null, size = 100): AttachmentFacts => ({ id: `a-${name}`, name, size, contentType, url: `https://cdn.example/${name}` });

/** Plans, then completes with the given file contents (as the adapter would after reading them). */
function run(input: DiscordMessageFacts, read: (file: AttachmentFacts) => ReadFile = (f) => ({ name: f.name, text: `contents of ${f.name}` }), using = rules): InboundOutcome {
  const decision = planInbound(input, using, MAX_FILE_BYTES);
  if (decision.kind === "ignore") return decision;
  return completeInbound(decision.plan, decision.plan.textFiles.map(read), undefined, input, using);
}

const textOf = (outcome: InboundOutcome): string | undefined => (outcome.kind === "submit" ? outcome.message.text : undefined);

describe("planInbound / completeInbound", () => {
  it("ignores a guild message that neither mentions nor replies to the bot", () => {
    expect(run(facts())).toEqual({ kind: "ignore", reason: "not-addressed" });
  });

  it("takes a guild message that mentions the bot, without the mention", () => {
    expect(run(mentioned(`<@${BOT}> how do I rotate logs?`, { memberNickname: "Ada (ops)" }))).toEqual({
      kind: "submit",
      message: {
        platform: "discord", sessionKey: `dc:${CHANNEL}`, messageId: "600000000000000001", chatId: CHANNEL, userId: USER,
        userName: "Ada (ops)", chatType: "group", text: "how do I rotate logs?", sentAt: 1_796_032_800_000,
      },
    });
  });

  it("counts a mention of the bot's managed role (what autocomplete inserts) and strips it; another role does not count", () => {
    expect(textOf(run(facts({ content: `<@&${BOT_ROLE}> what changed in v2?` })))).toBe("what changed in v2?");
    expect(run(facts({ content: `<@&${STAFF_ROLE}> standup?` }))).toEqual({ kind: "ignore", reason: "not-addressed" });
    // Without a managed role in this guild (botRoleId null) a role mention never counts.
    expect(run(facts({ content: `<@&${BOT_ROLE}> hi`, botRoleId: null }))).toEqual({ kind: "ignore", reason: "not-addressed" });
    // Other roles stay in the text for the model.
    expect(textOf(run(facts({ content: `<@&${BOT_ROLE}> ping <@&${STAFF_ROLE}> about it` })))).toBe(`ping <@&${STAFF_ROLE}> about it`);
  });

  it("strips the nickname form of the mention too, wherever it is, and names other mentioned users", () => {
    const outcome = run(mentioned(`ask <@!${BOT}> about <@${USER}>'s plan and <@999>`, { mentionedUsers: [{ id: BOT, name: "longhaul" }, { id: USER, name: "Ada L." }] }));
    expect(textOf(outcome)).toBe("ask about @Ada L.'s plan and <@999>");
  });

  it("does not count @everyone or @here from a user as a mention of the bot", () => {
    expect(run(facts({ content: "@everyone standup in 5 @here" }))).toEqual({ kind: "ignore", reason: "not-addressed" });
  });

  it("takes a reply to one of the bot's messages without a mention, but not a reply to someone else", () => {
    expect(textOf(run(facts({ content: "and for nginx?", repliedToUserId: BOT })))).toBe("and for nginx?");
    expect(run(facts({ repliedToUserId: USER }))).toEqual({ kind: "ignore", reason: "not-addressed" });
  });

  it("takes every message in an always-on channel and its threads; a thread is its own session", () => {
    expect(run(facts({ channelId: ALWAYS_ON }))).toMatchObject({ kind: "submit", message: { sessionKey: `dc:${ALWAYS_ON}` } });
    expect(run(facts({ channelId: THREAD, threadParentId: ALWAYS_ON }))).toMatchObject({ kind: "submit", message: { sessionKey: `dc:${THREAD}`, parentChatId: ALWAYS_ON } });
    expect(run(mentioned(`<@${BOT}> summarize`, { channelId: THREAD, threadParentId: CHANNEL }))).toMatchObject({
      kind: "submit", message: { sessionKey: `dc:${THREAD}`, chatId: THREAD, parentChatId: CHANNEL, chatType: "group", text: "summarize" },
    });
  });

  it("takes every DM as a private session keyed by the user", () => {
    expect(run(facts({ channelId: DM_CHANNEL, isDirectMessage: true, content: "/status" }))).toEqual({
      kind: "submit",
      message: {
        platform: "discord", sessionKey: `dc:dm:${USER}`, messageId: "600000000000000001", chatId: DM_CHANNEL, userId: USER,
        userName: "Ada L.", chatType: "private", text: "/status", sentAt: 1_796_032_800_000,
      },
    });
  });

  it("ignores its own messages, other bots, system messages and a bare mention", () => {
    const botAuthor = { id: "400000000000000003", username: "otherbot", globalName: null, isBot: true, isSystem: false };
    expect(run(mentioned("hi", { author: { id: BOT, username: "longhaul", globalName: null, isBot: true, isSystem: false } }))).toEqual({ kind: "ignore", reason: "own-message" });
    expect(run(mentioned(`<@${BOT}> hi`, { author: botAuthor }))).toEqual({ kind: "ignore", reason: "bot-author" });
    expect(run(facts({ isDirectMessage: true, isSystemMessage: true }))).toEqual({ kind: "ignore", reason: "system-message" });
    expect(run(mentioned(`<@${BOT}>`))).toEqual({ kind: "ignore", reason: "empty" });
  });

  describe("attachments", () => {
    const dm = (overrides: Partial<DiscordMessageFacts>): DiscordMessageFacts => facts({ isDirectMessage: true, channelId: DM_CHANNEL, content: "", ...overrides });

    it("reads a paste Discord turned into message.txt as the message's text", () => {
      const outcome = run(dm({ attachments: [file("message.txt", "text/plain; charset=utf-8")] }), () => ({ name: "message.txt", text: "\uFEFFthe whole paste" }));
      expect(textOf(outcome)).toBe("the whole paste");
      expect(outcome).not.toHaveProperty("notice");
    });

    it("reads other text/* files after the typed text, marked where each starts and ends", () => {
      const outcome = run(dm({ content: "review this please", attachments: [file("deploy.py", "text/x-python"), file("notes.md", "text/markdown; charset=utf-8")] }), undefined, { ...rules, maxMessageChars: 500 });
      expect(textOf(outcome)).toBe("review this please\n\n[file deploy.py, its text:]\ncontents of deploy.py\n[end of deploy.py]\n\n[file notes.md, its text:]\ncontents of notes.md\n[end of notes.md]");
    });

    it("passes pictures, audio and other files on as references for the worker (no bytes), even without text", () => {
      const outcome = run(dm({ attachments: [file("photo.png", "image/png"), file("voice-message.ogg", "audio/ogg"), file("scan.pdf", "application/pdf")] }));
      expect(outcome).toMatchObject({ kind: "submit", message: { text: "" } });
      const attachments = outcome.kind === "submit" ? outcome.message.attachments : undefined;
      expect(attachments?.map((attachment) => [attachment.kind, attachment.label, attachment.name])).toEqual([
        ["image", "image", "photo.png"], ["audio", "voice message", "voice-message.ogg"], ["document", "file", "scan.pdf"],
      ]);
      expect(attachments?.[0]?.source).toMatchObject({ platform: "discord", attachmentId: expect.any(String), messageId: expect.any(String), channelId: expect.any(String) });
    });

    it("answers a message whose only file it cannot read with one notice and submits nothing", () => {
      const outcome = run(dm({ attachments: [file("huge.log", "text/plain", MAX_FILE_BYTES + 1)] }));
      expect(outcome).toEqual({ kind: "notice", notice: "I couldn't read huge.log (too large). Please send it as text." });
    });

    it("submits the text and adds one notice for the text files it skipped (too large, failed download)", () => {
      const outcome = run(
        dm({ content: "see attached", attachments: [file("photo.png", "image/png"), file("huge.log", "text/plain", MAX_FILE_BYTES + 1), file("flaky.txt", "text/plain")] }),
        (f) => ({ name: f.name, failure: "failed" }),
      );
      expect(outcome).toEqual({
        kind: "submit",
        message: expect.objectContaining({ text: "see attached", attachments: [expect.objectContaining({ kind: "image", name: "photo.png" })] }),
        notice: "I couldn't read huge.log (too large), flaky.txt (download failed).",
      });
    });

    it("in a guild, takes a paste whose message.txt mentions the bot (the mention moved into the file), and not one that does not", () => {
      const paste = facts({ content: "", attachments: [file("message.txt", "text/plain; charset=utf-8")] });
      expect(planInbound(paste, rules, MAX_FILE_BYTES)).toMatchObject({ kind: "take", plan: { addressed: "if-a-file-mentions-it" } });
      expect(textOf(run(paste, () => ({ name: "message.txt", text: `<@${BOT}> why does this fail?\n${"trace\n".repeat(3)}` })))).toBe(`why does this fail?\n${"trace\n".repeat(3)}`.trim());
      expect(textOf(run(paste, () => ({ name: "message.txt", text: `<@&${BOT_ROLE}> and this?` })))).toBe("and this?");
      expect(run(paste, () => ({ name: "message.txt", text: "a log for the team" }))).toEqual({ kind: "ignore", reason: "not-addressed" });
      // Another file type in a guild does not get downloaded just to look for a mention.
      expect(run(facts({ content: "", attachments: [file("notes.md", "text/markdown")] }))).toEqual({ kind: "ignore", reason: "not-addressed" });
    });

    it("cuts text over maxMessageChars (one notice), never inside an emoji or a flag", () => {
      const long = run(dm({ content: "y".repeat(80) }));
      expect(long).toMatchObject({ kind: "submit", message: { text: "y".repeat(50) }, notice: "Your message was 80 characters long; I only read the first 50." });
      expect(textOf(run(dm({ content: `${"y".repeat(48)}🇫🇷 tail` })))).toBe("y".repeat(48));
      expect(textOf(run(dm({ content: `${"y".repeat(46)}👩‍👩‍👧 tail` })))).toBe("y".repeat(46));
      expect(run(dm({ content: "y".repeat(50) }))).not.toHaveProperty("notice");
    });
  });

  it("marks a forwarded message with where it came from", () => {
    expect(run(facts({ isDirectMessage: true, content: "the build is red", forwardedFrom: "#ci (Acme)" }))).toMatchObject({
      kind: "submit", message: { text: "the build is red", forwardedFrom: "#ci (Acme)" },
    });
  });

  it("puts the reply context into the message", () => {
    const decision = planInbound(facts({ content: "is this right?", channelId: ALWAYS_ON }), rules, MAX_FILE_BYTES);
    if (decision.kind !== "take") throw new Error("taken expected");
    const outcome = completeInbound(decision.plan, [], { author: "Bob", text: "use rsync -a", isBot: false }, facts(), rules);
    expect(outcome).toMatchObject({ kind: "submit", message: { text: "is this right?", replyTo: { author: "Bob", text: "use rsync -a", isBot: false } } });
  });
});

describe("replyContextFrom", () => {
  it("names the author, renders mentions and trims the text to REPLY_CONTEXT_MAX_CHARS with an ellipsis", () => {
    const bob = facts({ author: { id: "400000000000000002", username: "bob", globalName: "Bob", isBot: false, isSystem: false }, content: `<@${USER}> ${"long ".repeat(200)}`, mentionedUsers: [{ id: USER, name: "Ada" }] });
    const context = replyContextFrom(bob, BOT);
    expect(context.author).toBe("Bob");
    expect(context.isBot).toBe(false);
    expect(context.text.startsWith("@Ada long long")).toBe(true);
    expect(context.text.length).toBeLessThanOrEqual(500);
    expect(context.text.endsWith("…")).toBe(true);
  });

  it("marks the bot's own message and describes a file-only message by its files", () => {
    const own = facts({ author: { id: BOT, username: "longhaul", globalName: null, isBot: true, isSystem: false }, content: "" , attachments: [file("report.csv", "text/csv")] });
    expect(replyContextFrom(own, BOT)).toEqual({ author: "longhaul", text: "[file report.csv]", isBot: true });
  });
});

describe("truncate", () => {
  it("keeps whole graphemes and adds the ellipsis within the limit", () => {
    expect(truncate("abcdef", 3)).toBe("abc");
    expect(truncate("ab😀cd", 3)).toBe("ab");
    expect(truncate("abc", 3)).toBe("abc");
    expect(truncate("abcdefgh", 5, "…")).toBe("abcd…");
    expect(truncate("ab🏳️‍🌈cd", 6)).toBe("ab");
  });
});

describe("GIFs (gifv embeds: Tenor, GIPHY)", () => {
  const page = "https://tenor.com/view/cat-typing-gif-12002898";
  const gif = { url: page, thumbnail: { url: "https://images-ext-1.discordapp.net/external/x/cat.png", width: 498, height: 373 } };

  it("a message that is only the GIF: no text, its first frame as a picture named after the link", () => {
    const outcome = run(mentioned(`<@${BOT}> ${page}`, { gifs: [gif] }));
    expect(outcome).toMatchObject({ kind: "submit", message: { text: "", attachments: [{ kind: "image", label: "GIF (its first frame)", name: "cat-typing-gif-12002898", width: 498, height: 373, inline: true, source: { platform: "url", url: gif.thumbnail.url } }] } });
  });

  it("words beside the link stay as they are; a gifv without a thumbnail is left as its link", () => {
    expect(run(mentioned(`<@${BOT}> look ${page}`, { gifs: [gif] }), undefined, { ...rules, maxMessageChars: 1_000 })).toMatchObject({ kind: "submit", message: { text: `look ${page}`, attachments: [{ name: "cat-typing-gif-12002898" }] } });
    const bare = run(mentioned(`<@${BOT}> ${page}`, { gifs: [{ url: page, thumbnail: null }] }));
    expect(bare).toMatchObject({ kind: "submit", message: { text: page } });
    expect(bare.kind === "submit" && bare.message.attachments).toBeFalsy();
  });

  it("a GIF service's lone link without its embed yet awaits it; one with it, or other text, does not", () => {
    expect(awaitsGifEmbed({ content: page })).toBe(true);
    expect(awaitsGifEmbed({ content: "https://media.giphy.com/media/abc/giphy.gif" })).toBe(true);
    expect(awaitsGifEmbed({ content: page, gifs: [gif] })).toBe(false);
    expect(awaitsGifEmbed({ content: `look ${page}` })).toBe(false);
    expect(awaitsGifEmbed({ content: "https://example.com/view/cat.gif" })).toBe(false);
  });
});
