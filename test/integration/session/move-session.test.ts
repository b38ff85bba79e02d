/**
 * Moving a session to a new key (a Telegram group upgraded to a supergroup), on a real Redis:
 * everything the old key owned arrives under the new one in one step, queued entries are
 * re-addressed, a commit racing the move can neither be lost nor land on the old key, and the
 * move is fenced by the old session's turn lease.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { globalKeys } from "../../../src/session/keys.js";
import { moveSession, SessionBusyError } from "../../../src/session/move-session.js";
import { SessionStore } from "../../../src/session/store.js";
import type { SessionState } from "../../../src/session/state.js";
import type { ChatMessage } from "../../../src/core/messages.js";
import type { OutboundReply } from "../../../src/core/channel.js";
import { uniquePrefix } from "../../helpers/config.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { claimed } from "../../helpers/session.js";
import { sleep } from "../../helpers/stall-run.js";

const OLD = { sessionKey: "tg:-4001", chatId: "-4001" };
const NEW = { sessionKey: "tg:-1004001", chatId: "-1004001" };
const move = { fromSessionKey: OLD.sessionKey, toSessionKey: NEW.sessionKey, fromChatId: OLD.chatId, toChatId: NEW.chatId };

const user = (id: string, content: string): ChatMessage => ({ id, role: "user", content, at: 1 }) as ChatMessage;
const reply = (text: string): OutboundReply => ({
  replyId: `${OLD.sessionKey}#9`, sessionKey: OLD.sessionKey, target: { platform: "telegram", chatId: OLD.chatId, replyToMessageId: "5" }, text, inReplyTo: ["5"], kind: "answer",
});
const message = (sessionKey: string, chatId: string, messageId: string, text: string) => inbound({ platform: "telegram", sessionKey, chatId, messageId, text });

/** One fenced turn that changes the state (begin holding the lease, end with the change). */
async function commitTurn(store: SessionStore, sessionKey: string, change: (state: SessionState) => { transcript?: ChatMessage[]; outbox?: OutboundReply[]; archivedSessionId?: string }) {
  const begun = claimed(await store.beginTurn(sessionKey, `t-${Math.random()}`, { leaseMs: 10_000, mode: "all", hold: true }));
  const state = structuredClone(begun.state);
  const { transcript = [], outbox = [], archivedSessionId } = change(state);
  return store.endTurn(sessionKey, begun.claim, { state, transcript, outbox, ...(archivedSessionId ? { archivedSessionId } : {}) });
}

