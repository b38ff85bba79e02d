import { describe, expect, it } from "vitest";
import { lastUserText, parseStamp, textOf, withoutStamp } from "../fakes/fake-llm.js";
import { REPLY_CONTEXT_MAX_CHARS } from "../../src/core/channel.js";
import { OTHER_USER } from "../fakes/fake-discord.js";
import { CLOSED_CHANNEL, CLOSED_THREAD, DiscordE2E, E2E_TIMEOUT, pipelineForEachTest, IDS, fixture, mention, sleep, until, userTexts } from "../helpers/discord-pipeline.js";

/**
 * Discord end to end: the real discord.js adapter against the fake Discord (REST + gateway),
 * the real ingress, BullMQ queue and worker on Redis, delivery, and the fake LLM (echo unless
 * scripted). Chats, sessions and how replies go out. Faults, pairing, typing and the app as a
 * process: discord-operations.test.ts.
 */

const FENCE_LINE = /^ {0,3}```/;
const fenceLines = (text: string): number => text.split("\n").filter((line) => FENCE_LINE.test(line)).length;
const userContents = (messages: ReadonlyArray<{ role: string; content: unknown }>): unknown[] =>
  messages.filter((message) => message.role === "user").map((message) => withoutStamp(textOf(message.content)));

describe("Discord through the whole pipeline: chats and sessions", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E;
  // Whatever a test did, nothing the bot posted may ping anyone.
  pipelineForEachTest((started) => (e2e = started));

  it("ignores guild messages without a mention (the LLM never sees them) and answers a mention with the speaker's name", async () => {
    e2e.fake.dispatchMessage(fixture("guild-no-mention"));
    // A user's @everyone is not a mention of the bot.
    e2e.fake.dispatchMessage(fixture("guild-everyone"));
    e2e.fake.dispatchMessage(fixture("guild-mention"));

    const [answer] = await e2e.waitForSent(1, IDS.textChannel);
    // The gateway delivers in order and the channel is one session: had either earlier
    // message been submitted, it would be in this request (collected) or a request before it.
    expect(e2e.llm.requests).toHaveLength(1);
    // The bot's mention is gone; the server nickname names the speaker in a shared channel.
    expect(userTexts(e2e.llm.requests[0])).toEqual(["Ada (ops): how do I rotate the logs?"]);
    // The stamp before the speaker is the message's own send time (its snowflake: ms since 2015-01-01 in the top bits), in UTC.
    const sentAt = new Date(Number((BigInt("600000000000000001") >> 22n) + 1_420_070_400_000n)).toISOString();
    const user = e2e.llm.requests[0]!.body.messages.find((message) => message.role === "user");
    expect(parseStamp(textOf(user?.content))).toMatchObject({ date: sentAt.slice(0, 10), time: sentAt.slice(11, 16), zone: "UTC", rest: "Ada (ops): how do I rotate the logs?" });
    expect(answer).toMatchObject({
      content: "echo: Ada (ops): how do I rotate the logs?",
      message_reference: { message_id: "600000000000000001", fail_if_not_exists: false },
    });
    expect(userContents(await e2e.transcript(`dc:${IDS.textChannel}`))).toEqual(["Ada (ops): how do I rotate the logs?"]);

    await sleep(300);
    expect(e2e.llm.requests).toHaveLength(1);
    expect(e2e.messagePosts()).toHaveLength(1);
  });

  it("answers a reply to the bot without a mention, in the channel's session, with the replied-to message quoted for the model", async () => {
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000101", "how do I rotate the logs?"));
    await e2e.waitForSent(1, IDS.textChannel);
    const [botAnswer] = e2e.fake.botMessages(IDS.textChannel);

    // Ada replies to the bot's answer, with the reply ping turned off: no mention at all.
    e2e.fake.dispatchMessage(fixture("guild-reply-to-bot", { message_reference: undefined, referenced_message: undefined }), { replyTo: String(botAnswer?.id) });
    const [, answer] = await e2e.waitForSent(2, IDS.textChannel);
    const request = e2e.llm.requests.at(-1)!;
    // No nickname in this guild: the global display name; then what the reply points at.
    const expected = "Ada L.: [in reply to longhaul:]\n> echo: Ada (ops): how do I rotate the logs?\nand for nginx?";
    expect(lastUserText(request)).toBe(expected);
    // The same session: the earlier exchange is in the context.
    expect(userTexts(request)).toEqual(["Ada (ops): how do I rotate the logs?", expected]);
    expect(answer).toMatchObject({ message_reference: { message_id: "600000000000000004" } });
  });

  it("quotes the message a question replies to (Bob's, trimmed), so the model knows what \"this\" is", async () => {
    // Bob's message was posted before the bot connected (not in the client's cache).
    const bob = e2e.fake.seedHistory({ channel_id: IDS.textChannel, author: OTHER_USER, content: `deploy with rsync -a --delete ${"/srv/app ".repeat(80)}` });
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000131", "is this right?"), { replyTo: String(bob.id) });

    const [answer] = await e2e.waitForSent(1, IDS.textChannel);
    expect(String(answer?.content)).toContain("is this right?");
    const text = lastUserText(e2e.llm.requests.at(-1)!);
    expect(text.startsWith("Ada (ops): [in reply to Bob:]\n> deploy with rsync -a --delete /srv/app")).toBe(true);
    expect(text.endsWith("…\nis this right?")).toBe(true);
    // Trimmed to REPLY_CONTEXT_MAX_CHARS (plus the quote marker).
    const quoted = text.split("\n")[1] ?? "";
    expect(quoted.length).toBeLessThanOrEqual(REPLY_CONTEXT_MAX_CHARS + 2);
  });

  it("answers every message in an always-on channel, without a mention", async () => {
    e2e.fake.dispatchMessage(fixture("always-on"));
    e2e.fake.dispatchMessage(fixture("always-on", { id: "600000000000000105", content: "and one for backups?" }));

    // Collect mode may answer both in one turn or one after the other; either way the last
    // answer echoes the second message.
    await until(() => expect(e2e.sent(IDS.alwaysOnChannel).map((body) => body.content)).toContain("echo: Ada L.: and one for backups?"));
    expect(e2e.llm.requests[0] && lastUserText(e2e.llm.requests[0])).toMatch(/^Ada L\.: (what's a good name for a cron job\?|and one for backups\?)$/);
    expect(userContents(await e2e.transcript(`dc:${IDS.alwaysOnChannel}`))).toEqual([
      "Ada L.: what's a good name for a cron job?",
      "Ada L.: and one for backups?",
    ]);
    expect(e2e.sent(IDS.textChannel)).toEqual([]);
  });

  it("gives a thread its own session (dc:<threadId>), allowed through its parent channel, and answers in the thread", async () => {
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000111", "hello in the channel"));
    await e2e.waitForSent(1, IDS.textChannel);

    // The thread itself is not in ALLOWED_DISCORD_CHANNELS; its parent is.
    expect(e2e.config.ALLOWED_DISCORD_CHANNELS).not.toContain(IDS.thread);
    e2e.fake.dispatchMessage(fixture("thread-mention"));
    const [answer] = await e2e.waitForSent(1, IDS.thread);
    expect(answer).toMatchObject({ content: "echo: Ada L.: summarize this thread", message_reference: { message_id: "600000000000000006" } });
    // The thread's context starts empty: the parent channel's conversation is not in it.
    const threadRequest = e2e.llm.requests.find((request) => lastUserText(request) === "Ada L.: summarize this thread");
    expect(userTexts(threadRequest)).toEqual(["Ada L.: summarize this thread"]);
    expect(userContents(await e2e.transcript(`dc:${IDS.thread}`))).toEqual(["Ada L.: summarize this thread"]);
    expect(userContents(await e2e.transcript(`dc:${IDS.textChannel}`))).toEqual(["Ada (ops): hello in the channel"]);
    expect(e2e.sent(IDS.textChannel)).toHaveLength(1);
  });

  it("drops mentions in a channel that is not allowed, and in its threads, without a word", async () => {
    e2e.fake.dispatchMessage(mention(CLOSED_CHANNEL, "600000000000000121", "let me in"));
    e2e.fake.dispatchMessage(mention(CLOSED_THREAD, "600000000000000122", "let me in here then"));
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000123", "anyone home?"));

    await e2e.waitForSent(1, IDS.textChannel);
    await sleep(300);
    // No pairing notice in public, nothing stored, nothing sent to the model.
    expect(e2e.messagePosts()).toHaveLength(1);
    expect(e2e.llm.requests.flatMap((request) => userTexts(request))).toEqual(["Ada (ops): anyone home?"]);
    expect(await e2e.transcript(`dc:${CLOSED_CHANNEL}`)).toEqual([]);
    expect(await e2e.transcript(`dc:${CLOSED_THREAD}`)).toEqual([]);
  });

  it("answers a DM from an allowlisted user in session dc:dm:<userId>, without a name prefix", async () => {
    e2e.fake.dispatchMessage(fixture("dm", { content: "what is the capital of Australia?" }));

    const [answer] = await e2e.waitForSent(1, IDS.dmChannel);
    expect(answer).toMatchObject({ content: "echo: what is the capital of Australia?", message_reference: { message_id: "600000000000000007" } });
    expect(userTexts(e2e.llm.requests[0])).toEqual(["what is the capital of Australia?"]);
    expect(userContents(await e2e.transcript(`dc:dm:${IDS.user}`))).toEqual(["what is the capital of Australia?"]);
    expect(await e2e.transcript(`dc:${IDS.dmChannel}`)).toEqual([]);
  });

  it("sends a 5,000-character reply with code blocks as several messages with balanced fences, in order, the first as the reply", async () => {
    const prose = (topic: string) => `${topic}: rotating logs keeps disks from filling up and old entries searchable. `.repeat(16).trim();
    const code = Array.from({ length: 70 }, (_, i) => `const step${i} = await rotate("/var/log/app-${i}.log", { keep: ${i % 7} });`).join("\n");
    const shell = Array.from({ length: 30 }, (_, i) => `logrotate --force /etc/logrotate.d/app-${i}`).join("\n");
    const text = `${prose("Intro")}\n\n\`\`\`ts\n${code}\n\`\`\`\n\n${prose("Then")}\n\n\`\`\`bash\n${shell}\n\`\`\`\n\nThat's all.`;
    expect(text.length).toBeGreaterThan(5_000);
    e2e.llm.enqueue(text);

    e2e.fake.dispatchMessage(fixture("guild-mention"));
    const minimumParts = Math.ceil(text.length / 2_000);
    await e2e.waitForSent(minimumParts, IDS.textChannel);
    // The reply is complete once its last line arrived; then nothing more may come.
    await until(() => expect(String(e2e.sent().at(-1)?.content)).toMatch(/That's all\.$/));
    await sleep(300);

    const parts = e2e.sent(IDS.textChannel);
    expect(e2e.sent()).toHaveLength(parts.length);
    expect(parts.length).toBeGreaterThanOrEqual(minimumParts);
    const contents = parts.map((part) => String(part.content));
    for (const content of contents) {
      expect(content.length).toBeLessThanOrEqual(2_000);
      expect(fenceLines(content) % 2).toBe(0);
    }
    // The ts block spans two messages: closed at the end of one, reopened with its tag.
    expect(contents.some((content, index) => index > 0 && content.startsWith("```ts\n"))).toBe(true);
    expect(parts[0]?.message_reference).toEqual({ message_id: "600000000000000001", fail_if_not_exists: false });
    for (const part of parts.slice(1)) expect(part.message_reference).toBeUndefined();
    // In order, nothing lost or repeated: the text minus fence lines and whitespace is the model's.
    const words = (s: string): string => s.split("\n").filter((line) => !FENCE_LINE.test(line)).join(" ").replace(/\s+/g, "");
    expect(words(contents.join("\n"))).toBe(words(text));
    expect(contents[0]?.startsWith("Intro:")).toBe(true);
  });

  it("never lets model output ping: @everyone, @here, users and roles are not parsed; only the asker is pinged by the reply", async () => {
    const text = `@everyone @here <@${IDS.otherUser}> <@&${IDS.staffRole}> the deploy is done`;
    e2e.llm.enqueue(text);
    e2e.fake.dispatchMessage(fixture("guild-mention"));

    const [answer] = await e2e.waitForSent(1, IDS.textChannel);
    expect(answer?.content).toBe(text);
    expect(answer?.allowed_mentions).toEqual({ parse: [], replied_user: true });
    expect(e2e.pings()).toEqual([{ content: text, allowed: { parse: [], replied_user: true }, pinged: [IDS.user], roles: [], everyone: false, expected: [IDS.user] }]);
  });
});
