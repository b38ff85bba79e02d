import { describe, expect, it, vi } from "vitest";
import { PermanentError } from "../../../src/errors.js";
import { IDS, type Payload } from "../../fakes/fake-discord.js";
import { fixture, reply, settled, sleep, useAdapterHarness } from "./harness.js";

/**
 * The real discord.js client against the fake Discord: replies (parts, pings, nonces, rate
 * limits, errors) and the typing indicator. Login and intake: discord-adapter.test.ts.
 */

const FENCE_LINE = /^ {0,3}```/;
const fenceLines = (text: string): number => text.split("\n").filter((line) => FENCE_LINE.test(line)).length;

describe("DiscordAdapter against the fake Discord: replies and typing", () => {
  const h = useAdapterHarness();

  it("sends a 5,000-character reply as several parts with balanced fences, the first one as a reply", async () => {
    const adapter = await h.startAdapter();
    const code = Array.from({ length: 60 }, (_, i) => `const value${i} = compute(${i}); // step ${i}`).join("\n");
    const prose = "Rotating logs keeps disks from filling up. ".repeat(30).trim();
    const text = `${prose}\n\n\`\`\`ts\n${code}\n\`\`\`\n\n${prose}\n\n\`\`\`bash\n${"echo done\n".repeat(40)}\`\`\``;
    expect(text.length).toBeGreaterThan(5_000);

    const sentParts: number[] = [];
    const lastFlags: boolean[] = [];
    await adapter.send(reply(text), { fromPart: 0, onPartSent: async (index, { last }) => void (sentParts.push(index), lastFlags.push(last)) });

    const bodies = h.fake.sentMessages;
    expect(bodies.length).toBeGreaterThanOrEqual(3);
    expect(sentParts).toEqual(bodies.map((_, index) => index));
    // Only the last part says so: the delivery records every other one.
    expect(lastFlags).toEqual(bodies.map((_, index) => index === bodies.length - 1));
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
    const adapter = await h.startAdapter();
    const text = Array.from({ length: 3 }, (_, i) => `Part ${i}: ${"word ".repeat(360)}`).join("\n\n");
    const sentParts: number[] = [];
    const lastFlags: boolean[] = [];
    await adapter.send(reply(text), { fromPart: 1, onPartSent: async (index, { last }) => void (sentParts.push(index), lastFlags.push(last)) });
    expect(sentParts).toEqual([1, 2]);
    expect(lastFlags).toEqual([false, true]);
    expect(h.fake.sentMessages.map((body) => String(body.content).slice(0, 6))).toEqual(["Part 1", "Part 2"]);
    // The reply reference belongs to the first part only, which was sent before.
    expect(h.fake.sentMessages[0]?.message_reference).toBeUndefined();
  });

  it("a streamed final: part 1 recorded before its silent status is deleted (even as the only part); a delivery resumed at part 2 deletes the status first (issue 30)", async () => {
    const adapter = await h.startAdapter();
    const target = reply("").target;
    const madeRequests = () => h.fake.requests.map((request) => `${request.method} ${request.path.replace(/\d{6,}/g, "#")}`);
    const status = await adapter.previews.create(target, "✍️ Writing the answer…", AbortSignal.timeout(5_000));
    const events: string[] = [];
    const deletes = () => h.fake.requestsTo("DELETE", /^\/channels\/\d+\/messages\/\d+$/).map((request) => request.path.split("/").at(-1));
    await adapter.send(reply("The answer.", { preview: "dc#1" }), {
      fromPart: 0,
      onPartSent: async (index, { last }) => void events.push(`part ${index} last=${String(last)} deletes=${deletes().length}`),
      preview: { messageId: status, only: false, onRefused: async () => {} },
    });
    // Recorded (last: false, so the delivery records it) while the status still stood; deleted after.
    expect(events).toEqual(["part 0 last=false deletes=0"]);
    expect(deletes()).toEqual([status]);

    const secondStatus = await adapter.previews.create(target, "✍️ Writing the answer…", AbortSignal.timeout(5_000));
    const before = h.fake.requests.length;
    const text = Array.from({ length: 3 }, (_, i) => `Part ${i}: ${"word ".repeat(360)}`).join("\n\n");
    await adapter.send(reply(text, { replyId: `dc:${IDS.textChannel}#2`, preview: "dc#2" }), {
      fromPart: 1,
      onPartSent: async () => {},
      preview: { messageId: secondStatus, only: false, onRefused: async () => {} },
    });
    expect(madeRequests().slice(before).filter((line) => / \/channels\//.test(line) && !line.startsWith("GET"))).toEqual(["DELETE /channels/#/messages/#", "POST /channels/#/messages", "POST /channels/#/messages"]);
    expect(deletes().at(-1)).toBe(secondStatus);
    expect(h.fake.sentMessages.slice(-2).map((body) => String(body.content).slice(0, 6))).toEqual(["Part 1", "Part 2"]);
  });

  it("never lets model output ping: @everyone, users and roles go out unparsed; only the asker is pinged, in guilds", async () => {
    const adapter = await h.startAdapter();
    h.fake.dispatchMessage(fixture("guild-mention"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(1));
    const text = `@everyone @here <@${IDS.otherUser}> <@&${IDS.staffRole}> the build is green`;
    await adapter.send(reply(text), { fromPart: 0, onPartSent: async () => {} });
    const [body] = h.fake.sentMessages;
    expect(body?.content).toContain("@everyone");
    expect(body?.allowed_mentions).toEqual({ parse: [], replied_user: true });
    // What Discord made of it: Ada (who asked) pinged; not Bob, not the role, not everyone.
    const [stored] = h.fake.botMessages(IDS.textChannel);
    expect((stored?.mentions as Payload[]).map((user) => user.id)).toEqual([IDS.user]);
    expect(stored).toMatchObject({ mention_roles: [], mention_everyone: false });
  });

  it("pings no one with DISCORD_PING_ON_REPLY off, and never in a DM", async () => {
    const adapter = await h.startAdapter({ pingOnReply: false });
    h.fake.dispatchMessage(fixture("guild-mention"));
    h.fake.dispatchMessage(fixture("dm"));
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(2));
    await adapter.send(reply("in the channel"), { fromPart: 0, onPartSent: async () => {} });
    expect(h.fake.sentMessages[0]?.allowed_mentions).toEqual({ parse: [], replied_user: false });

    await adapter.stop();
    const pinging = await h.startAdapter();
    await pinging.send(reply("in the DM", { sessionKey: `dc:dm:${IDS.user}`, target: { platform: "discord", chatId: IDS.dmChannel, replyToMessageId: "600000000000000007" } }), { fromPart: 0, onPartSent: async () => {} });
    expect(h.fake.sentMessages[1]).toMatchObject({ content: "in the DM", allowed_mentions: { parse: [], replied_user: false } });
    expect(h.fake.botMessages(IDS.dmChannel)[0]?.mentions).toEqual([]);
  });

  it("retries a send that got a 429 and creates the message once", async () => {
    const adapter = await h.startAdapter();
    h.fake.failNextSend({ status: 429, retry_after: 0.3, global: false });
    const started = Date.now();
    await adapter.send(reply("after the rate limit"), { fromPart: 0, onPartSent: async () => {} });
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    const attempts = h.fake.requestsTo("POST", /\/messages$/);
    expect(attempts.map((request) => request.status)).toEqual([429, 200]);
    expect(h.fake.sentMessages).toHaveLength(1);
  });

  it("sends a 7-part reply through Discord's 5-per-5-s channel bucket: the REST client waits, every part arrives once, in order", { timeout: 30_000 }, async () => {
    const adapter = await h.startAdapter();
    const text = Array.from({ length: 7 }, (_, i) => `Part ${i}: ${"word ".repeat(340)}`).join("\n\n");
    const sentParts: number[] = [];
    await adapter.send(reply(text), { fromPart: 0, onPartSent: async (index) => void sentParts.push(index) });
    expect(sentParts).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(h.fake.botMessages(IDS.textChannel).map((message) => String(message.content).slice(0, 6))).toEqual(["Part 0", "Part 1", "Part 2", "Part 3", "Part 4", "Part 5", "Part 6"]);
    // discord.js read X-RateLimit-Remaining and waited for the reset instead of hammering.
    expect(h.fake.requestsTo("POST", /\/messages$/).filter((request) => request.status === 429).length).toBeLessThanOrEqual(1);
  });

  it("does not post a part twice when the same reply is sent again (nonce enforced)", async () => {
    const adapter = await h.startAdapter();
    await adapter.send(reply("only once"), { fromPart: 0, onPartSent: async () => {} });
    await adapter.send(reply("only once"), { fromPart: 0, onPartSent: async () => {} });
    const [first, second] = h.fake.requestsTo("POST", /\/messages$/).map((request) => request.body as Payload);
    expect(first?.enforce_nonce).toBe(true);
    expect(typeof first?.nonce).toBe("string");
    expect(second?.nonce).toBe(first?.nonce);
  });

  it("maps an unknown channel to a PermanentError", async () => {
    const adapter = await h.startAdapter();
    const target = { platform: "discord" as const, chatId: "399999999999999999" };
    await expect(adapter.send(reply("hello", { target }), { fromPart: 0, onPartSent: async () => {} })).rejects.toBeInstanceOf(PermanentError);
  });

  it("fetches a channel missing from the cache before sending to it", async () => {
    const adapter = await h.startAdapter();
    const target = { platform: "discord" as const, chatId: IDS.dmChannel };
    await adapter.send(reply("hello after a restart", { target }), { fromPart: 0, onPartSent: async () => {} });
    expect(h.fake.requestsTo("GET", new RegExp(`^/channels/${IDS.dmChannel}$`))).toHaveLength(1);
    expect(h.fake.sentMessages).toHaveLength(1);
  });

  it("keeps typing while a turn runs and stops after turn-finished", async () => {
    const adapter = await h.startAdapter({ typingIntervalMs: 50 });
    const target = { platform: "discord" as const, chatId: IDS.textChannel };
    const typing = (): number => h.fake.requestsTo("POST", new RegExp(`^/channels/${IDS.textChannel}/typing$`)).length;
    adapter.onActivity({ type: "turn-started", sessionKey: `dc:${IDS.textChannel}`, target });
    await vi.waitFor(() => expect(typing()).toBeGreaterThanOrEqual(3));
    expect(h.fake.requestsTo("POST", /\/typing$/).every((request) => request.status === 204)).toBe(true);
    adapter.onActivity({ type: "turn-finished", sessionKey: `dc:${IDS.textChannel}`, target });
    // A running loop posts every 50 ms, so it never stays quiet for 250 ms.
    const afterFinish = await settled(typing, 250);
    await sleep(300);
    expect(typing()).toBe(afterFinish);
  });

  it("stops typing once the last part of the reply is sent", async () => {
    const adapter = await h.startAdapter({ typingIntervalMs: 50 });
    const target = { platform: "discord" as const, chatId: IDS.textChannel };
    const typing = (): number => h.fake.requestsTo("POST", /\/typing$/).length;
    adapter.onActivity({ type: "turn-started", sessionKey: `dc:${IDS.textChannel}`, target });
    await vi.waitFor(() => expect(typing()).toBeGreaterThanOrEqual(1));
    await adapter.send(reply("done"), { fromPart: 0, onPartSent: async () => {} });
    const afterSend = await settled(typing, 250);
    await sleep(300);
    expect(typing()).toBe(afterSend);
  });

  it("tells the delivery which parts carry a nonce on every path, a final over a preview's included (a part on the wire at a SIGTERM's exit is marked, not sent twice)", async () => {
    const adapter = await h.startAdapter();
    await adapter.send(reply("✍️ Writing the answer…", { replyId: "dc:status#0" }), { fromPart: 0, onPartSent: async () => {} });
    const status = h.fake.botMessages(IDS.textChannel).at(-1);
    expect(status).toBeDefined();
    const nonced: number[] = [];
    const sent: number[] = [];
    const text = `${"First part of the answer. ".repeat(90)}\n\n${"Second part of the answer. ".repeat(60)}`;
    await adapter.send(reply(text), {
      fromPart: 0,
      preview: { messageId: String(status!.id), only: false, onRefused: async () => {} },
      onPartSent: async (index) => void sent.push(index),
      onNoncedPart: (index) => void nonced.push(index),
    });
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(sent).toEqual(sent.map((_, index) => index));
    // Before, a final over a preview (the usual final with streaming on) reported none.
    expect(nonced).toEqual(sent);
  });
});
