/**
 * Moving a session to a new key (a Telegram group upgraded to a supergroup), on a real Redis:
 * everything the old key owned arrives under the new one in one step, queued entries are
 * re-addressed, and a commit racing the move can neither be lost nor land on the old key.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { globalKeys } from "../../../src/session/keys.js";
import { moveSession } from "../../../src/session/move-session.js";
import { SessionStore, VersionConflictError } from "../../../src/session/store.js";
import type { ChatMessage } from "../../../src/core/messages.js";
import type { OutboundReply } from "../../../src/core/channel.js";
import { uniquePrefix } from "../../helpers/config.js";
import { inbound } from "../../helpers/recording-adapter.js";

const OLD = { sessionKey: "tg:-4001", chatId: "-4001" };
const NEW = { sessionKey: "tg:-1004001", chatId: "-1004001" };
const move = { fromSessionKey: OLD.sessionKey, toSessionKey: NEW.sessionKey, fromChatId: OLD.chatId, toChatId: NEW.chatId };

const user = (id: string, content: string): ChatMessage => ({ id, role: "user", content, at: 1 }) as ChatMessage;
const reply = (text: string): OutboundReply => ({
  replyId: `${OLD.sessionKey}#9`, sessionKey: OLD.sessionKey, target: { platform: "telegram", chatId: OLD.chatId, replyToMessageId: "5" }, text, inReplyTo: ["5"], kind: "answer",
});

describe("moveSession", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  /** → the id of the archived first conversation. */
  async function sessionWithHistory(store: SessionStore): Promise<string> {
    // Turn 1, then /new (archives it), then turn 2 whose reply is still queued.
    let state = await store.load(OLD.sessionKey);
    state.live = [user("m1", "remember: the code word is heron")];
    await store.commit(OLD.sessionKey, { state, transcript: state.live, outbox: [], clearPending: false });
    state = await store.load(OLD.sessionKey);
    const archived = state.sessionId;
    state = { ...state, sessionId: "second", live: [] };
    await store.commit(OLD.sessionKey, { state, transcript: [], outbox: [], clearPending: false, archivedSessionId: archived });
    state = await store.load(OLD.sessionKey);
    state.live = [user("m2", "and the colour is teal")];
    await store.commit(OLD.sessionKey, { state, transcript: state.live, outbox: [reply("queued answer")], clearPending: false });
    await store.appendInbox(inbound({ platform: "telegram", sessionKey: OLD.sessionKey, chatId: OLD.chatId, messageId: "6", text: "waiting in the inbox" }), 1);
    return archived;
  }

  it("moves state, transcript, archives, inbox and outbox under the new key, re-addressed, in one step", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    const archived = await sessionWithHistory(store);
    const before = await store.load(OLD.sessionKey);
    const oldKeys = await redis.keys(`${prefix}:*${OLD.sessionKey}*`);

    const outcome = await moveSession(redis, prefix, move);
    expect(outcome).toEqual({ result: "moved", work: { inbox: 1, pending: 0, outbox: 1 } });

    const after = await store.load(NEW.sessionKey);
    expect(after.live).toEqual(before.live);
    expect(after.version).toBe(before.version);
    expect((await store.readTranscript(NEW.sessionKey)).map((message) => message.content)).toEqual(["and the colour is teal"]);
    expect((await store.transcriptMessage(NEW.sessionKey, "m2"))?.content).toBe("and the colour is teal");
    // The archive of the first conversation came along.
    expect(await redis.keys(`${prefix}:*${NEW.sessionKey}*`)).toHaveLength(oldKeys.length);
    expect((await redis.lrange(store.keys(NEW.sessionKey).archive(archived), 0, -1)).some((raw) => raw.includes("heron"))).toBe(true);
    expect(await redis.exists(store.keys(NEW.sessionKey).archiveIndex(archived))).toBe(1);
    // Queued entries now name the new session and chat, so the reply goes to the supergroup.
    const head = await store.outboxHead(NEW.sessionKey);
    expect(head?.reply).toMatchObject({ sessionKey: NEW.sessionKey, target: { chatId: NEW.chatId }, text: "queued answer" });
    const inboxEntry = JSON.parse((await redis.lindex(store.keys(NEW.sessionKey).inbox, 0)) ?? "{}") as { chatId: string; sessionKey: string };
    expect(inboxEntry).toMatchObject({ chatId: NEW.chatId, sessionKey: NEW.sessionKey });
    expect(await redis.smembers(globalKeys(prefix).workSet)).toEqual([NEW.sessionKey]);
    // Nothing of the session is left under the old key but its tombstone.
    expect(await redis.keys(`${prefix}:*${OLD.sessionKey}*`)).toEqual([store.keys(OLD.sessionKey).version]);

    expect((await moveSession(redis, prefix, move)).result).toBe("already-moved");
  });

  it("leaves a turn still running for the old key unable to commit there", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    // Even a brand-new session (version 0) cannot be written under the old key after the move.
    await store.appendInbox(inbound({ platform: "telegram", sessionKey: OLD.sessionKey, chatId: OLD.chatId, messageId: "1", text: "first ever" }), 1);
    const running = await store.load(OLD.sessionKey);
    expect((await moveSession(redis, prefix, move)).result).toBe("moved");
    running.live = [user("m1", "late answer")];
    await expect(store.commit(OLD.sessionKey, { state: running, transcript: running.live, outbox: [], clearPending: true })).rejects.toBeInstanceOf(VersionConflictError);
    expect(await store.transcriptLength(OLD.sessionKey)).toBe(0);
  });

  it("reports nothing to move, and refuses to overwrite a session the new key already has", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    expect((await moveSession(redis, prefix, move)).result).toBe("nothing");
    await sessionWithHistory(store);
    const existing = await store.load(NEW.sessionKey);
    existing.live = [user("m1", "already talking in the supergroup")];
    await store.commit(NEW.sessionKey, { state: existing, transcript: existing.live, outbox: [], clearPending: false });
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
          await store.appendInbox(inbound({ platform: "telegram", sessionKey: OLD.sessionKey, chatId: OLD.chatId, messageId: "7", text: "raced in" }), 2);
        }
        return result;
      },
    });
    const outcome = await moveSession(spy, prefix, move);
    expect(outcome.result).toBe("moved");
    expect(outcome.work.inbox).toBe(2);
    expect((await store.claimInbox(NEW.sessionKey, "all")).map((entry) => entry.text)).toEqual(["waiting in the inbox", "raced in"]);
  });
});
