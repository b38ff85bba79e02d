/**
 * The turn fence across a Redis failover, interleaved by hand on one Redis: replication is
 * asynchronous, so the replica a failover promotes may never have received the last writes of
 * the master it replaces — and a master frozen past its failover answers from its own copy for a
 * moment when it wakes. A turn may so hold a claim (BEGIN_TURN's inbox → pending) that the new
 * master never saw. Here the new master is played by restoring the session's keys as they were
 * before those writes (what the replica held); the cluster test applies the same fault for real
 * (topology/cluster-failover.test.ts, the SIGSTOP case).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { uniquePrefix } from "../../helpers/config.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { claimed } from "../../helpers/session.js";

const user = (id: string, content: string) => ({ id, role: "user" as const, content });
const SESSION = "console:fo";

describe("turn fencing across a failover that lost writes", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  const add = (store: SessionStore, text: string) => store.appendInbox(inbound({ text, messageId: text, sessionKey: SESSION }), 0);
  const texts = async (store: SessionStore) => (await store.readTranscript(SESSION)).map((message) => message.content);

  /** The session's keys now, as a replica holds them; the call puts them back (the promoted replica). */
  const replicaOf = async (store: SessionStore): Promise<() => Promise<void>> => {
    const keys = Object.values(store.keys(SESSION)).filter((key): key is string => typeof key === "string");
    const dumps = await Promise.all(keys.map(async (key) => [key, await redis.dumpBuffer(key)] as const));
    return async () => {
      for (const [key, dump] of dumps) {
        await redis.del(key);
        if (dump) await redis.restore(key, 0, dump);
      }
    };
  };

  it("refuses a commit whose claim the new master never received (stale), and the next turn answers the messages once", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    await add(store, "m1");
    await add(store, "m2");
    const promote = await replicaOf(store);
    // The old master answers BEGIN_TURN; the claim is lost with it.
    const stale = claimed(await store.beginTurn(SESSION, "A", { leaseMs: 10_000, mode: "all" }));
    await promote();
    // Same version, lease free, but m1 and m2 wait in the inbox: a commit would answer them and
    // leave them there to be answered again.
    expect(await store.endTurn(SESSION, stale.claim, { state: stale.state, transcript: [user("m1", "m1"), user("m2", "m2")], outbox: [] }))
      .toEqual({ status: "stale", current: 0 });
    expect(await texts(store)).toEqual([]);
    const next = claimed(await store.beginTurn(SESSION, "B", { leaseMs: 10_000, mode: "all" }));
    expect(next.batch.map((entry) => entry.text)).toEqual(["m1", "m2"]);
    expect(await store.endTurn(SESSION, next.claim, { state: next.state, transcript: [user("m1", "m1"), user("m2", "m2")], outbox: [] }))
      .toMatchObject({ status: "committed", version: 1, inbox: 0, pending: 0 });
    expect(await texts(store)).toEqual(["m1", "m2"]);
  });

  it("refuses a claim only partly held: every claimed entry must still be pending", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    await add(store, "m1");
    const first = claimed(await store.beginTurn(SESSION, "A", { leaseMs: 10_000, mode: "all" }));
    await add(store, "m2");
    const promote = await replicaOf(store);
    // The paste wait begins again with the same token: m2's claim is the lost write.
    const again = claimed(await store.beginTurn(SESSION, "A", { leaseMs: 10_000, mode: "all" }));
    expect(again.batch.map((entry) => entry.text)).toEqual(["m1", "m2"]);
    await promote();
    expect(await store.endTurn(SESSION, again.claim, { state: again.state, transcript: [user("m1", "m1"), user("m2", "m2")], outbox: [] }))
      .toEqual({ status: "stale", current: 0 });
    // What the new master holds is intact: m1 claimed by A (whose first claim is its own), m2 waiting.
    expect(await store.endTurn(SESSION, first.claim, { state: first.state, transcript: [user("m1", "m1")], outbox: [] }))
      .toMatchObject({ status: "committed", version: 1, inbox: 1, pending: 0 });
    expect(await texts(store)).toEqual(["m1"]);
  });

  it("refuses a commit at the same version reached through commits the new master never had (the lineage, not the number)", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    await add(store, "m1");
    await add(store, "m2");
    const promote = await replicaOf(store);
    // On the old master: m1 answered (version 1, lost with it), then m2 claimed on top of it.
    const lost = claimed(await store.beginTurn(SESSION, "C", { leaseMs: 10_000, mode: "one" }));
    expect(await store.endTurn(SESSION, lost.claim, { state: lost.state, transcript: [user("m1", "m1 (lost)")], outbox: [] })).toMatchObject({ status: "committed", version: 1 });
    const stale = claimed(await store.beginTurn(SESSION, "A", { leaseMs: 10_000, mode: "all" }));
    expect(stale.claim.base).toBe("C");
    await promote();
    // The new master answers m1 itself (version 1 too), then a turn claims m2 and dies.
    const redone = claimed(await store.beginTurn(SESSION, "D", { leaseMs: 10_000, mode: "one" }));
    expect(await store.endTurn(SESSION, redone.claim, { state: redone.state, transcript: [user("m1", "m1")], outbox: [] })).toMatchObject({ status: "committed", version: 1 });
    claimed(await store.beginTurn(SESSION, "E", { leaseMs: 10_000, mode: "all" }));
    await redis.del(store.keys(SESSION).lease);
    // m2 is pending and the version matches, but the stale turn's context holds the lost answer.
    expect(await store.endTurn(SESSION, stale.claim, { state: stale.state, transcript: [user("m2", "m2")], outbox: [] }))
      .toEqual({ status: "stale", current: 1 });
    expect(await texts(store)).toEqual(["m1"]);
  });
});
