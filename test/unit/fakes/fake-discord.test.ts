import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FAKE_TOKEN, FakeDiscord, IDS, type Payload } from "../../fakes/fake-discord.js";
import { NONCE_WINDOW_MS } from "../../fakes/fake-discord-rest.js";

/**
 * The fake Discord is only worth its tests if it refuses what Discord refuses. These talk to
 * it over plain HTTP (no discord.js, nothing of ours), as a client that breaks the rules would.
 */

let fake: FakeDiscord;
beforeEach(async () => {
  fake = await FakeDiscord.start();
});
afterEach(async () => {
  await fake.close();
});

const api = (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`${fake.apiRoot}/v10${path}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bot ${FAKE_TOKEN}`, "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });
const send = (channelId: string, body: Payload) => api(`/channels/${channelId}/messages`, { method: "POST", body });

describe("fake Discord: what it refuses", () => {
  it("counts content in code points as Discord does: 2,000 emoji pass, 2,001 characters do not", async () => {
    expect((await send(IDS.textChannel, { content: "😀".repeat(2_000) })).status).toBe(200);
    const refused = await send(IDS.alwaysOnChannel, { content: "x".repeat(2_001) });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ code: 50035, errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH" }] } } });
    expect((await send(IDS.dmChannel, { content: "   " })).status).toBe(400);
  });

  it("lets 5 messages per 5 s into a channel, then answers 429 with retry_after and the bucket headers; other channels are not held up", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const response = await send(IDS.textChannel, { content: `part ${i}` });
      statuses.push(response.status);
      expect(response.headers.get("x-ratelimit-remaining")).toBe(String(4 - i));
      expect(response.headers.get("x-ratelimit-limit")).toBe("5");
    }
    const limited = await send(IDS.textChannel, { content: "one too many" });
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
    expect(limited.status).toBe(429);
    const body = (await limited.json()) as { retry_after: number; global: boolean };
    expect(body.global).toBe(false);
    expect(body.retry_after).toBeGreaterThan(0);
    expect(body.retry_after).toBeLessThanOrEqual(5);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(limited.headers.get("x-ratelimit-scope")).toBe("user");
    expect(limited.headers.get("x-ratelimit-bucket")).toBe("fake-channel-messages");
    expect((await send(IDS.alwaysOnChannel, { content: "elsewhere" })).status).toBe(200);
  });

  it("refuses sends and typing without permissions (50013), everything without access (50001), and a locked archived thread (50083)", async () => {
    fake.setPermissions(IDS.textChannel, { send: false });
    expect(await (await send(IDS.textChannel, { content: "hi" })).json()).toMatchObject({ code: 50013 });
    expect((await api(`/channels/${IDS.textChannel}/typing`, { method: "POST" })).status).toBe(403);
    fake.setPermissions(IDS.alwaysOnChannel, { view: false });
    for (const response of [await send(IDS.alwaysOnChannel, { content: "hi" }), await api(`/channels/${IDS.alwaysOnChannel}`), await api(`/channels/${IDS.alwaysOnChannel}/messages`)]) {
      expect(response.status).toBe(403);
      expect(await response.json()).toMatchObject({ code: 50001 });
    }
    // A thread has no overwrites of its own: its parent's deny the bot there too.
    expect(await (await send(IDS.thread, { content: "hi" })).json()).toMatchObject({ code: 50013 });
    fake.setPermissions(IDS.textChannel, { send: true });
    fake.archiveThread(IDS.thread, { locked: true });
    const archived = await send(IDS.thread, { content: "hi" });
    expect(archived.status).toBe(400);
    expect(await archived.json()).toMatchObject({ code: 50083, message: "Thread is archived" });
  });

  it("reopens an archived thread that is not locked when a message is sent to it", async () => {
    fake.archiveThread(IDS.thread);
    expect((await send(IDS.thread, { content: "back again" })).status).toBe(200);
    expect((await (await api(`/channels/${IDS.thread}`)).json()) as Payload).toMatchObject({ thread_metadata: { archived: false } });
  });

  it("records who a message pinged from allowed_mentions, and refuses contradictory allowed_mentions", async () => {
    const asked = fake.dispatchMessage({ channel_id: IDS.textChannel, content: `<@${IDS.bot}> hi` });
    const text = `<@${IDS.otherUser}> <@&${IDS.staffRole}> @everyone`;
    await send(IDS.textChannel, { content: text, message_reference: { message_id: asked.id }, allowed_mentions: { parse: [], replied_user: true } });
    await send(IDS.textChannel, { content: text });
    const [careful, careless] = fake.botMessages(IDS.textChannel);
    expect(careful).toMatchObject({ mentions: [{ id: IDS.user }], mention_roles: [], mention_everyone: false });
    // No allowed_mentions: Discord pings everything the content names.
    expect(careless).toMatchObject({ mentions: [{ id: IDS.otherUser }], mention_roles: [IDS.staffRole], mention_everyone: true });
    expect((await send(IDS.textChannel, { content: "x", allowed_mentions: { parse: ["users"], users: [IDS.user] } })).status).toBe(400);
  });

  it("refuses a reply to an unknown message unless fail_if_not_exists is false, and returns the same message for a repeated nonce", async () => {
    expect((await send(IDS.textChannel, { content: "x", message_reference: { message_id: "1" } })).status).toBe(400);
    expect((await send(IDS.textChannel, { content: "x", message_reference: { message_id: "1", fail_if_not_exists: false } })).status).toBe(200);
    const first = (await (await send(IDS.alwaysOnChannel, { content: "once", nonce: "n1", enforce_nonce: true })).json()) as Payload;
    const again = (await (await send(IDS.alwaysOnChannel, { content: "once", nonce: "n1", enforce_nonce: true })).json()) as Payload;
    expect(again.id).toBe(first.id);
    // Only "in the past few minutes": past the window the same nonce posts a new message.
    fake.ageNonces(NONCE_WINDOW_MS);
    const later = (await (await send(IDS.alwaysOnChannel, { content: "once", nonce: "n1", enforce_nonce: true })).json()) as Payload;
    expect(later.id).not.toBe(first.id);
  });
});

