import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import type { OutboundReply } from "../../../src/adapters/channel-adapter.js";
import { createRedis, readConfirmer, type Redis } from "../../../src/queue/index.js";
import { newSessionState } from "../../../src/session/state.js";
import { SessionStore } from "../../../src/session/store.js";
import { uniquePrefix } from "../../helpers/config.js";
import { claimed } from "../../helpers/session.js";
import { inbound } from "../../helpers/recording-adapter.js";

const LEASE = { leaseMs: 10_000, mode: "all" as const };

describe("session store on Redis", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  const reply = (sessionKey: string, replyId: string): OutboundReply => ({
    replyId, sessionKey, target: { platform: "console", chatId: "c" }, text: replyId, inReplyTo: [], kind: "answer",
  });

  it("dedupes by platform message id, and keeps a claimed batch until the commit", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    const message = inbound({ text: "a", messageId: "x1", sessionKey: "console:s" });
    expect(await store.appendInbox(message, 1)).toBe(true);
    expect(await store.appendInbox(message, 2)).toBe(false);
    await store.appendInbox(inbound({ text: "b", messageId: "x2", sessionKey: "console:s" }), 3);
    expect(await store.sessionsWithWork()).toEqual(["console:s"]);
    const first = claimed(await store.beginTurn("console:s", "attempt-1", LEASE));
    expect(first.batch.map((entry) => entry.text)).toEqual(["a", "b"]);
    // The attempt died holding the lease; once it expires, a retry gets the same batch plus
    // what arrived since.
    await redis.del(store.keys("console:s").lease);
    await store.appendInbox(inbound({ text: "c", messageId: "x3", sessionKey: "console:s" }), 4);
    const retry = claimed(await store.beginTurn("console:s", "attempt-2", LEASE));
    expect(retry.batch.map((entry) => entry.text)).toEqual(["a", "b", "c"]);
    const ended = await store.endTurn("console:s", retry.claim, { state: retry.state, transcript: [], outbox: [] });
    expect(ended).toMatchObject({ status: "committed", version: 1, inbox: 0, pending: 0, outbox: 0 });
    expect(await store.beginTurn("console:s", "attempt-3", LEASE)).toEqual({ status: "idle", outbox: 0, outboxPlatform: undefined });
    expect(await store.settle("console:s")).toBe(true);
    expect(await store.sessionsWithWork()).toEqual([]);
  });

  it("with replicas asked for, a session is un-listed only when a replica confirms it has nothing left", async () => {
    const prefix = uniquePrefix();
    // This Redis has no replica, as a master frozen past its failover and woken has none: WAIT 1
    // counts 0. Its "nothing left" may be a commit the new master never got (issue 33).
    const fenced = new SessionStore(redis, prefix, { confirmRead: readConfirmer(redis, 1, 100) });
    await redis.sadd(`${prefix}:work`, "console:idle");
    expect(await fenced.settle("console:idle")).toBe(false);
    expect(await fenced.sessionsWithWork()).toEqual(["console:idle"]);
    // With none asked for (REDIS_MIN_REPLICAS_ACK=0), the master's word suffices.
    expect(await new SessionStore(redis, prefix).settle("console:idle")).toBe(true);
    expect(await fenced.sessionsWithWork()).toEqual([]);
  });

  it("takes one message per turn in queue mode", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    for (const text of ["1", "2", "3"]) await store.appendInbox(inbound({ text, messageId: `q${text}`, sessionKey: "console:q" }), 0);
    const one = { leaseMs: 10_000, mode: "one" as const };
    const first = claimed(await store.beginTurn("console:q", "t1", one));
    expect(first.batch.map((entry) => entry.text)).toEqual(["1"]);
    await redis.del(store.keys("console:q").lease);
    const retry = claimed(await store.beginTurn("console:q", "t2", one));
    expect(retry.batch.map((entry) => entry.text)).toEqual(["1"]);
    // The first attempt lost the session to the retry: only the retry commits.
    expect(await store.endTurn("console:q", first.claim, { state: first.state, transcript: [], outbox: [] })).toEqual({ status: "lost" });
    const ended = await store.endTurn("console:q", retry.claim, { state: retry.state, transcript: [], outbox: [] });
    expect(ended).toMatchObject({ status: "committed", inbox: 2, pending: 0 });
    expect(claimed(await store.beginTurn("console:q", "t3", one)).batch.map((entry) => entry.text)).toEqual(["2"]);
  });

  it("refuses a commit on a stale version and writes nothing of it", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    await store.appendInbox(inbound({ text: "x", messageId: "v1", sessionKey: "console:v" }), 0);
    const first = claimed(await store.beginTurn("console:v", "a", LEASE));
    const stale = first.claim;
    const live = [{ id: "m1", role: "user" as const, content: "first" }];
    expect(await store.endTurn("console:v", first.claim, { state: { ...first.state, live }, transcript: live, outbox: [reply("console:v", "r1")] }))
      .toMatchObject({ status: "committed", version: 1, outbox: 1, outboxPlatform: "console" });
    // A second attempt that began from version 0 (it must hold the lease to get this far).
    await redis.set(store.keys("console:v").lease, "b");
    const second = [{ id: "m1", role: "user" as const, content: "second" }];
    expect(await store.endTurn("console:v", { ...stale, token: "b" }, { state: { ...first.state, live: second }, transcript: second, outbox: [reply("console:v", "r2")] }))
      .toEqual({ status: "conflict", current: 1 });
    expect((await store.load("console:v")).live[0]?.content).toBe("first");
    expect((await store.readTranscript("console:v")).map((message) => message.content)).toEqual(["first"]);
    expect(await store.outboxLength("console:v")).toBe(1);
  });

  it("answers 'done' to a commit re-sent after its reply was lost, and commits nothing twice", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    await store.appendInbox(inbound({ text: "once", messageId: "o1", sessionKey: "console:o" }), 0);
    const turn = claimed(await store.beginTurn("console:o", "tok", LEASE));
    const input = { state: turn.state, transcript: [{ id: "m1", role: "user" as const, content: "once" }], outbox: [reply("console:o", "r1")] };
    expect(await store.endTurn("console:o", turn.claim, input)).toMatchObject({ status: "committed", version: 1 });
    expect(await store.endTurn("console:o", turn.claim, input)).toMatchObject({ status: "done", version: 1, outbox: 1 });
    expect(await store.readTranscript("console:o")).toHaveLength(1);
    expect(await store.outboxLength("console:o")).toBe(1);
  });

  it("finds transcript messages by id and by words", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    await store.appendInbox(inbound({ text: "x", messageId: "t1", sessionKey: "console:t" }), 0);
    const turn = claimed(await store.beginTurn("console:t", "tok", LEASE));
    await store.endTurn("console:t", turn.claim, {
      state: turn.state,
      transcript: [
        { id: "m1", role: "user", content: "the server is called Nimbus" },
        { id: "m2", role: "assistant", content: "noted", tokens: { encoding: "o200k_base", count: 2 } },
      ],
      outbox: [],
    });
    expect(await store.transcriptMessage("console:t", "m2")).toEqual({ id: "m2", role: "assistant", content: "noted" });
    const found = await store.searchTranscript("console:t", "SERVER nimbus", 5);
    expect(found.messages.map((message) => message.id)).toEqual(["m1"]);
    expect(found.continueBefore).toBeUndefined();
  });

  it("searches by words newest first, a bounded page at a time, never the whole transcript", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    const key = store.keys("console:big").transcript;
    const entries = Array.from({ length: 5_000 }, (_, index) => JSON.stringify({ id: `m${index}`, role: "user", content: index === 10 ? "the vault code is 1234" : index % 1_000 === 999 ? `vault note ${index}` : `chatter ${index}` }));
    for (let start = 0; start < entries.length; start += 1_000) await redis.rpush(key, ...entries.slice(start, start + 1_000));

    const recent = await store.searchTranscript("console:big", "vault", 2);
    expect(recent.messages.map((message) => message.id)).toEqual(["m4999", "m3999"]);
    expect(recent.scanned).toBe(1_001);
    expect(recent.continueBefore).toBe(3_999);

    const code = await store.searchTranscript("console:big", "vault code", 8);
    expect(code.messages).toEqual([]);
    expect(code.scanned).toBe(2_000);
    expect(code.continueBefore).toBe(3_000);
    const older = await store.searchTranscript("console:big", "vault code", 8, { before: code.continueBefore! });
    expect(older.scanned).toBe(2_000);
    const oldest = await store.searchTranscript("console:big", "vault code", 8, { before: older.continueBefore! });
    expect(oldest.messages.map((message) => message.id)).toEqual(["m10"]);
    expect(oldest.scanned).toBe(1_000);
    expect(oldest.continueBefore).toBeUndefined();
    // A smaller budget reads less.
    expect((await store.searchTranscript("console:big", "nothing", 8, { maxEntries: 300 })).scanned).toBe(300);
  });

  it("archives the transcript on /new, with the configured retention", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix, { archiveRetentionMs: 86_400_000 });
    const commit = async (text: string, archivedSessionId?: string) => {
      await store.appendInbox(inbound({ text, messageId: text, sessionKey: "console:a" }), 0);
      const turn = claimed(await store.beginTurn("console:a", `tok-${text}`, LEASE));
      const state = archivedSessionId ? newSessionState(Date.now(), turn.state.version) : turn.state;
      await store.endTurn("console:a", turn.claim, {
        state, transcript: [{ id: text, role: "user", content: text }], outbox: [],
        ...(archivedSessionId ? { archivedSessionId } : {}),
      });
      return turn.state;
    };
    const old = await commit("old");
    await commit("new", old.sessionId);
    expect((await store.readTranscript("console:a")).map((message) => message.content)).toEqual(["new"]);
    const archiveKey = store.keys("console:a").archive(old.sessionId);
    expect(archiveKey).toBe(`${prefix}:{console:a}:archive:${old.sessionId}`);
    expect(await redis.lrange(archiveKey, 0, -1)).toHaveLength(1);
    const ttl = await redis.pttl(archiveKey);
    expect(ttl).toBeGreaterThan(86_000_000);
    expect(ttl).toBeLessThanOrEqual(86_400_000);
  });

  it("keeps every key of a session under its hash tag (one Cluster slot)", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    const sessionKey = "tg:-100123:7";
    await store.appendInbox(inbound({ platform: "telegram", chatId: "-100123", threadId: "7", text: "hi", messageId: "55", sessionKey }), 0);
    const turn = claimed(await store.beginTurn(sessionKey, "tok", LEASE));
    await store.endTurn(sessionKey, turn.claim, { state: turn.state, transcript: [{ id: "m1", role: "user", content: "hi" }], outbox: [reply(sessionKey, "r1")] });
    await store.requestAbort(sessionKey, "stop");
    const keys = await redis.keys(`${prefix}:*`);
    const sessionOwned = keys.filter((key) => key !== `${prefix}:work`);
    expect(sessionOwned.length).toBeGreaterThanOrEqual(6);
    for (const key of sessionOwned) expect(key.startsWith(`${prefix}:{${sessionKey}}:`)).toBe(true);
    // Every key name of the layout, checked too (not only those this test happened to write).
    for (const key of Object.values(store.keys(sessionKey))) {
      if (typeof key === "string") expect(key.startsWith(`${prefix}:{${sessionKey}}:`)).toBe(true);
    }
  });
});
