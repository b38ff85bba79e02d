import { readFileSync } from "node:fs";
import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { InboundMessage, IngressPort, OutboundReply, SubmitResult } from "../../../src/adapters/channel-adapter.js";
import { DiscordAdapter, type DiscordAdapterOptions } from "../../../src/adapters/discord/index.js";
import { PermanentError } from "../../../src/errors.js";
import { createLogger, silentLogger } from "../../../src/logger.js";
import { FAKE_TOKEN, FakeDiscord, IDS, OTHER_USER, type Payload } from "../../fakes/fake-discord.js";

/**
 * The real discord.js client against the fake Discord over HTTP and WebSocket. The ingress
 * here is a recorder with scripted answers; the pipeline e2e swaps in the real one.
 */

const fixture = (name: string): Payload & { channel_id: string } =>
  JSON.parse(readFileSync(new URL(`../../fixtures/discord/${name}.json`, import.meta.url), "utf8")) as Payload & { channel_id: string };

class RecordingIngress implements IngressPort {
  readonly submitted: InboundMessage[] = [];
  /** Answers for the next submits, in order; `accepted` once they run out. */
  readonly script: Array<SubmitResult | Error | (() => Promise<SubmitResult>)> = [];

  async submit(message: InboundMessage): Promise<SubmitResult> {
    this.submitted.push(message);
    const next = this.script.shift();
    if (next instanceof Error) throw next;
    if (typeof next === "function") return next();
    return next ?? { status: "accepted" };
  }
}

const FENCE_LINE = /^ {0,3}```/;
const fenceLines = (text: string): number => text.split("\n").filter((line) => FENCE_LINE.test(line)).length;

const reply = (text: string, overrides: Partial<OutboundReply> = {}): OutboundReply => ({
  replyId: `dc:${IDS.textChannel}#1`,
  sessionKey: `dc:${IDS.textChannel}`,
  target: { platform: "discord", chatId: IDS.textChannel, replyToMessageId: "600000000000000001" },
  text,
  inReplyTo: ["600000000000000001"],
  kind: "answer",
  ...overrides,
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `count` has not changed for `quietMs` (requests already in flight have landed). */
async function settled(count: () => number, quietMs: number): Promise<number> {
  let last = count();
  let since = Date.now();
  const deadline = Date.now() + 5_000;
  while (Date.now() - since < quietMs && Date.now() < deadline) {
    await sleep(10);
    if (count() !== last) {
      last = count();
      since = Date.now();
    }
  }
  return last;
}