describe("moveSession", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  /** → the id of the archived first conversation. */
  async function sessionWithHistory(store: SessionStore): Promise<string> {
    // Turn 1, then /new (archives it), then turn 2 whose reply is still queued.
    await commitTurn(store, OLD.sessionKey, (state) => {
      state.live = [user("m1", "remember: the code word is heron")];
      return { transcript: state.live };
    });
    const archived = (await store.load(OLD.sessionKey)).sessionId;
    await commitTurn(store, OLD.sessionKey, (state) => {
      state.sessionId = "second";
      state.live = [];
      return { archivedSessionId: archived };
    });
    await commitTurn(store, OLD.sessionKey, (state) => {
      state.live = [user("m2", "and the colour is teal")];
      // The chat's settings (/model, /persona, /timezone) are the group's, not the chat id's.
      state.chat = { persona: "Be brief.", timeZone: "Asia/Tokyo" };
      return { transcript: state.live, outbox: [reply("queued answer")] };
    });
    await store.appendInbox(message(OLD.sessionKey, OLD.chatId, "6", "waiting in the inbox"), 1);
    return archived;
  }

  it("moves state, transcript, archives, inbox and outbox under the new key, re-addressed, in one step", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    const archived = await sessionWithHistory(store);
    const before = await store.load(OLD.sessionKey);
    const seenKey = store.keys(OLD.sessionKey).seen("telegram", "6");
    const oldKeys = (await redis.keys(`${prefix}:*${OLD.sessionKey}*`)).filter((key) => key !== seenKey);

    const outcome = await moveSession(redis, prefix, move);
    expect(outcome).toEqual({ result: "moved", work: { inbox: 1, pending: 0, outbox: 1 } });

    const after = await store.load(NEW.sessionKey);
    expect(after.live).toEqual(before.live);
    expect(after.chat).toEqual({ persona: "Be brief.", timeZone: "Asia/Tokyo" });
    expect(after.version).toBe(before.version);
    expect((await store.readTranscript(NEW.sessionKey)).map((entry) => entry.content)).toEqual(["and the colour is teal"]);
    expect((await store.transcriptMessage(NEW.sessionKey, "m2"))?.content).toBe("and the colour is teal");
    // The archive of the first conversation came along; the last committer's token stays behind.
    const lastCommit = store.keys(OLD.sessionKey).lastCommit;
    expect(await redis.keys(`${prefix}:*${NEW.sessionKey}*`)).toHaveLength(oldKeys.filter((key) => key !== lastCommit).length);
    expect((await redis.lrange(store.keys(NEW.sessionKey).archive(archived), 0, -1)).some((raw) => raw.includes("heron"))).toBe(true);
    expect(await redis.exists(store.keys(NEW.sessionKey).archiveIndex(archived))).toBe(1);
    // Queued entries now name the new session and chat, so the reply goes to the supergroup.
    const head = JSON.parse((await redis.lindex(store.keys(NEW.sessionKey).outbox, 0)) ?? "{}") as OutboundReply;
    expect(head).toMatchObject({ sessionKey: NEW.sessionKey, target: { chatId: NEW.chatId }, text: "queued answer" });
    const inboxEntry = JSON.parse((await redis.lindex(store.keys(NEW.sessionKey).inbox, 0)) ?? "{}") as { chatId: string; sessionKey: string };
    expect(inboxEntry).toMatchObject({ chatId: NEW.chatId, sessionKey: NEW.sessionKey });
    expect(await redis.smembers(globalKeys(prefix).workSet)).toEqual([NEW.sessionKey]);
    // Nothing of the session is left under the old key but its tombstone, and the dedupe ids of
    // the old chat's messages: a re-delivery addressed to the old chat is still a duplicate.
    expect((await redis.keys(`${prefix}:*${OLD.sessionKey}*`)).sort()).toEqual([seenKey, store.keys(OLD.sessionKey).version].sort());
    expect(await store.appendInbox(message(OLD.sessionKey, OLD.chatId, "6", "waiting in the inbox"), 2)).toBe(false);

    expect((await moveSession(redis, prefix, move)).result).toBe("already-moved");
  });

  it("leaves a turn of the old key whose lease ran out unable to commit there, and begins none there again", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    // Even a brand-new session (version 0) cannot be written under the old key after the move.
    await store.appendInbox(message(OLD.sessionKey, OLD.chatId, "1", "first ever"), 1);
    const running = claimed(await store.beginTurn(OLD.sessionKey, "stalled", { leaseMs: 100, mode: "all" }));
    await sleep(150);
    expect((await moveSession(redis, prefix, move)).result).toBe("moved");
    const late = await store.endTurn(OLD.sessionKey, running.claim, { state: running.state, transcript: [user("m1", "late answer")], outbox: [reply("late")] });
    expect(late.status).toBe("conflict");
    expect(await store.transcriptLength(OLD.sessionKey)).toBe(0);
    expect(await store.outboxLength(OLD.sessionKey)).toBe(0);
    // Its batch went with the session, for the new key's turn to answer.
    expect(claimed(await store.beginTurn(NEW.sessionKey, "new", { leaseMs: 10_000, mode: "all" })).batch.map((entry) => entry.text)).toEqual(["first ever"]);
    expect(await store.beginTurn(OLD.sessionKey, "again", { leaseMs: 10_000, mode: "all", hold: true })).toEqual({ status: "moved" });
  });

  it("waits for a running turn: asks it to stop, lets no new turn begin, and moves once its lease is free", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    await store.appendInbox(message(OLD.sessionKey, OLD.chatId, "1", "asked before the upgrade"), 1);
    const running = claimed(await store.beginTurn(OLD.sessionKey, "running", { leaseMs: 10_000, mode: "all" }));

    const moving = moveSession(redis, prefix, move, { waitForTurnMs: 5_000 });
    await sleep(100);
    // The running turn is asked to stop, as a busy-mode interrupt asks it, and no other begins.
    expect(await redis.get(store.keys(OLD.sessionKey).abort)).toBe("interrupt");
    await store.appendInbox(message(OLD.sessionKey, OLD.chatId, "2", "sent meanwhile"), 2);
    expect(await store.beginTurn(OLD.sessionKey, "other", { leaseMs: 10_000, mode: "all" })).toMatchObject({ status: "busy" });
    expect(await redis.exists(store.keys(NEW.sessionKey).version, store.keys(NEW.sessionKey).pending)).toBe(0);

    // The turn hands back (nothing committed) and lets go of its lease: the move goes through.
    await redis.del(store.keys(OLD.sessionKey).lease);
    expect(await moving).toEqual({ result: "moved", work: { inbox: 1, pending: 1, outbox: 0 } });
    expect(await redis.exists(store.keys(OLD.sessionKey).moving, store.keys(OLD.sessionKey).abort)).toBe(0);
    // Had it committed instead, the move would have carried its commit; now its commit is refused.
    expect((await store.endTurn(OLD.sessionKey, running.claim, { state: running.state, transcript: [user("m1", "too late")], outbox: [] })).status).toBe("conflict");
    const next = claimed(await store.beginTurn(NEW.sessionKey, "new", { leaseMs: 10_000, mode: "all" }));
    expect(next.batch.map((entry) => [entry.text, entry.chatId])).toEqual([["asked before the upgrade", NEW.chatId], ["sent meanwhile", NEW.chatId]]);
  });

  it("gives up waiting for a turn that keeps its lease, and lets turns begin again", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    await store.appendInbox(message(OLD.sessionKey, OLD.chatId, "1", "long question"), 1);
    claimed(await store.beginTurn(OLD.sessionKey, "long", { leaseMs: 10_000, mode: "all" }));
    await expect(moveSession(redis, prefix, move, { waitForTurnMs: 300 })).rejects.toBeInstanceOf(SessionBusyError);
    expect(await redis.exists(store.keys(NEW.sessionKey).version)).toBe(0);
    // The moving mark expires with its last renewal: the old session is not blocked for good.
    expect(await redis.pttl(store.keys(OLD.sessionKey).moving)).toBeLessThanOrEqual(5_000);
  });

  it("forwards a message that reached the old key after the move to the new session", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    await sessionWithHistory(store);
    expect((await moveSession(redis, prefix, move)).result).toBe("moved");
    await store.appendInbox(message(OLD.sessionKey, OLD.chatId, "7", "late re-delivery"), 3);
    expect(await store.beginTurn(OLD.sessionKey, "late", { leaseMs: 10_000, mode: "all" })).toEqual({ status: "moved" });
    expect(await store.forwardToMoved(OLD.sessionKey)).toEqual({ toSessionKey: NEW.sessionKey, forwarded: 1 });
    expect(await store.inboxLength(OLD.sessionKey)).toBe(0);
    const batch = claimed(await store.beginTurn(NEW.sessionKey, "new", { leaseMs: 10_000, mode: "all" })).batch;
    expect(batch.map((entry) => [entry.text, entry.sessionKey, entry.chatId])).toEqual([
      ["waiting in the inbox", NEW.sessionKey, NEW.chatId],
      ["late re-delivery", NEW.sessionKey, NEW.chatId],
    ]);
    expect(await store.forwardToMoved(NEW.sessionKey)).toBeUndefined();
  });

  it("reports nothing to move, and refuses to overwrite a session the new key already has", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    expect((await moveSession(redis, prefix, move)).result).toBe("nothing");
    await sessionWithHistory(store);
    await commitTurn(store, NEW.sessionKey, (state) => {
      state.live = [user("m1", "already talking in the supergroup")];
      return { transcript: state.live };
    });
    expect((await moveSession(redis, prefix, move)).result).toBe("target-exists");
    expect((await store.load(OLD.sessionKey)).live[0]?.content).toBe("and the colour is teal");
    expect((await store.load(NEW.sessionKey)).live[0]?.content).toBe("already talking in the supergroup");
  });

  it("retries when a message arrives between reading and moving, losing none", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    await sessionWithHistory(store);
    // Another connection appends to the inbox while the move reads it: the first script run
    // sees the list changed and the move starts over.
    let raced = false;
    const originalLrange = redis.lrange.bind(redis);
    const spy = Object.assign(Object.create(redis) as Redis, {
      lrange: async (...args: Parameters<Redis["lrange"]>) => {
        const result = await originalLrange(...args);
        if (!raced && String(args[0]).endsWith(":inbox")) {
          raced = true;
          await store.appendInbox(message(OLD.sessionKey, OLD.chatId, "7", "raced in"), 2);
        }
        return result;
      },
    });
    const outcome = await moveSession(spy, prefix, move);
    expect(outcome.result).toBe("moved");
    expect(outcome.work.inbox).toBe(2);
    const batch = claimed(await store.beginTurn(NEW.sessionKey, "new", { leaseMs: 10_000, mode: "all" })).batch;
    expect(batch.map((entry) => entry.text)).toEqual(["waiting in the inbox", "raced in"]);
  });
});
