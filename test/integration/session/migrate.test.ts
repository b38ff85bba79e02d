/**
 * A deployed wave-1 bot upgrades in place: its sessions, waiting messages, undelivered replies,
 * archives and dedupe memory survive the move to the hash-tagged layout. The wave-1 keys are
 * written here exactly as wave-1 code wrote them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { globalKeys, KEY_LAYOUT } from "../../../src/session/keys.js";
import { hasLegacyWork, migrateLayout, migrateSession } from "../../../src/session/migrate.js";
import { Outbox } from "../../../src/session/outbox.js";
import { SessionStore } from "../../../src/session/store.js";
import { ToolOutputStore } from "../../../src/session/tool-outputs.js";
import { uniquePrefix } from "../../helpers/config.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { claimed } from "../../helpers/session.js";

const SESSION = "tg:5012345678";
const OTHER = "dc:dm:42";

describe("key layout migration (wave 1 → hash-tagged)", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  const entry = (text: string, messageId: string, sessionKey = SESSION) =>
    JSON.stringify({ ...inbound({ platform: "telegram", chatId: "5012345678", text, messageId, sessionKey }), receivedAt: 1 });
  const reply = (replyId: string, sessionKey = SESSION) =>
    JSON.stringify({ replyId, sessionKey, target: { platform: "telegram", chatId: "5012345678" }, text: `text of ${replyId}`, inReplyTo: [], kind: "answer" });

  /** A wave-1 deployment mid-flight: a committed session, a claimed batch, waiting messages, a half-sent reply, an archive. */
  async function writeWave1(prefix: string) {
    const s = (suffix: string, sessionKey = SESSION) => `${prefix}:s:${sessionKey}:${suffix}`;
    const state = { version: 3, sessionId: "sid-current", createdAt: 1, updatedAt: 2, nextSeq: 5, live: [{ id: "m1", role: "user", content: "hello" }], stats: {}, engine: {} };
    await redis.set(s("state"), JSON.stringify(state));
    await redis.set(s("version"), "3");
    await redis.rpush(s("transcript"), JSON.stringify({ id: "m1", role: "user", content: "hello" }), JSON.stringify({ id: "m2", role: "assistant", content: "hi there" }));
    await redis.hset(s("transcript-index"), "m1", "0", "m2", "1");
    await redis.rpush(s("pending"), entry("claimed but not answered", "101"));
    await redis.rpush(s("inbox"), entry("waiting", "102"));
    await redis.rpush(s("outbox"), reply(`${SESSION}#3#0`), reply(`${SESSION}#3#1`));
    await redis.set(s("outbox-progress"), "2");
    await redis.set(s("lease"), "w1:7:0", "PX", 30_000);
    await redis.rpush(`${prefix}:archive:${SESSION}:sid-old`, JSON.stringify({ id: "m0", role: "user", content: "ancient" }));
    await redis.pexpire(`${prefix}:archive:${SESSION}:sid-old`, 86_400_000);
    await redis.hset(`${prefix}:archive:${SESSION}:sid-old:index`, "m0", "0");
    await redis.rpush(s("inbox", OTHER), entry("other session", "900", OTHER));
    await redis.set(`${prefix}:seen:telegram:5012345678:102`, "1", "EX", 3_600);
    await redis.sadd(`${prefix}:work`, SESSION, OTHER);
    // Stored originals of capped tool outputs, as a build between wave 1 and the hash-tagged
    // layout wrote them (the current conversation's, and an archived one's that expires).
    await redis.hset(s("tool-outputs:sid-current"), "m2:starts", JSON.stringify({ total: 5, starts: [0] }), "m2:0", "12345");
    await redis.hset(s("tool-outputs:sid-old"), "m0:starts", JSON.stringify({ total: 3, starts: [0] }), "m0:0", "abc");
    await redis.pexpire(s("tool-outputs:sid-old"), 86_400_000);
  }

  it("moves sessions, waiting messages, replies with their progress, archives, and keeps dedupe", async () => {
    const prefix = uniquePrefix();
    await writeWave1(prefix);
    const report = await migrateLayout(redis, prefix);
    expect(report).toMatchObject({ current: false, sessions: 2, archives: 2, toolOutputs: 2, messages: 3, replies: 2, legacySeen: true });
    expect(await redis.keys(`${prefix}:s:*`)).toEqual([]);
    expect(await redis.keys(`${prefix}:archive:*`)).toEqual([]);

    const store = new SessionStore(redis, prefix);
    const keys = store.keys(SESSION);
    expect(await store.readTranscript(SESSION)).toEqual([{ id: "m1", role: "user", content: "hello" }, { id: "m2", role: "assistant", content: "hi there" }]);
    expect(await store.transcriptMessage(SESSION, "m2")).toMatchObject({ content: "hi there" });
    expect(await redis.lrange(keys.archive("sid-old"), 0, -1)).toHaveLength(1);
    expect(await redis.pttl(keys.archive("sid-old"))).toBeGreaterThan(80_000_000);
    expect(await redis.hget(keys.archiveIndex("sid-old"), "m0")).toBe("0");
    // Capped tool outputs are readable where the tool-output store now looks, TTL kept.
    const outputs = new ToolOutputStore(redis, prefix);
    expect(await outputs.read(SESSION, "sid-current", "m2", 1, 3)).toEqual({ text: "234", total: 5 });
    expect(await outputs.read(SESSION, "sid-old", "m0", 0, 10)).toEqual({ text: "abc", total: 3 });
    expect(await redis.pttl(keys.toolOutputs("sid-old"))).toBeGreaterThan(80_000_000);
    // The wave-1 lease is gone: the next turn takes the claimed batch first, then the rest.
    const turn = claimed(await store.beginTurn(SESSION, "new-token", { leaseMs: 10_000, mode: "all" }));
    expect(turn.batch.map((item) => item.text)).toEqual(["claimed but not answered", "waiting"]);
    expect(turn.state).toMatchObject({ version: 3, sessionId: "sid-current", nextSeq: 5 });
    expect(turn.outbox).toBe(2);
    // The half-sent reply resumes where wave 1 left it.
    expect(await new Outbox(redis, prefix).begin(SESSION, "d", 10_000)).toMatchObject({ status: "head", fromPart: 2, reply: { replyId: `${SESSION}#3#0` } });
    expect(claimed(await store.beginTurn(OTHER, "t", { leaseMs: 10_000, mode: "all" })).batch.map((item) => item.text)).toEqual(["other session"]);

    // A re-delivery of a message wave 1 stored is still a duplicate.
    await store.loadLegacySeenWindow();
    expect(await store.appendInbox(inbound({ platform: "telegram", chatId: "5012345678", messageId: "102", sessionKey: SESSION, text: "waiting" }), Date.now())).toBe(false);
    expect(await store.appendInbox(inbound({ platform: "telegram", chatId: "5012345678", messageId: "103", sessionKey: SESSION, text: "new" }), Date.now())).toBe(true);
    expect(await redis.get(globalKeys(prefix).layout)).toBe(String(KEY_LAYOUT));
  });

  it("is idempotent, and a second process waits for the first one's migration", async () => {
    const prefix = uniquePrefix();
    await writeWave1(prefix);
    const [first, second] = await Promise.all([migrateLayout(redis, prefix), migrateLayout(redis, prefix)]);
    expect([first.sessions, second.sessions].sort()).toEqual([0, 2]);
    const snapshot = await redis.keys(`${prefix}:*`);
    expect(await migrateLayout(redis, prefix)).toMatchObject({ current: true, sessions: 0 });
    expect((await redis.keys(`${prefix}:*`)).sort()).toEqual(snapshot.sort());
    expect(await redis.llen(new SessionStore(redis, prefix).keys(SESSION).inbox)).toBe(2);
  });

  it("keeps a session that already has new-layout state: the wave-1 transcript becomes an archive", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    await store.appendInbox(inbound({ text: "new world", messageId: "n1", sessionKey: SESSION }), 0);
    const turn = claimed(await store.beginTurn(SESSION, "tok", { leaseMs: 10_000, mode: "all" }));
    await store.endTurn(SESSION, turn.claim, { state: turn.state, transcript: [{ id: "m1", role: "user", content: "new world" }], outbox: [] });
    // An old-version process still running wrote to the wave-1 keys meanwhile.
    await writeWave1(prefix);
    expect(await hasLegacyWork(redis, prefix, SESSION)).toBe(true);
    await migrateSession(redis, prefix, SESSION);
    expect(await hasLegacyWork(redis, prefix, SESSION)).toBe(false);
    expect((await store.readTranscript(SESSION)).map((message) => message.content)).toEqual(["new world"]);
    expect(await redis.llen(store.keys(SESSION).archive("sid-current"))).toBe(2);
    expect(await store.inboxLength(SESSION)).toBe(2);
  });
});
