/**
 * The live context is a Redis list of its own: a turn writes its new messages, not the whole
 * context. Measured in bytes Redis appends to its AOF (appendfsync always, a private server:
 * the count is exact and nothing else writes there), not in time.
 */
import { wellFormedDeep } from "../../../src/core/text.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/messages.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { newSessionState, type SessionState } from "../../../src/session/state.js";
import { liveChange, SessionStore } from "../../../src/session/store.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { claimed } from "../../helpers/session.js";

const LEASE = { leaseMs: 10_000, mode: "all" as const };

/** Text without spaces, emoji and combining marks: JSON escapes and multi-byte characters count too. */
const text = (seed: number, chars: number) => {
  let out = "";
  for (let index = seed; out.length < chars; index++) out += `w${(index * 7_919) % 5_003}🦊e\u0301—`;
  return out.slice(0, chars);
};

describe("live context storage", () => {
  let server: RedisServerHandle;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedisServer({ appendOnly: true });
    redis = createRedis(server.url);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.dispose();
  });

  const aofBytes = async () => Number(/aof_current_size:(\d+)/.exec(await redis.info("persistence"))?.[1]);

  /** One turn through the store as the worker runs it; → bytes Redis wrote for it. */
  async function turn(store: SessionStore, sessionKey: string, index: number, build?: (state: SessionState) => ChatMessage[]): Promise<number> {
    const before = await aofBytes();
    await store.appendInbox(inbound({ sessionKey, chatId: sessionKey, messageId: `in-${index}`, text: `question ${index}`, sentAt: 1_000 }), 1_000);
    const begun = claimed(await store.beginTurn(sessionKey, `t-${index}`, LEASE));
    const state = structuredClone(begun.state);
    const added: ChatMessage[] = build ? build(state) : [
      { id: `m${state.nextSeq++}`, at: 1_000, role: "user", content: begun.batch[0]!.text },
      { id: `m${state.nextSeq++}`, at: 1_000, role: "assistant", content: text(index, 600), tokens: { encoding: "o200k_base", count: 150 } },
    ];
    if (!build) state.live.push(...added);
    state.stats.turns++;
    const ended = await store.endTurn(sessionKey, begun.claim, { state, transcript: added, outbox: [] });
    expect(ended.status).toBe("committed");
    return (await aofBytes()) - before;
  }

  it("writes the same bytes per turn for a new session and for a four-week one", async () => {
    const store = new SessionStore(redis, "bytes");
    // Same-length keys and ids, so that only the context's size differs.
    const short = "console:aaaa";
    const long = "console:bbbb";
    for (const sessionKey of [short, long]) {
      await store.appendInbox(inbound({ sessionKey, chatId: sessionKey, messageId: "seed", text: "seed", sentAt: 1_000 }), 1_000);
      const begun = claimed(await store.beginTurn(sessionKey, "seed", LEASE));
      const state = structuredClone(begun.state);
      // Four weeks at 200 messages a day, the live context as compaction keeps it (~240,000 characters).
      const messages = sessionKey === long ? 400 : 2;
      state.nextSeq = 100_000;
      const live: ChatMessage[] = Array.from({ length: messages }, (_, index) => ({ id: `m${10_000 + index}`, at: 1_000, role: index % 2 === 0 ? "user" : "assistant", content: text(index, 600) }));
      state.live.push(...live);
      await store.endTurn(sessionKey, begun.claim, { state, transcript: live, outbox: [] });
    }
    const liveBytes = Buffer.byteLength((await redis.lrange(store.keys(long).live, 0, -1)).join(""));
    expect(liveBytes).toBeGreaterThan(240_000);

    const shortBytes: number[] = [];
    const longBytes: number[] = [];
    for (let index = 1; index <= 5; index++) {
      shortBytes.push(await turn(store, short, index));
      longBytes.push(await turn(store, long, index));
    }
    for (let index = 0; index < 5; index++) {
      // The new messages (~1.5 KB with the transcript copy) plus a constant; nothing of the
      // context. The few bytes apart are numbers written as text (transcript positions).
      expect(Math.abs(longBytes[index]! - shortBytes[index]!)).toBeLessThanOrEqual(16);
      expect(longBytes[index]).toBeLessThan(6_000);
    }
    expect((await store.load(long)).live).toHaveLength(400 + 10);
  });

  it("loads a session stored in the inline format, and moves its context into the list on its first commit", async () => {
    const store = new SessionStore(redis, "inline");
    const sessionKey = "console:old";
    const old: SessionState = { ...newSessionState(1_000, 7), nextSeq: 3 };
    old.live = [
      { id: "m1", at: 1_000, role: "system", content: "You are helpful." },
      { id: "m2", at: 1_000, role: "user", content: text(1, 300), tokens: { encoding: "o200k_base", count: 90 } },
    ];
    const keys = store.keys(sessionKey);
    await redis.set(keys.state, JSON.stringify(old));
    await redis.set(keys.version, "7");

    expect(await store.load(sessionKey)).toEqual(old);
    const bytes = await turn(store, sessionKey, 1);
    // The first commit writes the whole context once, into the list.
    expect(bytes).toBeGreaterThan(Buffer.byteLength(JSON.stringify(old.live)));
    const stored = JSON.parse((await redis.get(keys.state))!) as Record<string, unknown>;
    expect(stored).not.toHaveProperty("live");
    expect(stored).toMatchObject({ version: 8, sessionId: old.sessionId, nextSeq: 5 });
    const loaded = await store.load(sessionKey);
    // As stored, made well-formed: text(1, 300) cuts an emoji in half, which the commit writes as U+FFFD.
    expect(loaded.live.slice(0, 2)).toEqual(wellFormedDeep(old.live));
    expect(loaded.live[1]!.content).toMatch(/\uFFFD$/);
    expect(loaded.live.map((message) => message.id)).toEqual(["m1", "m2", "m3", "m4"]);
    // From then on only the new messages.
    expect(await turn(store, sessionKey, 2)).toBeLessThan(bytes - Buffer.byteLength(JSON.stringify(old.live)) + 1_000);
  });

  it("rewrites the list from the first changed message: compaction, a pruned output, /new", async () => {
    const store = new SessionStore(redis, "rewrite");
    const sessionKey = "console:rw";
    await turn(store, sessionKey, 1);
    await turn(store, sessionKey, 2);
    await turn(store, sessionKey, 3);
    const before = await store.load(sessionKey);
    expect(before.live).toHaveLength(6);

    // A pruned tool output in the middle: kept up to it, rewritten from there.
    await turn(store, sessionKey, 4, (state) => {
      state.live[3] = { ...state.live[3]!, content: "[pruned]" };
      return [];
    });
    const pruned = await store.load(sessionKey);
    expect(pruned.live).toEqual([...before.live.slice(0, 3), { ...before.live[3], content: "[pruned]" }, ...before.live.slice(4)]);

    // Compaction: a summary replaces the head.
    await turn(store, sessionKey, 5, (state) => {
      const summary: ChatMessage = { id: `m${state.nextSeq++}`, at: 1_000, role: "user", content: "Summary 🦊 of what came before" };
      state.live = [summary, ...state.live.slice(4)];
      return [summary];
    });
    expect((await store.load(sessionKey)).live.map((message) => message.content)).toEqual(["Summary 🦊 of what came before", ...before.live.slice(4).map((message) => message.content)]);

    // Everything gone (a fresh conversation without a system prompt yet).
    await turn(store, sessionKey, 6, (state) => {
      state.live = [];
      return [];
    });
    expect((await store.load(sessionKey)).live).toEqual([]);
    expect(await redis.exists(store.keys(sessionKey).live)).toBe(0);
  });

  it("stores a token count cached in place on a loaded message (the one change made in place)", async () => {
    const store = new SessionStore(redis, "cache");
    const sessionKey = "console:cache";
    await turn(store, sessionKey, 1);
    await store.appendInbox(inbound({ sessionKey, chatId: sessionKey, messageId: "in-2", text: "next", sentAt: 1_000 }), 1_000);
    // The loaded state as the engine gets it: no copy of the messages.
    const begun = claimed(await store.beginTurn(sessionKey, "t-2", LEASE));
    const [question, answer] = begun.state.live;
    expect(answer!.tokens).toEqual({ encoding: "o200k_base", count: 150 });
    question!.tokens = { encoding: "o200k_base", count: 7 };
    answer!.tokens = { encoding: "cl100k_base", count: 151 };
    expect((await store.endTurn(sessionKey, begun.claim, { state: begun.state, transcript: [], outbox: [] })).status).toBe("committed");
    expect((await store.load(sessionKey)).live.map((message) => message.tokens)).toEqual([
      { encoding: "o200k_base", count: 7 }, { encoding: "cl100k_base", count: 151 },
    ]);
  });

  it("keeps the longest stored prefix and appends the rest", () => {
    const messages: ChatMessage[] = [
      { id: "m1", role: "system", content: "s" },
      { id: "m2", role: "user", content: "u" },
      { id: "m3", role: "assistant", content: "a" },
    ];
    const stored = messages.map((message) => JSON.stringify(message));
    expect(liveChange(stored, messages)).toEqual({ keep: -1, append: [] });
    expect(liveChange(stored, [...messages, { id: "m4", role: "user", content: "v" }])).toEqual({ keep: -1, append: [JSON.stringify({ id: "m4", role: "user", content: "v" })] });
    expect(liveChange(stored, [messages[0]!, { ...messages[1]!, content: "x" }, messages[2]!]).keep).toBe(1);
    expect(liveChange(stored, messages.slice(1))).toEqual({ keep: 0, append: stored.slice(1) });
    expect(liveChange(stored, [])).toEqual({ keep: 0, append: [] });
    expect(liveChange([], messages)).toEqual({ keep: -1, append: stored });
  });
});