describe("DiscordAdapter against the fake Discord", () => {
  let fake: FakeDiscord;
  let ingress: RecordingIngress;
  let running: DiscordAdapter | undefined;
  const extraAdapters: DiscordAdapter[] = [];
  let markers = 0;

  const startAdapter = async (options: Partial<DiscordAdapterOptions> = {}): Promise<DiscordAdapter> => {
    const started = new DiscordAdapter({
      token: FAKE_TOKEN, apiRoot: fake.apiRoot, alwaysOnChannels: [IDS.alwaysOnChannel], maxMessageChars: 16_000,
      logger: silentLogger, typingIntervalMs: 100, submitRetryDelaysMs: [10, 10], ...options,
    });
    running = started;
    await started.start(ingress);
    return started;
  };

  /** Dispatches `message`, then a mentioned marker message, and waits for the marker: anything
   * the adapter would have submitted for `message` has been submitted by then (same session). */
  const dispatchThenBarrier = async (message: Payload & { channel_id: string }): Promise<InboundMessage[]> => {
    fake.dispatchMessage(message);
    markers += 1;
    const marker = fake.dispatchMessage({ ...fixture("guild-mention"), id: String(699_999_999_999_999_000n + BigInt(markers)), channel_id: message.channel_id, content: `<@${IDS.bot}> marker` });
    await vi.waitFor(() => expect(ingress.submitted.some((m) => m.messageId === marker.id)).toBe(true));
    return ingress.submitted.filter((m) => !m.messageId.startsWith("699999999999999"));
  };

  beforeEach(async () => {
    fake = await FakeDiscord.start();
    ingress = new RecordingIngress();
  });

  afterEach(async () => {
    await running?.stop();
    running = undefined;
    for (const extra of extraAdapters.splice(0)) await extra.stop();
    await fake.close();
  });

  it("logs in through /gateway/bot with the token, the four intents, and keeps heartbeating", async () => {
    const adapter = await startAdapter();
    expect(adapter.isConnected()).toBe(true);
    const gatewayCall = fake.requestsTo("GET", /^\/gateway\/bot$/)[0];
    expect(gatewayCall?.headers.authorization).toBe(`Bot ${FAKE_TOKEN}`);
    // Guilds | GuildMessages | DirectMessages | MessageContent
    expect(fake.identifies[0]).toMatchObject({ token: FAKE_TOKEN, intents: 37377 });
    await vi.waitFor(() => expect(fake.heartbeats).toBeGreaterThanOrEqual(2));
    expect(adapter.isConnected()).toBe(true);
  });

  it("fails to start with a clear error on a bad token, or when the Message Content intent is not enabled", async () => {
    await expect(new DiscordAdapter({ token: "wrong-token", apiRoot: fake.apiRoot }).start(ingress)).rejects.toThrow(PermanentError);
    await fake.close();
    fake = await FakeDiscord.start({ identifyCloseCode: 4014 });
    const refused = new DiscordAdapter({ token: FAKE_TOKEN, apiRoot: fake.apiRoot });
    extraAdapters.push(refused);
    await expect(refused.start(ingress)).rejects.toThrow(/disallowed intents.*enable the Message Content intent/i);
    expect(refused.isConnected()).toBe(false);
  });

  it("names the fix when Discord closes with 4011 (sharding required) or 4014, in the error and in the log", async () => {
    for (const [code, hint] of [[4011, /sharding required: .*run it with several shards/], [4014, /Privileged Gateway Intents/]] as const) {
      await fake.close();
      fake = await FakeDiscord.start({ identifyCloseCode: code });
      const lines: string[] = [];
      const destination = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } });
      const refused = new DiscordAdapter({ token: FAKE_TOKEN, apiRoot: fake.apiRoot, logger: createLogger({ level: "info", destination }) });
      extraAdapters.push(refused);
      await expect(refused.start(ingress)).rejects.toThrow(hint);
      const closed = lines.map((line) => JSON.parse(line) as { msg: string; code?: number; hint?: string }).find((line) => line.msg === "discord gateway closed for good");
      expect(closed).toMatchObject({ code });
      expect(closed?.hint).toMatch(hint);
    }
  });

  it("ignores a guild message without a mention and submits one with it, mention stripped", async () => {
    await startAdapter();
    expect(await dispatchThenBarrier(fixture("guild-no-mention"))).toEqual([]);

    fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(ingress.submitted.some((m) => m.messageId === "600000000000000001")).toBe(true));
    expect(ingress.submitted.find((m) => m.messageId === "600000000000000001")).toEqual({
      platform: "discord", sessionKey: `dc:${IDS.textChannel}`, messageId: "600000000000000001", chatId: IDS.textChannel,
      userId: IDS.user, userName: "Ada (ops)", chatType: "group", text: "how do I rotate the logs?",
      // discord.js reads the time off the snowflake id, as Discord stamps it.
      sentAt: Number((BigInt("600000000000000001") >> 22n) + 1_420_070_400_000n),
    });
  });

  it("does not take @everyone from a user as a mention of the bot", async () => {
    await startAdapter();
    expect(await dispatchThenBarrier(fixture("guild-everyone"))).toEqual([]);
  });

  it("submits a reply to the bot without a mention", async () => {
    await startAdapter();
    fake.dispatchMessage(fixture("guild-reply-to-bot"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(1));
    expect(ingress.submitted[0]).toMatchObject({ messageId: "600000000000000004", text: "and for nginx?", userName: "Ada L." });
  });

  it("fetches a replied-to message missing from the cache over REST, and submits a reply to a deleted message without context", async () => {
    await startAdapter();
    const bob = fake.seedHistory({ channel_id: IDS.alwaysOnChannel, author: OTHER_USER, content: "ship it on friday" });
    // Discord left referenced_message out (it may): the adapter must fetch it.
    const reply = fake.seedHistory({ channel_id: IDS.alwaysOnChannel, content: "is this wise?" }, { replyTo: String(bob.id) });
    const { referenced_message: _omitted, ...withoutReferenced } = reply;
    fake.dispatch("MESSAGE_CREATE", withoutReferenced);
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(1));
    expect(ingress.submitted[0]).toMatchObject({ text: "is this wise?", replyTo: { author: "Bob", text: "ship it on friday", isBot: false } });
    expect(fake.requestsTo("GET", new RegExp(`^/channels/${IDS.alwaysOnChannel}/messages/${String(bob.id)}$`))).toHaveLength(1);

    // A reply to a message that was deleted: Discord sends referenced_message null, a fetch 404s.
    fake.dispatch("MESSAGE_CREATE", { ...withoutReferenced, id: String(BigInt(String(reply.id)) + 1n), referenced_message: null, message_reference: { type: 0, message_id: "999999999999999999", channel_id: IDS.alwaysOnChannel, guild_id: IDS.guild } });
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(2));
    expect(ingress.submitted[1]).toMatchObject({ text: "is this wise?" });
    expect(ingress.submitted[1]).not.toHaveProperty("replyTo");
  });

  it("submits every message in an always-on channel", async () => {
    await startAdapter();
    fake.dispatchMessage(fixture("always-on"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(1));
    expect(ingress.submitted[0]).toMatchObject({ sessionKey: `dc:${IDS.alwaysOnChannel}`, chatId: IDS.alwaysOnChannel, text: "what's a good name for a cron job?" });
  });

  it("gives a thread its own session and carries the parent channel for access checks", async () => {
    await startAdapter();
    fake.dispatchMessage(fixture("thread-mention"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(1));
    expect(ingress.submitted[0]).toMatchObject({
      sessionKey: `dc:${IDS.thread}`, chatId: IDS.thread, parentChatId: IDS.textChannel, chatType: "group", text: "summarize this thread",
    });
  });

  it("submits a DM as a private session keyed by the user, and can answer it", async () => {
    const adapter = await startAdapter();
    fake.dispatchMessage(fixture("dm"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(1));
    const dm = ingress.submitted[0];
    expect(dm).toMatchObject({ sessionKey: `dc:dm:${IDS.user}`, chatId: IDS.dmChannel, chatType: "private", text: "/status", userName: "Ada L." });
    expect(dm).not.toHaveProperty("parentChatId");

    await adapter.send(reply("model: gpt · context 12%", {
      sessionKey: `dc:dm:${IDS.user}`, target: { platform: "discord", chatId: IDS.dmChannel, replyToMessageId: "600000000000000007" },
    }), { fromPart: 0, onPartSent: async () => {} });
    expect(fake.requestsTo("POST", new RegExp(`^/channels/${IDS.dmChannel}/messages$`))).toHaveLength(1);
  });

  it("ignores its own messages and other bots' messages", async () => {
    await startAdapter();
    const own = { ...fixture("guild-mention"), id: "600000000000000010", author: { id: IDS.bot, username: "longhaul", discriminator: "0", avatar: null, bot: true } };
    expect(await dispatchThenBarrier(own)).toEqual([]);
    expect(await dispatchThenBarrier(fixture("other-bot-mention"))).toEqual([]);
  });

  it("sends a 5,000-character reply as several parts with balanced fences, the first one as a reply", async () => {
    const adapter = await startAdapter();
    const code = Array.from({ length: 60 }, (_, i) => `const value${i} = compute(${i}); // step ${i}`).join("\n");
    const prose = "Rotating logs keeps disks from filling up. ".repeat(30).trim();
    const text = `${prose}\n\n\`\`\`ts\n${code}\n\`\`\`\n\n${prose}\n\n\`\`\`bash\n${"echo done\n".repeat(40)}\`\`\``;
    expect(text.length).toBeGreaterThan(5_000);

    const sentParts: number[] = [];
    await adapter.send(reply(text), { fromPart: 0, onPartSent: async (index) => void sentParts.push(index) });

    const bodies = fake.sentMessages;
    expect(bodies.length).toBeGreaterThanOrEqual(3);
    expect(sentParts).toEqual(bodies.map((_, index) => index));
    for (const [index, body] of bodies.entries()) {
      const content = String(body.content);
      expect(content.length).toBeLessThanOrEqual(2000);
      expect(fenceLines(content) % 2).toBe(0);
      // Only the first part is the reply, and only it may ping the person who asked.
      expect(body.allowed_mentions).toEqual({ parse: [], replied_user: index === 0 });
    }
    expect(bodies.some((body) => String(body.content).startsWith("```ts\n") && !String(body.content).includes("Rotating"))).toBe(true);
    expect(bodies[0]?.message_reference).toEqual({ message_id: "600000000000000001", fail_if_not_exists: false });
    for (const body of bodies.slice(1)) expect(body.message_reference).toBeUndefined();
    const words = (s: string): string => s.split("\n").filter((line) => !FENCE_LINE.test(line)).join(" ").split(/\s+/).join("");
    expect(words(bodies.map((body) => String(body.content)).join("\n"))).toBe(words(text));
  });

  it("resumes a partly sent reply from fromPart", async () => {
    const adapter = await startAdapter();
    const text = Array.from({ length: 3 }, (_, i) => `Part ${i}: ${"word ".repeat(360)}`).join("\n\n");
    const sentParts: number[] = [];
    await adapter.send(reply(text), { fromPart: 1, onPartSent: async (index) => void sentParts.push(index) });
    expect(sentParts).toEqual([1, 2]);
    expect(fake.sentMessages.map((body) => String(body.content).slice(0, 6))).toEqual(["Part 1", "Part 2"]);
    // The reply reference belongs to the first part only, which was sent before.
    expect(fake.sentMessages[0]?.message_reference).toBeUndefined();
  });

  it("never lets model output ping: @everyone, users and roles go out unparsed; only the asker is pinged, in guilds", async () => {
    const adapter = await startAdapter();
    fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(1));
    const text = `@everyone @here <@${IDS.otherUser}> <@&${IDS.staffRole}> the build is green`;
    await adapter.send(reply(text), { fromPart: 0, onPartSent: async () => {} });
    const [body] = fake.sentMessages;
    expect(body?.content).toContain("@everyone");
    expect(body?.allowed_mentions).toEqual({ parse: [], replied_user: true });
    // What Discord made of it: Ada (who asked) pinged; not Bob, not the role, not everyone.
    const [stored] = fake.botMessages(IDS.textChannel);
    expect((stored?.mentions as Payload[]).map((user) => user.id)).toEqual([IDS.user]);
    expect(stored).toMatchObject({ mention_roles: [], mention_everyone: false });
  });

  it("pings no one with DISCORD_PING_ON_REPLY off, and never in a DM", async () => {
    const adapter = await startAdapter({ pingOnReply: false });
    fake.dispatchMessage(fixture("guild-mention"));
    fake.dispatchMessage(fixture("dm"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(2));
    await adapter.send(reply("in the channel"), { fromPart: 0, onPartSent: async () => {} });
    expect(fake.sentMessages[0]?.allowed_mentions).toEqual({ parse: [], replied_user: false });

    await adapter.stop();
    const pinging = await startAdapter();
    await pinging.send(reply("in the DM", { sessionKey: `dc:dm:${IDS.user}`, target: { platform: "discord", chatId: IDS.dmChannel, replyToMessageId: "600000000000000007" } }), { fromPart: 0, onPartSent: async () => {} });
    expect(fake.sentMessages[1]).toMatchObject({ content: "in the DM", allowed_mentions: { parse: [], replied_user: false } });
    expect(fake.botMessages(IDS.dmChannel)[0]?.mentions).toEqual([]);
  });

  it("retries a send that got a 429 and creates the message once", async () => {
    const adapter = await startAdapter();
    fake.failNextSend({ status: 429, retry_after: 0.3, global: false });
    const started = Date.now();
    await adapter.send(reply("after the rate limit"), { fromPart: 0, onPartSent: async () => {} });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    const attempts = fake.requestsTo("POST", /\/messages$/);
    expect(attempts.map((request) => request.status)).toEqual([429, 200]);
    expect(fake.sentMessages).toHaveLength(1);
  });

  it("sends a 7-part reply through Discord's 5-per-5-s channel bucket: the REST client waits, every part arrives once, in order", { timeout: 30_000 }, async () => {
    const adapter = await startAdapter();
    const text = Array.from({ length: 7 }, (_, i) => `Part ${i}: ${"word ".repeat(340)}`).join("\n\n");
    const sentParts: number[] = [];
    await adapter.send(reply(text), { fromPart: 0, onPartSent: async (index) => void sentParts.push(index) });
    expect(sentParts).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(fake.botMessages(IDS.textChannel).map((message) => String(message.content).slice(0, 6))).toEqual(["Part 0", "Part 1", "Part 2", "Part 3", "Part 4", "Part 5", "Part 6"]);
    // discord.js read X-RateLimit-Remaining and waited for the reset instead of hammering.
    expect(fake.requestsTo("POST", /\/messages$/).filter((request) => request.status === 429).length).toBeLessThanOrEqual(1);
  });

  it("does not post a part twice when the same reply is sent again (nonce enforced)", async () => {
    const adapter = await startAdapter();
    await adapter.send(reply("only once"), { fromPart: 0, onPartSent: async () => {} });
    await adapter.send(reply("only once"), { fromPart: 0, onPartSent: async () => {} });
    const [first, second] = fake.requestsTo("POST", /\/messages$/).map((request) => request.body as Payload);
    expect(first?.enforce_nonce).toBe(true);
    expect(typeof first?.nonce).toBe("string");
    expect(second?.nonce).toBe(first?.nonce);
  });

  it("maps an unknown channel to a PermanentError", async () => {
    const adapter = await startAdapter();
    const target = { platform: "discord" as const, chatId: "399999999999999999" };
    await expect(adapter.send(reply("hello", { target }), { fromPart: 0, onPartSent: async () => {} })).rejects.toBeInstanceOf(PermanentError);
  });

  it("fetches a channel missing from the cache before sending to it", async () => {
    const adapter = await startAdapter();
    const target = { platform: "discord" as const, chatId: IDS.dmChannel };
    await adapter.send(reply("hello after a restart", { target }), { fromPart: 0, onPartSent: async () => {} });
    expect(fake.requestsTo("GET", new RegExp(`^/channels/${IDS.dmChannel}$`))).toHaveLength(1);
    expect(fake.sentMessages).toHaveLength(1);
  });

  it("drops a redelivery on the same connection (discord.js' message cache)", async () => {
    await startAdapter();
    fake.dispatchMessage(fixture("guild-mention"));
    const submitted = await dispatchThenBarrier(fixture("guild-mention"));
    expect(submitted.map((m) => m.messageId)).toEqual(["600000000000000001"]);
  });

  it("with two gateway replicas on one token, both submit the same message id and the ingress answers it once", async () => {
    const seen = new Set<string>();
    const statuses: string[] = [];
    ingress.submit = async (message) => {
      ingress.submitted.push(message);
      const status = seen.has(message.messageId) ? "duplicate" : "accepted";
      seen.add(message.messageId);
      statuses.push(status);
      return { status };
    };
    await startAdapter();
    const second = new DiscordAdapter({ token: FAKE_TOKEN, apiRoot: fake.apiRoot, logger: silentLogger });
    extraAdapters.push(second);
    await second.start(ingress);
    expect(fake.identifies).toHaveLength(2);

    fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(2));
    expect(ingress.submitted.map((m) => m.messageId)).toEqual(["600000000000000001", "600000000000000001"]);
    expect(statuses).toEqual(["accepted", "duplicate"]);
    await sleep(50);
    expect(fake.requestsTo("POST", /\/messages$/)).toEqual([]);
  });

  it("replies with the ingress' notice when denied or rate-limited, and stays silent without one", async () => {
    await startAdapter();
    ingress.script.push(
      { status: "denied", notice: "Pairing code: 7F3K-Q2. Ask the operator to approve it." },
      { status: "denied" },
      { status: "rate-limited", notice: "Easy there, one moment please." },
    );
    fake.dispatchMessage(fixture("dm"));
    fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000011" });
    fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000012" });
    await vi.waitFor(() => expect(fake.sentMessages).toHaveLength(2));
    await sleep(50);
    const [pairing, slowDown] = fake.sentMessages;
    expect(pairing).toMatchObject({ content: "Pairing code: 7F3K-Q2. Ask the operator to approve it.", message_reference: { message_id: "600000000000000007" } });
    expect(slowDown).toMatchObject({ content: "Easy there, one moment please.", message_reference: { message_id: "600000000000000012" } });
    expect(fake.sentMessages).toHaveLength(2);
  });

  it("keeps typing while a turn runs and stops after turn-finished", async () => {
    const adapter = await startAdapter({ typingIntervalMs: 50 });
    const target = { platform: "discord" as const, chatId: IDS.textChannel };
    const typing = (): number => fake.requestsTo("POST", new RegExp(`^/channels/${IDS.textChannel}/typing$`)).length;
    adapter.onActivity({ type: "turn-started", sessionKey: `dc:${IDS.textChannel}`, target });
    await vi.waitFor(() => expect(typing()).toBeGreaterThanOrEqual(3));
    expect(fake.requestsTo("POST", /\/typing$/).every((request) => request.status === 204)).toBe(true);
    adapter.onActivity({ type: "turn-finished", sessionKey: `dc:${IDS.textChannel}`, target });
    // A running loop posts every 50 ms, so it never stays quiet for 250 ms.
    const afterFinish = await settled(typing, 250);
    await sleep(300);
    expect(typing()).toBe(afterFinish);
  });

  it("stops typing once the last part of the reply is sent", async () => {
    const adapter = await startAdapter({ typingIntervalMs: 50 });
    const target = { platform: "discord" as const, chatId: IDS.textChannel };
    const typing = (): number => fake.requestsTo("POST", /\/typing$/).length;
    adapter.onActivity({ type: "turn-started", sessionKey: `dc:${IDS.textChannel}`, target });
    await vi.waitFor(() => expect(typing()).toBeGreaterThanOrEqual(1));
    await adapter.send(reply("done"), { fromPart: 0, onPartSent: async () => {} });
    const afterSend = await settled(typing, 250);
    await sleep(300);
    expect(typing()).toBe(afterSend);
  });

  it("truncates an oversize message and tells the user", async () => {
    await startAdapter({ maxMessageChars: 100 });
    fake.dispatchMessage({ ...fixture("dm"), content: "x".repeat(250) });
    await vi.waitFor(() => expect(fake.sentMessages).toHaveLength(1));
    expect(ingress.submitted[0]?.text).toBe("x".repeat(100));
    expect(fake.sentMessages[0]?.content).toBe("Your message was 250 characters long; I only read the first 100.");
  });

  it("retries a failing ingress, then asks the user to send again", async () => {
    await startAdapter();
    ingress.script.push(new Error("redis down"), { status: "accepted" });
    fake.dispatchMessage(fixture("dm"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(2));
    await sleep(50);
    expect(fake.sentMessages).toEqual([]);

    ingress.script.push(new Error("redis down"), new Error("redis down"), new Error("redis down"));
    fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000013" });
    await vi.waitFor(() => expect(fake.sentMessages).toHaveLength(1));
    expect(String(fake.sentMessages[0]?.content)).toMatch(/send it again/);
  });

  it("hands a session's messages to the ingress in order even when a submit is slow", async () => {
    await startAdapter();
    let release = (): void => {};
    ingress.script.push(() => new Promise((resolve) => { release = () => resolve({ status: "accepted" }); }));
    fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000021", content: "first" });
    fake.dispatchMessage({ ...fixture("dm"), id: "600000000000000022", content: "second" });
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(1));
    await sleep(50);
    expect(ingress.submitted.map((m) => m.text)).toEqual(["first"]);
    release();
    await vi.waitFor(() => expect(ingress.submitted.map((m) => m.text)).toEqual(["first", "second"]));
  });

  it("survives a malformed MESSAGE_CREATE and keeps serving", async () => {
    const adapter = await startAdapter();
    fake.dispatch("MESSAGE_CREATE", { id: "600000000000000030", channel_id: IDS.textChannel, guild_id: IDS.guild });
    fake.dispatch("MESSAGE_CREATE", { channel_id: "not-a-channel", content: 42, author: null, mentions: "nope" });
    fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(1));
    expect(adapter.isConnected()).toBe(true);
  });

  it("stops cleanly, twice", async () => {
    const adapter = await startAdapter();
    await adapter.stop();
    await adapter.stop();
    expect(adapter.isConnected()).toBe(false);
  });

  it("never writes the token to the log", async () => {
    const lines: string[] = [];
    const destination = new Writable({ write(chunk, _encoding, done) { lines.push(String(chunk)); done(); } });
    const adapter = await startAdapter({ logger: createLogger({ level: "trace", destination }) });
    fake.dispatchMessage(fixture("guild-no-mention"));
    fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(1));
    await adapter.send(reply("hi"), { fromPart: 0, onPartSent: async () => {} });
    await adapter.send(reply("hi", { target: { platform: "discord", chatId: "399999999999999999" } }), { fromPart: 0, onPartSent: async () => {} }).catch(() => {});
    await adapter.stop();
    expect(lines.length).toBeGreaterThan(3);
    expect(lines.filter((line) => line.includes(FAKE_TOKEN))).toEqual([]);
  });
});
