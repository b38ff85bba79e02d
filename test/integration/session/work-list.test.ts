/**
 * The sweeper's work list sees every session with replies to deliver (issue 28 item 4): a turn
 * with work of its own (an approval's timeout, `hold`) has no inbound message to list its
 * session, so a lost delivery job stranded the replies it committed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { globalKeys } from "../../../src/session/keys.js";
import { SessionStore } from "../../../src/session/store.js";
import { claimed } from "../../helpers/session.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";

describe("the work list", () => {
  let server: RedisServerHandle;
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    redis = createRedis(server.url);
  });
  afterAll(async () => {
    redis.disconnect();
    await server.dispose();
  });

  it("lists a session whose commit wrote replies, though no message listed it", async () => {
    const store = new SessionStore(redis, "worklist");
    const sessionKey = "console:held";
    const begun = claimed(await store.beginTurn(sessionKey, "timeout-1", { leaseMs: 10_000, mode: "all", hold: true }));
    expect(begun.batch).toEqual([]);
    expect(await redis.sismember(globalKeys("worklist").workSet, sessionKey)).toBe(0);
    const state = structuredClone(begun.state);
    const reply = { replyId: `${sessionKey}#1#0`, sessionKey, target: { platform: "console" as const, chatId: "held" }, text: "The request expired.", inReplyTo: [], kind: "notice" as const };
    expect((await store.endTurn(sessionKey, begun.claim, { state, transcript: [], outbox: [reply], held: true })).status).toBe("committed");
    expect(await redis.sismember(globalKeys("worklist").workSet, sessionKey)).toBe(1);
    expect((await store.sessionWork(sessionKey)).outbox).toBe(1);
  });

  it("records approvals before the commit and hands the sweeper those that are due", async () => {
    const store = new SessionStore(redis, "due");
    await store.expectApprovals("console:a", [{ approvalId: "ap-1", dueAt: 1_000 }, { approvalId: "ap-2", dueAt: 5_000 }]);
    expect(await store.dueApprovals(2_000)).toEqual([{ sessionKey: "console:a", approvalId: "ap-1" }]);
    await store.forgetDueApproval("console:a", "ap-1");
    expect(await store.dueApprovals(10_000)).toEqual([{ sessionKey: "console:a", approvalId: "ap-2" }]);
  });
});
