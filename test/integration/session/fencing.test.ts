/**
 * The fence itself, interleaving by hand what stalls produce: two attempts of one session's
 * turn (the second started because BullMQ re-ran a stalled job), an attempt whose lease
 * expired, a heartbeat that finds its lease taken.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { attemptToken, LeaseKeeper } from "../../../src/session/lease.js";
import { SessionStore } from "../../../src/session/store.js";
import { uniquePrefix } from "../../helpers/config.js";
import { sleep } from "../../helpers/stall-run.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { claimed } from "../../helpers/session.js";

const user = (id: string, content: string) => ({ id, role: "user" as const, content });

describe("turn fencing", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  const setup = async (texts: string[]) => {
    const store = new SessionStore(redis, uniquePrefix());
    for (const text of texts) await store.appendInbox(inbound({ text, messageId: text, sessionKey: "console:f" }), 0);
    return store;
  };
  const add = (store: SessionStore, text: string) => store.appendInbox(inbound({ text, messageId: text, sessionKey: "console:f" }), 0);

  it("gives every attempt its own token, even for the same job and attempt count", () => {
    expect(attemptToken("w1:42:0")).not.toBe(attemptToken("w1:42:0"));
  });

  it("lets a second attempt in only once the first one's lease is gone, and then refuses the first one's commit", async () => {
    const store = await setup(["m1"]);
    const first = claimed(await store.beginTurn("console:f", "A", { leaseMs: 150, mode: "all" }));
    await add(store, "m2");
    expect(await store.beginTurn("console:f", "B", { leaseMs: 10_000, mode: "all" })).toMatchObject({ status: "busy" });
    await sleep(200);
    // A stalled past its lease: B takes the session over with everything that is waiting.
    const second = claimed(await store.beginTurn("console:f", "B", { leaseMs: 10_000, mode: "all" }));
    expect(second.batch.map((entry) => entry.text)).toEqual(["m1", "m2"]);
    // A wakes up and tries to commit: refused, nothing of it written.
    expect(await store.endTurn("console:f", first.claim, { state: first.state, transcript: [user("m1", "m1")], outbox: [] })).toEqual({ status: "lost" });
    expect(await store.readTranscript("console:f")).toEqual([]);
    expect(await store.endTurn("console:f", second.claim, { state: second.state, transcript: [user("m1", "m1"), user("m2", "m2")], outbox: [] }))
      .toMatchObject({ status: "committed", version: 1, inbox: 0, pending: 0 });
    expect((await store.readTranscript("console:f")).map((message) => message.content)).toEqual(["m1", "m2"]);
  });

  it("removes only what the committing attempt claimed: a batch another attempt claimed stays pending", async () => {
    const store = await setup(["m1"]);
    const first = claimed(await store.beginTurn("console:f", "A", { leaseMs: 100, mode: "all" }));
    await add(store, "m2");
    await sleep(150);
    const second = claimed(await store.beginTurn("console:f", "B", { leaseMs: 100, mode: "all" }));
    expect(second.batch).toHaveLength(2);
    await sleep(150);
    // Both leases expired and nobody holds the session: A may still commit what it claimed
    // (its version is current), but m2 — claimed by B only — must stay for the next turn.
    expect(await store.endTurn("console:f", first.claim, { state: first.state, transcript: [user("m1", "m1")], outbox: [] }))
      .toMatchObject({ status: "committed", version: 1, pending: 1 });
    expect(await store.endTurn("console:f", second.claim, { state: second.state, transcript: [user("m1", "m1"), user("m2", "m2")], outbox: [] }))
      .toEqual({ status: "conflict", current: 1 });
    const next = claimed(await store.beginTurn("console:f", "C", { leaseMs: 10_000, mode: "all" }));
    expect(next.batch.map((entry) => entry.text)).toEqual(["m2"]);
    expect(next.state.version).toBe(1);
  });

  it("claims and loads in one snapshot: a batch is never paired with a state that already answered it", async () => {
    const store = await setup(["m1"]);
    const first = claimed(await store.beginTurn("console:f", "A", { leaseMs: 100, mode: "all" }));
    await sleep(150);
    const second = claimed(await store.beginTurn("console:f", "B", { leaseMs: 10_000, mode: "all" }));
    await redis.del(store.keys("console:f").lease);
    await store.endTurn("console:f", first.claim, { state: first.state, transcript: [user("m1", "m1")], outbox: [] });
    // B began before A's commit: it holds version 0 with m1, and its commit is refused.
    expect(second.state.version).toBe(0);
    await redis.set(store.keys("console:f").lease, "B");
    expect(await store.endTurn("console:f", second.claim, { state: second.state, transcript: [user("m1", "m1")], outbox: [] })).toMatchObject({ status: "conflict" });
    expect((await store.readTranscript("console:f")).map((message) => message.content)).toEqual(["m1"]);
  });

  it("heartbeats renew the lease, pass on the abort flag, and abort the turn once another attempt holds it", async () => {
    const store = await setup(["m1"]);
    const keys = store.keys("console:f");
    claimed(await store.beginTurn("console:f", "A", { leaseMs: 400, mode: "all" }));
    const keeper = new LeaseKeeper(redis, { key: keys.lease, token: "A", ttlMs: 400, abortKey: keys.abort });
    await sleep(700);
    // Renewed past its TTL.
    expect(await redis.get(keys.lease)).toBe("A");
    expect(keeper.signal.aborted).toBe(false);
    await redis.set(keys.lease, "B", "PX", 10_000);
    await sleep(200);
    expect(keeper.signal.aborted).toBe(true);
    expect(keeper.signal.reason).toBe("lease-lost");
    await keeper.release();
    // Releasing never frees a lease another attempt holds.
    expect(await redis.get(keys.lease)).toBe("B");

    await redis.del(keys.lease);
    const again = new LeaseKeeper(redis, { key: keys.lease, token: "C", ttlMs: 400, abortKey: keys.abort });
    await sleep(150);
    // An expired lease nobody took is taken back.
    expect(await redis.get(keys.lease)).toBe("C");
    expect(await store.requestAbort("console:f", "interrupt")).toBe(true);
    await sleep(150);
    expect(again.signal.reason).toBe("interrupt");
    await again.release();
    expect(await redis.exists(keys.lease)).toBe(0);
  });

  it("sends no heartbeat during or after a write that releases the lease; renews again after one that keeps it", async () => {
    const store = await setup([]);
    const keys = store.keys("console:f");
    await redis.set(keys.lease, "A", "PX", 400);
    // Heartbeats every 50 ms.
    const keeper = new LeaseKeeper(redis, { key: keys.lease, token: "A", ttlMs: 400 });
    // A write that keeps the lease (another reply to send): renewing goes on past the TTL.
    expect(await keeper.paused(async () => "head", (step) => step !== "head")).toBe("head");
    await sleep(600);
    expect(await redis.get(keys.lease)).toBe("A");
    // A write that releases it, taking longer than a heartbeat interval, then time for several more.
    await keeper.paused(async () => {
      await redis.del(keys.lease);
      await sleep(150);
      return "empty";
    }, (step) => step !== "head");
    await sleep(200);
    // Nobody took it back (a heartbeat takes back a lease nobody holds).
    expect(await redis.exists(keys.lease)).toBe(0);
    await keeper.stop();
  });

  it("begun again by its holder (the paste wait) claims what arrived since, keeps a raised abort flag, and commits the whole batch", async () => {
    const store = await setup(["part 1"]);
    const keys = store.keys("console:f");
    const first = claimed(await store.beginTurn("console:f", "A", { leaseMs: 10_000, mode: "one" }));
    await add(store, "part 2");
    await store.requestAbort("console:f", "stop");
    // Same token: no "busy", the whole pending batch with a fresh snapshot (queue mode claims all here).
    const again = claimed(await store.beginTurn("console:f", "A", { leaseMs: 10_000, mode: "all" }));
    expect(again.batch.map((entry) => entry.text)).toEqual(["part 1", "part 2"]);
    expect(again.claim.version).toBe(first.claim.version);
    expect(await redis.get(keys.abort)).toBe("stop");
    expect(await store.beginTurn("console:f", "B", { leaseMs: 10_000, mode: "all" })).toMatchObject({ status: "busy" });
    expect(await store.endTurn("console:f", again.claim, { state: again.state, transcript: [user("m1", "part 1\npart 2")], outbox: [] }))
      .toMatchObject({ status: "committed", inbox: 0, pending: 0 });
    // A new attempt clears a stale flag.
    await store.requestAbort("console:f", "stop");
    await add(store, "later");
    claimed(await store.beginTurn("console:f", "C", { leaseMs: 10_000, mode: "all" }));
    expect(await redis.exists(keys.abort)).toBe(0);
  });

  it("with hold (an approval's timeout) takes the lease and the state with nothing to claim, and commits fenced with an empty claim", async () => {
    const store = await setup([]);
    expect(await store.beginTurn("console:f", "plain", { leaseMs: 10_000, mode: "all" })).toMatchObject({ status: "idle" });
    expect(await redis.exists(store.keys("console:f").lease)).toBe(0);
    const timeout = claimed(await store.beginTurn("console:f", "T", { leaseMs: 10_000, mode: "all", hold: true }));
    expect(timeout.batch).toEqual([]);
    expect(await redis.get(store.keys("console:f").lease)).toBe("T");
    // A message arriving meanwhile waits for the next turn; the timeout turn commits alone.
    await add(store, "m1");
    expect(await store.beginTurn("console:f", "B", { leaseMs: 10_000, mode: "all" })).toMatchObject({ status: "busy" });
    expect(await store.endTurn("console:f", timeout.claim, { state: timeout.state, transcript: [{ id: "m1", role: "tool" as const, content: "denied", tool_call_id: "c1" }], outbox: [] }))
      .toMatchObject({ status: "committed", version: 1, inbox: 1, pending: 0 });
    // A timeout job that finds another turn holding the lease is told to wait, like any re-run.
    claimed(await store.beginTurn("console:f", "B", { leaseMs: 10_000, mode: "all" }));
    expect(await store.beginTurn("console:f", "T2", { leaseMs: 10_000, mode: "all", hold: true })).toMatchObject({ status: "busy" });
  });

  it("aborts with the parent signal's reason (shutdown)", async () => {
    const store = await setup([]);
    const parent = new AbortController();
    const keeper = new LeaseKeeper(redis, { key: store.keys("console:f").lease, token: "A", ttlMs: 1_000 }, parent.signal);
    parent.abort("shutdown");
    expect(keeper.signal.reason).toBe("shutdown");
    await keeper.release();
  });
});
