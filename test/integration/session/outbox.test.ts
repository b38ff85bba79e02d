/**
 * Delivery fencing at the store: one delivery per session at a time, progress per reply id,
 * every write checked against the lease and the outbox head.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import type { OutboundReply } from "../../../src/adapters/channel-adapter.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { DeliveryFencedError, Outbox } from "../../../src/session/outbox.js";
import { PreviewRecords } from "../../../src/session/previews.js";
import { SessionStore } from "../../../src/session/store.js";
import { uniquePrefix } from "../../helpers/config.js";
import { sleep } from "../../helpers/stall-run.js";

const SESSION = "console:d";
const reply = (replyId: string): OutboundReply => ({
  replyId, sessionKey: SESSION, target: { platform: "console", chatId: "c" }, text: replyId, inReplyTo: [], kind: "answer",
});

describe("outbox delivery fencing", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  const setup = async (replyIds: string[]) => {
    const store = new SessionStore(redis, uniquePrefix());
    for (const id of replyIds) await redis.rpush(store.keys(SESSION).outbox, JSON.stringify(reply(id)));
    return { store, outbox: new Outbox(redis, store.prefix), keys: store.keys(SESSION) };
  };

  it("lets one delivery at a time send a session's replies, resuming after the last recorded part", async () => {
    const { outbox, keys } = await setup(["r1", "r2"]);
    const first = await outbox.begin(SESSION, "A", 10_000);
    expect(first).toMatchObject({ status: "head", fromPart: 0, reply: { replyId: "r1" }, queued: 2 });
    expect(await outbox.begin(SESSION, "B", 10_000)).toMatchObject({ status: "busy" });
    await outbox.recordPart(SESSION, "A", "r1", 0, 10_000);
    await outbox.recordPart(SESSION, "A", "r1", 1, 10_000);
    expect(await redis.get(keys.outboxProgress)).toBe("r1:2");
    // A dies; once its lease is gone, B resumes r1 at part 2.
    await redis.del(keys.deliveryLease);
    expect(await outbox.begin(SESSION, "B", 10_000)).toMatchObject({ status: "head", fromPart: 2, reply: { replyId: "r1" } });
    expect(await outbox.finish(SESSION, "B", "r1", 10_000)).toMatchObject({ status: "head", fromPart: 0, reply: { replyId: "r2" }, queued: 1 });
    expect(await outbox.finish(SESSION, "B", "r2", 10_000)).toEqual({ status: "empty", waiting: 0 });
    expect(await redis.exists(keys.deliveryLease, keys.outbox, keys.outboxProgress)).toBe(0);
  });

  it("stops a delivery whose lease another one took: it can neither record a part nor pop the reply", async () => {
    const { outbox, keys } = await setup(["r1"]);
    await outbox.begin(SESSION, "A", 100);
    await sleep(150);
    expect(await outbox.begin(SESSION, "B", 10_000)).toMatchObject({ status: "head", reply: { replyId: "r1" } });
    await expect(outbox.recordPart(SESSION, "A", "r1", 0, 10_000)).rejects.toThrow(DeliveryFencedError);
    expect(await outbox.finish(SESSION, "A", "r1", 10_000)).toEqual({ status: "lost" });
    expect(await redis.llen(keys.outbox)).toBe(1);
    expect(await redis.get(keys.outboxProgress)).toBeNull();
  });

  it("never lets a stale progress value skip a part of another reply", async () => {
    const { outbox, keys } = await setup(["r2"]);
    // Left by reply r1 (delivered and popped by a delivery that then died mid-way).
    await redis.set(keys.outboxProgress, "r1:4");
    expect(await outbox.begin(SESSION, "A", 10_000)).toMatchObject({ status: "head", fromPart: 0, reply: { replyId: "r2" } });
    // And a record for a reply that is not the head is refused.
    await expect(outbox.recordPart(SESSION, "A", "r1", 5, 10_000)).rejects.toThrow(/no longer the head/);
    expect(await redis.get(keys.outboxProgress)).toBe("r1:4");
  });

  it("takes back an expired delivery lease nobody took, and pops nothing that is not its head", async () => {
    const { outbox, keys } = await setup(["r1", "r2"]);
    await outbox.begin(SESSION, "A", 100);
    await sleep(150);
    await outbox.recordPart(SESSION, "A", "r1", 0, 10_000);
    expect(await redis.get(keys.deliveryLease)).toBe("A");
    // Finishing a reply that is no longer the head pops nothing and returns the head.
    expect(await outbox.finish(SESSION, "A", "r0", 10_000)).toMatchObject({ status: "head", fromPart: 1, reply: { replyId: "r1" } });
    expect(await redis.llen(keys.outbox)).toBe(2);
  });

  it("tells whether the head's preview has a record, and closes a missing one so that no preview can appear after the final", async () => {
    const withPreview = (replyId: string, preview: string): OutboundReply => ({ ...reply(replyId), preview });
    const store = new SessionStore(redis, uniquePrefix());
    const keys = store.keys(SESSION);
    const previews = new PreviewRecords(redis, store.prefix);
    for (const entry of [withPreview("r1", "p1"), withPreview("r2", "p2"), withPreview("r3", "p3"), reply("r4")]) await redis.rpush(keys.outbox, JSON.stringify(entry));
    const outbox = new Outbox(redis, store.prefix);
    // p1: a gateway is showing it (any attempt of the turn may have published it).
    expect(await previews.claim(SESSION, "p1", "g", 1_000)).toEqual({ status: "create" });
    expect(await previews.opened(SESSION, "p1", "g", "m1")).toBe(true);
    // p3: the final found none before (a resumed delivery): closed already.
    expect(await previews.take(SESSION, "p3")).toEqual({ status: "none" });

    expect(await outbox.begin(SESSION, "A", 10_000)).toMatchObject({ status: "head", reply: { replyId: "r1" }, previewRecorded: true });
    // p2 was never published: no record, so the head says so and the record is closed now.
    expect(await outbox.finish(SESSION, "A", "r1", 10_000)).toMatchObject({ status: "head", reply: { replyId: "r2" }, previewRecorded: false });
    expect(JSON.parse((await redis.hget(keys.previews, "p2"))!)).toMatchObject({ s: "closed" });
    expect(await previews.claim(SESSION, "p2", "g", 1_000)).toEqual({ status: "closed" });
    expect(await outbox.finish(SESSION, "A", "r2", 10_000)).toMatchObject({ status: "head", reply: { replyId: "r3" }, previewRecorded: false });
    expect(await outbox.finish(SESSION, "A", "r3", 10_000)).toMatchObject({ status: "head", reply: { replyId: "r4" }, previewRecorded: false });
    expect(await redis.hkeys(keys.previews)).toEqual(expect.arrayContaining(["p1", "p2", "p3"]));
    expect(await redis.hlen(keys.previews)).toBe(3);
  });
});

describe("preview records of quick finals", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  it("are pruned an hour after they settled, also when no final ever takes a preview (a session of quick streamed answers)", async () => {
    const store = new SessionStore(redis, uniquePrefix());
    const keys = store.keys(SESSION);
    const outbox = new Outbox(redis, store.prefix);
    const finals = 40;
    // Quick streamed answers: each final names its preview, none was ever published.
    for (let index = 0; index < finals; index++) await redis.rpush(keys.outbox, JSON.stringify({ ...reply(`r${index}`), preview: `r${index}` }));
    let step = await outbox.begin(SESSION, "A", 10_000);
    for (let index = 0; index < finals; index++) {
      expect(step).toMatchObject({ status: "head", previewRecorded: false });
      step = await outbox.finish(SESSION, "A", `r${index}`, 10_000);
    }
    expect(step).toMatchObject({ status: "empty" });
    expect(await redis.hlen(keys.previews)).toBe(finals);
    // Two hours pass (the hash's TTL is renewed by every final of a busy session).
    const aged = Object.entries(await redis.hgetall(keys.previews)).flatMap(([field, raw]) => [field, JSON.stringify({ ...JSON.parse(raw), t: Date.now() - 2 * 3_600_000 })]);
    await redis.hset(keys.previews, ...aged);
    const later = Array.from({ length: 16 }, (_, index) => `n${index}`);
    for (const id of later) await redis.rpush(keys.outbox, JSON.stringify({ ...reply(id), preview: id }));
    step = await outbox.begin(SESSION, "B", 10_000);
    for (const id of later) {
      expect(step).toMatchObject({ status: "head", reply: { replyId: id }, previewRecorded: false });
      step = await outbox.finish(SESSION, "B", id, 10_000);
    }
    // The hour-old records are gone; the new ones stay (a late renderer's claim is still refused).
    expect((await redis.hkeys(keys.previews)).sort()).toEqual([...later].sort());
  });
});
