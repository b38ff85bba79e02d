import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { newSessionState } from "../../../src/session/state.js";
import { SessionStore, VersionConflictError } from "../../../src/session/store.js";
import { uniquePrefix } from "../../helpers/config.js";
import { inbound } from "../../helpers/recording-adapter.js";
import type { OutboundReply } from "../../../src/adapters/channel-adapter.js";

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
    const batch = await store.claimInbox("console:s", "all");
    expect(batch.map((entry) => entry.text)).toEqual(["a", "b"]);
    // A retried turn (the first died) gets the same batch plus what arrived since.
    await store.appendInbox(inbound({ text: "c", messageId: "x3", sessionKey: "console:s" }), 4);
    expect((await store.claimInbox("console:s", "all")).map((entry) => entry.text)).toEqual(["a", "b", "c"]);
    const state = await store.load("console:s");
    await store.commit("console:s", { state, transcript: [], outbox: [], clearPending: true });
    expect(await store.claimInbox("console:s", "all")).toEqual([]);
    expect(await store.settle("console:s")).toBe(true);
  });

  it("takes one message per turn in queue mode", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    for (const text of ["1", "2", "3"]) await store.appendInbox(inbound({ text, messageId: `q${text}`, sessionKey: "console:q" }), 0);
    expect((await store.claimInbox("console:q", "one")).map((entry) => entry.text)).toEqual(["1"]);
    expect((await store.claimInbox("console:q", "one")).map((entry) => entry.text)).toEqual(["1"]);
    await store.commit("console:q", { state: await store.load("console:q"), transcript: [], outbox: [], clearPending: true });
    expect((await store.claimInbox("console:q", "one")).map((entry) => entry.text)).toEqual(["2"]);
  });

  it("refuses a commit on a stale version and writes nothing of it", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    const stale = await store.load("console:v");
    const first = { ...stale, live: [{ id: "m1", role: "user" as const, content: "first" }] };
    expect(await store.commit("console:v", { state: first, transcript: first.live, outbox: [reply("console:v", "r1")], clearPending: true })).toBe(1);
    const second = { ...stale, live: [{ id: "m1", role: "user" as const, content: "second" }] };
    await expect(store.commit("console:v", { state: second, transcript: second.live, outbox: [reply("console:v", "r2")], clearPending: true }))
      .rejects.toThrow(VersionConflictError);
    expect((await store.load("console:v")).live[0]?.content).toBe("first");
    expect((await store.readTranscript("console:v")).map((message) => message.content)).toEqual(["first"]);
    expect(await store.outboxLength("console:v")).toBe(1);
  });

  it("finds transcript messages by id and by words, and pops the outbox only for the right head", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    const state = await store.load("console:t");
    await store.commit("console:t", {
      state,
      transcript: [
        { id: "m1", role: "user", content: "the server is called Nimbus" },
        { id: "m2", role: "assistant", content: "noted", tokens: { encoding: "o200k_base", count: 2 } },
      ],
      outbox: [reply("console:t", "r1"), reply("console:t", "r2")],
      clearPending: true,
    });
    expect((await store.transcriptMessage("console:t", "m2"))).toEqual({ id: "m2", role: "assistant", content: "noted" });
    expect((await store.searchTranscript("console:t", "SERVER nimbus", 5)).map((message) => message.id)).toEqual(["m1"]);
    await store.popOutbox("console:t", "r2");
    expect((await store.outboxHead("console:t"))?.reply.replyId).toBe("r1");
    await store.recordPartSent("console:t", 0);
    expect((await store.outboxHead("console:t"))?.fromPart).toBe(1);
    await store.popOutbox("console:t", "r1");
    expect((await store.outboxHead("console:t"))).toEqual({ reply: reply("console:t", "r2"), fromPart: 0 });
  });

  it("archives the transcript on /new, with the configured retention", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix, { archiveRetentionMs: 86_400_000 });
    const state = await store.load("console:a");
    await store.commit("console:a", { state, transcript: [{ id: "m1", role: "user", content: "old" }], outbox: [], clearPending: true });
    const fresh = newSessionState(Date.now(), 1);
    await store.commit("console:a", { state: fresh, transcript: [{ id: "m2", role: "user", content: "new" }], outbox: [], clearPending: true, archivedSessionId: state.sessionId });
    expect((await store.readTranscript("console:a")).map((message) => message.content)).toEqual(["new"]);
    const archiveKey = store.keys("console:a").archive(state.sessionId);
    expect(await redis.lrange(archiveKey, 0, -1)).toHaveLength(1);
    const ttl = await redis.pttl(archiveKey);
    expect(ttl).toBeGreaterThan(86_000_000);
    expect(ttl).toBeLessThanOrEqual(86_400_000);
  });
});
