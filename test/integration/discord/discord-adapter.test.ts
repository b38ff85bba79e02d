import { Writable } from "node:stream";
import { describe, expect, it, vi } from "vitest";
import { DiscordAdapter } from "../../../src/adapters/discord/index.js";
import { PermanentError } from "../../../src/errors.js";
import { createLogger, silentLogger } from "../../../src/logger.js";
import { DEFAULT_GUILD, FAKE_TOKEN, IDS, OTHER_USER, textChannel } from "../../fakes/fake-discord.js";
import { gifvEmbed } from "../../fakes/fake-discord-world.js";
import { fixture, reply, sleep, useAdapterHarness } from "./harness.js";

/**
 * The real discord.js client against the fake Discord: login, what reaches the ingress and
 * how the adapter answers its verdicts. Replies, splitting and typing: discord-send.test.ts.
 */

describe("DiscordAdapter against the fake Discord: login and intake", () => {
  const h = useAdapterHarness();

  it("logs in through /gateway/bot with the token, the four intents, and keeps heartbeating", async () => {
    const adapter = await h.startAdapter();
    expect(adapter.isConnected()).toBe(true);
    const gatewayCall = h.fake.requestsTo("GET", /^\/gateway\/bot$/)[0];
    expect(gatewayCall?.headers.authorization).toBe(`Bot ${FAKE_TOKEN}`);
    // Guilds | GuildMessages | DirectMessages | MessageContent
    expect(h.fake.identifies[0]).toMatchObject({ token: FAKE_TOKEN, intents: 37377 });
    await vi.waitFor(() => expect(h.fake.heartbeats).toBeGreaterThanOrEqual(2));
    expect(adapter.isConnected()).toBe(true);
  });

  it("fails to start with a clear error on a bad token, or when the Message Content intent is not enabled", async () => {
    await expect(new DiscordAdapter({ token: "wrong-token", apiRoot: h.fake.apiRoot }).start(h.ingress)).rejects.toThrow(PermanentError);
    await h.restartFake({ identifyCloseCode: 4014 });
    const refused = new DiscordAdapter({ token: FAKE_TOKEN, apiRoot: h.fake.apiRoot });
    h.extraAdapters.push(refused);
    await expect(refused.start(h.ingress)).rejects.toThrow(/disallowed intents.*enable the Message Content intent/i);
    expect(refused.isConnected()).toBe(false);
  });

  it("names the fix when Discord closes with 4011 (sharding required) or 4014, in the error and in the log", async () => {
    for (const [code, hint] of [[4011, /sharding required: .*run it with several shards/], [4014, /Privileged Gateway Intents/]] as const) {
      await h.restartFake({ identifyCloseCode: code });
      const lines: string[] = [];
      const destination = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } });
      const refused = new DiscordAdapter({ token: FAKE_TOKEN, apiRoot: h.fake.apiRoot, logger: createLogger({ level: "info", destination }) });
      h.extraAdapters.push(refused);
      await expect(refused.start(h.ingress)).rejects.toThrow(hint);
      const closed = lines.map((line) => JSON.parse(line) as { msg: string; code?: number; hint?: string }).find((line) => line.msg === "discord gateway closed for good");
      expect(closed).toMatchObject({ code });
      expect(closed?.hint).toMatch(hint);
    }
  });

  it("ACK_REACTIONS: 👀 on a message the ingress took, none on a refused one, and no more asking in a channel that refuses reactions", async () => {
    await h.startAdapter({ ackReactions: true });
    h.ingress.script.push({ status: "accepted" }, { status: "denied" });
    h.fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(h.fake.message(IDS.textChannel, "600000000000000001")?.reactions).toEqual([{ emoji: { id: null, name: "👀" }, count: 1, me: true }]));
    const denied = h.fake.dispatchMessage({ ...fixture("guild-mention"), id: "600000000000000002" });
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(2));
    await sleep(300);
    expect(h.fake.message(IDS.textChannel, String(denied.id))?.reactions).toBeUndefined();

    // A refusal the cache did not foresee (the client missed the overwrite change) is remembered.
    h.fake.setPermissions(IDS.textChannel, { react: false }, { announce: false });
    const reactions = () => h.fake.requestsTo("PUT", /\/reactions\//);
    h.fake.dispatchMessage({ ...fixture("guild-mention"), id: "600000000000000003" });
    await vi.waitFor(() => expect(reactions().map((request) => request.status)).toEqual([204, 403]));
    h.fake.dispatchMessage({ ...fixture("guild-mention"), id: "600000000000000004" });
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(4));
    await sleep(300);
    expect(reactions()).toHaveLength(2);
    // Discord's own answer to a reaction without Add Reactions.
    const refused = await fetch(`${h.fake.apiRoot}/v10/channels/${IDS.textChannel}/messages/600000000000000004/reactions/${encodeURIComponent("👀")}/@me`, { method: "PUT", headers: { authorization: `Bot ${FAKE_TOKEN}` } });
    expect([refused.status, await refused.json()]).toEqual([403, { message: "Missing Permissions", code: 50013 }]);
  });

  it("ACK_REACTIONS: no reaction call at all where the channel's overwrites deny Add Reactions or Read Message History (discord.js computes it from the cache); the message is still answered", async () => {
    const everyoneDeniesHistory = { id: IDS.guild, type: 0, allow: "0", deny: String(1 << 16) };
    await h.restartFake({ guilds: [{ ...DEFAULT_GUILD, channels: [{ ...textChannel(IDS.textChannel, "general"), permission_overwrites: [everyoneDeniesHistory] }, textChannel(IDS.alwaysOnChannel, "ask-the-bot")] }] });
    const adapter = await h.startAdapter({ ackReactions: true });
    h.fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    await adapter.send(reply("Here is the answer."), { fromPart: 0, onPartSent: async () => undefined });
    expect(h.fake.sentMessages.map((body) => body.content)).toEqual(["Here is the answer."]);
    // Add Reactions denied to the bot by a member overwrite (CHANNEL_UPDATE), history allowed again.
    h.fake.setPermissions(IDS.textChannel, { react: false });
    h.fake.setPermissions(IDS.alwaysOnChannel, { react: false });
    h.fake.dispatchMessage({ ...fixture("guild-mention"), id: "600000000000000002", channel_id: IDS.alwaysOnChannel });
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(2));
    await adapter.send(reply("Second answer.", { target: { platform: "discord", chatId: IDS.alwaysOnChannel, replyToMessageId: "600000000000000002" } }), { fromPart: 0, onPartSent: async () => undefined });
    await sleep(300);
    expect(h.fake.requestsTo("PUT", /\/reactions\//)).toEqual([]);
    expect(h.fake.sentMessages.map((body) => body.content)).toEqual(["Here is the answer.", "Second answer."]);
    // Allowed again: the next message gets its 👀 (the permission is computed each time, not remembered).
    h.fake.setPermissions(IDS.alwaysOnChannel, { react: true });
    h.fake.dispatchMessage({ ...fixture("guild-mention"), id: "600000000000000003", channel_id: IDS.alwaysOnChannel });
    await vi.waitFor(() => expect(h.fake.message(IDS.alwaysOnChannel, "600000000000000003")?.reactions).toHaveLength(1));
  });

  it("reads a sticker-only DM as its sticker's name instead of dropping it as empty", async () => {
    await h.startAdapter();
    h.fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000071", content: "", sticker_items: [{ id: "749054660769218631", name: "Wave", format_type: 1 }] });
    await vi.waitFor(() => expect(h.ingress.submitted.map((message) => message.text)).toEqual(["[sticker: Wave]"]));
  });

  it("reads a Tenor GIF (a gifv embed, no attachment) as its first frame, as Telegram's animations; a link whose embed comes later waits for it", async () => {
    await h.startAdapter({ gifEmbedWaitMs: 10_000 });
    const page = "https://tenor.com/view/cat-typing-gif-12002898";
    h.fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000081", content: page, embeds: [gifvEmbed(page)] });
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    const frame = {
      kind: "image", label: "GIF (its first frame)", name: "cat-typing-gif-12002898", width: 498, height: 373, inline: true,
      source: { platform: "url", url: "https://images-ext-1.discordapp.net/external/x/cat-typing-gif-12002898.png" },
    };
    expect(h.ingress.submitted[0]).toMatchObject({ messageId: "600000000000000081", text: "", attachments: [frame] });

    // Discord did not have this one's preview at hand: MESSAGE_CREATE without embeds, then MESSAGE_UPDATE adds the gifv.
    const later = "https://tenor.com/view/dance-gif-777";
    h.fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000082", content: `${later}` });
    h.fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000083", content: "and a question after it" });
    await sleep(300);
    expect(h.ingress.submitted).toHaveLength(1);
    h.fake.addEmbeds(IDS.dmChannel, "600000000000000082", [gifvEmbed(later)]);
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(3));
    expect(h.ingress.submitted[1]).toMatchObject({ messageId: "600000000000000082", text: "", attachments: [{ label: "GIF (its first frame)", name: "dance-gif-777" }] });
    // The channel's next message waited behind it: order kept.
    expect(h.ingress.submitted[2]).toMatchObject({ messageId: "600000000000000083", text: "and a question after it" });
  });

  it("ignores a guild message without a mention and submits one with it, mention stripped", async () => {
    await h.startAdapter();
    expect(await h.dispatchThenBarrier(fixture("guild-no-mention"))).toEqual([]);

    h.fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(h.ingress.submitted.some((m) => m.messageId === "600000000000000001")).toBe(true));
    expect(h.ingress.submitted.find((m) => m.messageId === "600000000000000001")).toEqual({
      platform: "discord", sessionKey: `dc:${IDS.textChannel}`, messageId: "600000000000000001", chatId: IDS.textChannel,
      userId: IDS.user, userName: "Ada (ops)", chatType: "group", text: "how do I rotate the logs?",
      // discord.js reads the time off the snowflake id, as Discord stamps it.
      sentAt: Number((BigInt("600000000000000001") >> 22n) + 1_420_070_400_000n),
    });
  });

  it("does not take @everyone from a user as a mention of the bot", async () => {
    await h.startAdapter();
    expect(await h.dispatchThenBarrier(fixture("guild-everyone"))).toEqual([]);
  });

  it("submits a reply to the bot without a mention", async () => {
    await h.startAdapter();
    h.fake.dispatchMessage(fixture("guild-reply-to-bot"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    expect(h.ingress.submitted[0]).toMatchObject({ messageId: "600000000000000004", text: "and for nginx?", userName: "Ada L." });
  });

  it("fetches a replied-to message missing from the cache over REST, and submits a reply to a deleted message without context", async () => {
    await h.startAdapter();
    const bob = h.fake.seedHistory({ channel_id: IDS.alwaysOnChannel, author: OTHER_USER, content: "ship it on friday" });
    // Discord left referenced_message out (it may): the adapter must fetch it.
    const reply = h.fake.seedHistory({ channel_id: IDS.alwaysOnChannel, content: "is this wise?" }, { replyTo: String(bob.id) });
    const { referenced_message: _omitted, ...withoutReferenced } = reply;
    h.fake.dispatch("MESSAGE_CREATE", withoutReferenced);
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    expect(h.ingress.submitted[0]).toMatchObject({ text: "is this wise?", replyTo: { author: "Bob", text: "ship it on friday", isBot: false } });
    expect(h.fake.requestsTo("GET", new RegExp(`^/channels/${IDS.alwaysOnChannel}/messages/${String(bob.id)}$`))).toHaveLength(1);

    // A reply to a message that was deleted: Discord sends referenced_message null, a fetch 404s.
    h.fake.dispatch("MESSAGE_CREATE", { ...withoutReferenced, id: String(BigInt(String(reply.id)) + 1n), referenced_message: null, message_reference: { type: 0, message_id: "999999999999999999", channel_id: IDS.alwaysOnChannel, guild_id: IDS.guild } });
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(2));
    expect(h.ingress.submitted[1]).toMatchObject({ text: "is this wise?" });
    expect(h.ingress.submitted[1]).not.toHaveProperty("replyTo");
  });

  it("submits every message in an always-on channel", async () => {
    await h.startAdapter();
    h.fake.dispatchMessage(fixture("always-on"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    expect(h.ingress.submitted[0]).toMatchObject({ sessionKey: `dc:${IDS.alwaysOnChannel}`, chatId: IDS.alwaysOnChannel, text: "what's a good name for a cron job?" });
  });

  it("gives a thread its own session and carries the parent channel for access checks", async () => {
    await h.startAdapter();
    h.fake.dispatchMessage(fixture("thread-mention"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    expect(h.ingress.submitted[0]).toMatchObject({
      sessionKey: `dc:${IDS.thread}`, chatId: IDS.thread, parentChatId: IDS.textChannel, chatType: "group", text: "summarize this thread",
    });
  });

  it("submits a DM as a private session keyed by the user, and can answer it", async () => {
    const adapter = await h.startAdapter();
    h.fake.dispatchMessage(fixture("dm"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    const dm = h.ingress.submitted[0];
    expect(dm).toMatchObject({ sessionKey: `dc:dm:${IDS.user}`, chatId: IDS.dmChannel, chatType: "private", text: "/status", userName: "Ada L." });
    expect(dm).not.toHaveProperty("parentChatId");

    await adapter.send(reply("model: gpt · context 12%", {
      sessionKey: `dc:dm:${IDS.user}`, target: { platform: "discord", chatId: IDS.dmChannel, replyToMessageId: "600000000000000007" },
    }), { fromPart: 0, onPartSent: async () => {} });
    expect(h.fake.requestsTo("POST", new RegExp(`^/channels/${IDS.dmChannel}/messages$`))).toHaveLength(1);
  });

  it("ignores its own messages and other bots' messages", async () => {
    await h.startAdapter();
    const own = { ...fixture("guild-mention"), id: "600000000000000010", author: { id: IDS.bot, username: "longhaul", discriminator: "0", avatar: null, bot: true } };
    expect(await h.dispatchThenBarrier(own)).toEqual([]);
    expect(await h.dispatchThenBarrier(fixture("other-bot-mention"))).toEqual([]);
  });

  it("drops a redelivery on the same connection (discord.js' message cache)", async () => {
    await h.startAdapter();
    h.fake.dispatchMessage(fixture("guild-mention"));
    const submitted = await h.dispatchThenBarrier(fixture("guild-mention"));
    expect(submitted.map((m) => m.messageId)).toEqual(["600000000000000001"]);
  });

  it("with two gateway replicas on one token, both submit the same message id and the ingress answers it once", async () => {
    const seen = new Set<string>();
    const statuses: string[] = [];
    h.ingress.submit = async (message) => {
      h.ingress.submitted.push(message);
      const status = seen.has(message.messageId) ? "duplicate" : "accepted";
      seen.add(message.messageId);
      statuses.push(status);
      return { status };
    };
    await h.startAdapter();
    const second = new DiscordAdapter({ token: FAKE_TOKEN, apiRoot: h.fake.apiRoot, logger: silentLogger });
    h.extraAdapters.push(second);
    await second.start(h.ingress);
    expect(h.fake.identifies).toHaveLength(2);

    h.fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(2));
    expect(h.ingress.submitted.map((m) => m.messageId)).toEqual(["600000000000000001", "600000000000000001"]);
    expect(statuses).toEqual(["accepted", "duplicate"]);
    await sleep(50);
    expect(h.fake.requestsTo("POST", /\/messages$/)).toEqual([]);
  });

  it("replies with the ingress' notice when denied or rate-limited, and stays silent without one", async () => {
    await h.startAdapter();
    h.ingress.script.push(
      { status: "denied", notice: "Pairing code: 7F3K-Q2. Ask the operator to approve it." },
      { status: "denied" },
      { status: "rate-limited", notice: "Easy there, one moment please." },
    );
    h.fake.dispatchMessage(fixture("dm"));
    h.fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000011" });
    h.fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000012" });
    await vi.waitFor(() => expect(h.fake.sentMessages).toHaveLength(2));
    await sleep(50);
    const [pairing, slowDown] = h.fake.sentMessages;
    expect(pairing).toMatchObject({ content: "Pairing code: 7F3K-Q2. Ask the operator to approve it.", message_reference: { message_id: "600000000000000007" } });
    expect(slowDown).toMatchObject({ content: "Easy there, one moment please.", message_reference: { message_id: "600000000000000012" } });
    expect(h.fake.sentMessages).toHaveLength(2);
  });

  it("truncates an oversize message and tells the user", async () => {
    await h.startAdapter({ maxMessageChars: 100 });
    h.fake.dispatchMessage({ ...fixture("dm"), content: "x".repeat(250) });
    await vi.waitFor(() => expect(h.fake.sentMessages).toHaveLength(1));
    expect(h.ingress.submitted[0]?.text).toBe("x".repeat(100));
    expect(h.fake.sentMessages[0]?.content).toBe("Your message was 250 characters long; I only read the first 100.");
  });

  it("retries a failing ingress, then asks the user to send again", async () => {
    await h.startAdapter();
    h.ingress.script.push(new Error("redis down"), { status: "accepted" });
    h.fake.dispatchMessage(fixture("dm"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(2));
    await sleep(50);
    expect(h.fake.sentMessages).toEqual([]);

    h.ingress.script.push(new Error("redis down"), new Error("redis down"), new Error("redis down"));
    h.fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000013" });
    await vi.waitFor(() => expect(h.fake.sentMessages).toHaveLength(1));
    expect(String(h.fake.sentMessages[0]?.content)).toMatch(/send it again/);
  });

  it("hands a session's messages to the ingress in order even when a submit is slow", async () => {
    await h.startAdapter();
    let release = (): void => {};
    h.ingress.script.push(() => new Promise((resolve) => { release = () => resolve({ status: "accepted" }); }));
    h.fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000021", content: "first" });
    h.fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000022", content: "second" });
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    await sleep(50);
    expect(h.ingress.submitted.map((m) => m.text)).toEqual(["first"]);
    release();
    await vi.waitFor(() => expect(h.ingress.submitted.map((m) => m.text)).toEqual(["first", "second"]));
  });

  it("survives a malformed MESSAGE_CREATE and keeps serving", async () => {
    const adapter = await h.startAdapter();
    h.fake.dispatch("MESSAGE_CREATE", { id: "600000000000000030", channel_id: IDS.textChannel, guild_id: IDS.guild });
    h.fake.dispatch("MESSAGE_CREATE", { channel_id: "not-a-channel", content: 42, author: null, mentions: "nope" });
    h.fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    expect(adapter.isConnected()).toBe(true);
  });

  it("tells the ingress which chats it lost: a thread, a channel with its threads, the guild it left; not an outage", async () => {
    const closed: string[] = [];
    let failFirst = true;
    Object.assign(h.ingress, {
      chatClosed: async (platform: string, chatId: string) => {
        if (failFirst) {
          failFirst = false;
          throw new Error("redis is away");
        }
        closed.push(`${platform}:${chatId}`);
      },
    });
    await h.startAdapter();
    const extraThread = {
      id: "300000000000000009", type: 11, guild_id: IDS.guild, parent_id: IDS.alwaysOnChannel, owner_id: IDS.user, name: "another thread",
      last_message_id: null, message_count: 0, member_count: 1, rate_limit_per_user: 0, flags: 0, newly_created: true,
      thread_metadata: { archived: false, auto_archive_duration: 1440, archive_timestamp: "2026-01-01T00:00:00.000Z", locked: false },
    };
    h.fake.dispatch("THREAD_CREATE", extraThread);
    h.fake.dispatch("THREAD_DELETE", { id: extraThread.id, guild_id: IDS.guild, parent_id: IDS.alwaysOnChannel, type: 11 });
    await vi.waitFor(() => expect(closed).toEqual([`discord:${extraThread.id}`]));

    h.fake.dispatch("CHANNEL_DELETE", { id: IDS.textChannel, type: 0, guild_id: IDS.guild, name: "general", position: 0, permission_overwrites: [], parent_id: null });
    await vi.waitFor(() => expect(closed).toHaveLength(3));
    expect(closed.slice(1)).toEqual([`discord:${IDS.textChannel}`, `discord:${IDS.thread}`]);

    // An outage (unavailable) is not a removal; then the bot is removed from the guild.
    h.fake.dispatch("GUILD_DELETE", { id: IDS.guild, unavailable: true });
    h.fake.dispatch("GUILD_DELETE", { id: IDS.guild });
    await vi.waitFor(() => expect(closed).toHaveLength(4));
    expect(closed[3]).toBe(`discord:${IDS.alwaysOnChannel}`);
    await sleep(200);
    expect(closed).toHaveLength(4);
  });

  it("stops cleanly, twice", async () => {
    const adapter = await h.startAdapter();
    await adapter.stop();
    await adapter.stop();
    expect(adapter.isConnected()).toBe(false);
  });

  it("never writes the token to the log", async () => {
    const lines: string[] = [];
    const destination = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } });
    const adapter = await h.startAdapter({ logger: createLogger({ level: "trace", destination }) });
    h.fake.dispatchMessage(fixture("guild-no-mention"));
    h.fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    await adapter.send(reply("hi"), { fromPart: 0, onPartSent: async () => {} });
    await adapter.send(reply("hi", { target: { platform: "discord", chatId: "399999999999999999" } }), { fromPart: 0, onPartSent: async () => {} }).catch(() => {});
    await adapter.stop();
    expect(lines.length).toBeGreaterThan(3);
    expect(lines.filter((line) => line.includes(FAKE_TOKEN))).toEqual([]);
  });
});