describe("fake Discord: messages as Discord builds them", () => {
  it("parses mentions out of the content and refuses a payload that claims others", () => {
    const message = fake.dispatchMessage({ channel_id: IDS.textChannel, content: `<@!${IDS.bot}> and <@${IDS.otherUser}>, see <@&${IDS.botRole}> <@&999999999999999999>` });
    expect((message.mentions as Payload[]).map((user) => user.id)).toEqual([IDS.bot, IDS.otherUser]);
    expect(message.mention_roles).toEqual([IDS.botRole]);
    expect(() => fake.dispatchMessage({ channel_id: IDS.textChannel, content: "no mention here", mentions: [{ id: IDS.bot }] })).toThrow(/claims mentions/);
    expect(() => fake.dispatchMessage({ channel_id: IDS.textChannel, content: "x".repeat(2_001) })).toThrow(/message\.txt/);
  });

  it("gives ids that grow with time, fills replies from the history one level deep, and serves attachments with a content-length", async () => {
    const first = fake.dispatchMessage({ channel_id: IDS.textChannel, content: "one" });
    const reply = fake.dispatchMessage({ channel_id: IDS.textChannel, content: "two" }, { replyTo: String(first.id) });
    const nested = fake.dispatchMessage({ channel_id: IDS.textChannel, content: "three" }, { replyTo: String(reply.id), files: [{ name: "message.txt", content: "é".repeat(10) }] });
    expect(BigInt(String(reply.id))).toBeGreaterThan(BigInt(String(first.id)));
    expect(nested.referenced_message).toMatchObject({ id: reply.id, content: "two" });
    expect(nested.referenced_message).not.toHaveProperty("referenced_message");
    const [attachment] = nested.attachments as Payload[];
    expect(attachment).toMatchObject({ filename: "message.txt", size: 20, content_type: "text/plain; charset=utf-8" });
    const file = await fetch(String(attachment?.url));
    expect(file.headers.get("content-length")).toBe("20");
    expect(await file.text()).toBe("é".repeat(10));
  });

  it("pages the history newest first around after/before, bounded by limit 1–100", async () => {
    const ids = Array.from({ length: 7 }, (_, i) => String(fake.seedHistory({ channel_id: IDS.alwaysOnChannel, content: `m${i}` }).id));
    const page = async (query: string) => ((await (await api(`/channels/${IDS.alwaysOnChannel}/messages?${query}`)).json()) as Payload[]).map((message) => message.content);
    expect(await page(`after=${ids[1]}&limit=3`)).toEqual(["m4", "m3", "m2"]);
    expect(await page(`before=${ids[5]}&limit=2`)).toEqual(["m4", "m3"]);
    expect(await page("limit=2")).toEqual(["m6", "m5"]);
    expect((await api(`/channels/${IDS.alwaysOnChannel}/messages?limit=101`)).status).toBe(400);
    expect((await api(`/channels/${IDS.alwaysOnChannel}/messages/${ids[3]}`)).status).toBe(200);
    expect((await api(`/channels/${IDS.alwaysOnChannel}/messages/1`)).status).toBe(404);
  });

  it("lists active threads of a guild, a new one included, archived ones not", async () => {
    const fresh = fake.createThread(IDS.textChannel, "new");
    fake.archiveThread(IDS.thread);
    const { threads } = (await (await api(`/guilds/${IDS.guild}/threads/active`)).json()) as { threads: Payload[] };
    expect(threads.map((thread) => thread.id)).toEqual([fresh.id]);
  });
});
