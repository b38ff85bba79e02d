import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import type { SendBucket, SendRequest } from "../../../src/core/send-budget.js";
import { RedisSendBudget } from "../../../src/gateway/send-budget.js";
import { silentLogger } from "../../../src/logger.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { uniquePrefix } from "../../helpers/config.js";

describe("the send budget in Redis", () => {
  let redis: Redis;
  let prefix: string;
  let budget: RedisSendBudget;

  beforeEach(() => {
    redis = createRedis(inject("redisUrl"));
    prefix = uniquePrefix("send");
    budget = new RedisSendBudget({ redis, prefix, logger: silentLogger, finalMaxWaitMs: 10_000 });
  });

  afterEach(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  // Slow refills, so the few milliseconds between calls cannot refill a token.
  const global: SendBucket = { name: "global", capacity: 4, perSecond: 0.01 };
  const chat = (id: string): SendBucket => ({ name: `chat:${id}`, capacity: 2, perSecond: 0.01 });
  const request = (chatId: string, priority: SendRequest["priority"]): SendRequest => ({ platform: "telegram", bot: "77", chat: chatId, buckets: [global, chat(chatId)], priority });

  it("lets finals borrow their slot (told how long to wait) and refuses previews once a bucket is below half", async () => {
    expect(await budget.take(request("1", "preview"))).toEqual({ granted: true, delayMs: 0 });
    // The chat's bucket (2) now holds 1: a preview must leave half of it (1) after taking.
    const refused = await budget.take(request("1", "preview"));
    expect(refused.granted).toBe(false);
    expect(await budget.take(request("1", "typing"))).toMatchObject({ granted: false });
    expect(await budget.take(request("1", "final"))).toEqual({ granted: true, delayMs: 0 });
    // Empty now: a notice needs a whole token, a final borrows the next one (1 / 0.01 per s = 100 s),
    // which is past the longest wait it may be given here: refused, with the wait.
    const notice = await budget.take(request("1", "notice"));
    expect(notice.granted).toBe(false);
    const final = await budget.take(request("1", "final"));
    expect(final).toMatchObject({ granted: false });
    if (!final.granted) expect(final.waitMs).toBeGreaterThan(90_000);
  });

  it("lets any priority take from a full bucket, however small", async () => {
    const small: SendBucket = { name: "global", capacity: 1, perSecond: 0.01 };
    expect(await budget.take({ platform: "telegram", bot: "77", buckets: [small], priority: "typing" })).toEqual({ granted: true, delayMs: 0 });
    expect((await budget.take({ platform: "telegram", bot: "77", buckets: [small], priority: "typing" })).granted).toBe(false);
  });

  it("queues finals in the order they asked: each later one is given a later slot", async () => {
    // 1 a second: the slots are a second apart, far more than the round trips between the takes.
    const slow: SendBucket = { name: "global", capacity: 2, perSecond: 1 };
    const take = () => budget.take({ platform: "telegram", bot: "77", buckets: [slow], priority: "final" });
    const grants = [await take(), await take(), await take(), await take()];
    const delays = grants.map((grant) => (grant.granted ? grant.delayMs : -1));
    expect(delays.slice(0, 2)).toEqual([0, 0]);
    // The third and fourth borrow: about 1 s and 2 s, less what refilled meanwhile.
    expect(delays[2]).toBeGreaterThan(500);
    expect(delays[2]).toBeLessThanOrEqual(1_000);
    expect(delays[3]! - delays[2]!).toBeGreaterThan(500);
    expect(delays[3]).toBeLessThanOrEqual(2_000);
    // A preview cannot pass the finals' debt.
    expect((await budget.take({ platform: "telegram", bot: "77", buckets: [slow], priority: "preview" })).granted).toBe(false);
  });

  it("refuses previews and typing once everything sent nears the bucket's headroom rate, while the bucket itself still has tokens; finals go on", async () => {
    // Refilled at once (1,000 a second), so its level alone would let every preview through;
    // its headroom refills at 0.01 a second, so each call drains it for good here.
    const fast: SendBucket = { name: "global", capacity: 4, perSecond: 1_000, headroomPerSecond: 0.01 };
    const take = (priority: SendRequest["priority"], bucket = fast) => budget.take({ platform: "discord", bot: "77", buckets: [bucket], priority });
    for (let index = 0; index < 3; index++) expect(await take("final")).toEqual({ granted: true, delayMs: 0 });
    // Headroom 1 left: a preview must leave half of 4 (2).
    await new Promise((resolve) => setTimeout(resolve, 20));
    const preview = await take("preview");
    expect(preview.granted).toBe(false);
    // The headroom's wait (2 / 0.01 a second), not the level's (a few ms).
    if (!preview.granted) expect(preview.waitMs).toBeGreaterThan(90_000);
    expect((await take("typing")).granted).toBe(false);
    // Finals and notices are judged by the bucket's own level.
    expect(await take("final")).toEqual({ granted: true, delayMs: 0 });
    expect(await take("notice")).toEqual({ granted: true, delayMs: 0 });
    // The same calls through a bucket without a headroom: the preview goes.
    const plain: SendBucket = { name: "plain", capacity: 4, perSecond: 1_000 };
    for (let index = 0; index < 3; index++) await take("final", plain);
    // (Redis's clock counts in ms: calls within one would find nothing refilled.)
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await take("preview", plain)).toEqual({ granted: true, delayMs: 0 });
  });

  it("lets the headroom fall no lower than empty by a bucketful, so previews come back soon after a burst of finals", async () => {
    const bucket: SendBucket = { name: "global", capacity: 2, perSecond: 1_000, headroomPerSecond: 20 };
    const take = (priority: SendRequest["priority"]) => budget.take({ platform: "discord", bot: "77", buckets: [bucket], priority });
    for (let index = 0; index < 20; index++) await take("final");
    expect((await take("preview")).granted).toBe(false);
    // From −2 at most, a preview needs the headroom at 2 again: (2 + 2) / 20 a second = 200 ms
    // (unbounded, the 20 finals' debt would take a second).
    await new Promise((resolve) => setTimeout(resolve, 320));
    expect(await take("preview")).toEqual({ granted: true, delayMs: 0 });
  });

  it("holds a chat's penalty on that chat only: other chats' finals and previews go at once", async () => {
    await budget.penalize({ platform: "telegram", bot: "77", chat: "1", retryAfterMs: 120_000 });
    const penalized = await budget.take(request("1", "final"));
    expect(penalized.granted).toBe(false);
    if (!penalized.granted) expect(penalized.waitMs).toBeGreaterThan(110_000);
    expect((await budget.take(request("1", "preview"))).granted).toBe(false);
    expect(await budget.take(request("2", "final"))).toEqual({ granted: true, delayMs: 0 });
    expect(await budget.take(request("3", "preview"))).toEqual({ granted: true, delayMs: 0 });
    // Another bot's budget is its own.
    expect(await budget.take({ ...request("1", "final"), bot: "78" })).toEqual({ granted: true, delayMs: 0 });
  });

  it("a short penalty delays a final (its slot after it) and refuses the rest; a global one holds the lower priorities longer", async () => {
    await budget.penalize({ platform: "telegram", bot: "77", chat: "1", retryAfterMs: 2_000 });
    const final = await budget.take(request("1", "final"));
    expect(final.granted).toBe(true);
    if (final.granted) expect(final.delayMs).toBeGreaterThan(1_500);

    await budget.penalize({ platform: "telegram", bot: "77", retryAfterMs: 3_000 });
    const otherFinal = await budget.take(request("2", "final"));
    expect(otherFinal.granted).toBe(true);
    if (otherFinal.granted) expect(otherFinal.delayMs).toBeGreaterThan(2_500);
    const preview = await budget.take(request("2", "preview"));
    expect(preview.granted).toBe(false);
    // The bot's penalty plus the 1 s the priorities below final wait longer.
    if (!preview.granted) expect(preview.waitMs).toBeGreaterThan(3_500);
    // A shorter penalty never shortens a longer one.
    await budget.penalize({ platform: "telegram", bot: "77", retryAfterMs: 10 });
    const later = await budget.take(request("3", "notice"));
    if (!later.granted) expect(later.waitMs).toBeGreaterThan(3_000);
    expect(later.granted).toBe(false);
  });

  it("keeps every key of a bot under one hash tag (Redis Cluster), with lifetimes", async () => {
    await budget.take(request("1", "final"));
    await budget.take(request("-100", "final"));
    await budget.penalize({ platform: "telegram", bot: "77", chat: "5", retryAfterMs: 5_000 });
    await budget.penalize({ platform: "telegram", bot: "77", retryAfterMs: 5_000 });
    const keys = await redis.keys(`${prefix}:*`);
    expect(keys.length).toBe(5);
    for (const key of keys) {
      expect(key.startsWith(`${prefix}:{send:telegram:77}:`)).toBe(true);
      expect(await redis.pttl(key)).toBeGreaterThan(0);
    }
  });

  it("lets calls go when Redis does not answer (the platform's own 429s still hold)", async () => {
    const dead = createRedis("redis://127.0.0.1:1", { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    dead.on("error", () => undefined);
    const blind = new RedisSendBudget({ redis: dead, prefix, logger: silentLogger, timeoutMs: 200 });
    expect(await blind.take(request("1", "final"))).toEqual({ granted: true, delayMs: 0 });

    await blind.penalize({ platform: "telegram", bot: "77", chat: "1", retryAfterMs: 1_000 });
    dead.disconnect();
  });

  it("after Redis failed to answer, lets the next finals go without asking it (no wait per call), and skips previews", async () => {
    let asked = 0;
    // A Redis that takes every script and never answers (frozen).
    const frozen = new Proxy({}, {
      get: (_target, property) => (property === "defineCommand" ? () => undefined : () => {
        asked++;
        return new Promise(() => undefined);
      }),
    }) as unknown as Redis;
    const blind = new RedisSendBudget({ redis: frozen, prefix, logger: silentLogger, timeoutMs: 100, bypassMs: 60_000 });
    expect(await blind.take(request("1", "final"))).toEqual({ granted: true, delayMs: 0 });
    for (let index = 0; index < 5; index++) expect(await blind.take(request("1", "final"))).toEqual({ granted: true, delayMs: 0 });
    for (let index = 0; index < 5; index++) expect(await blind.take(request("1", "preview"))).toMatchObject({ granted: false });
    expect(await blind.take(request("1", "typing"))).toMatchObject({ granted: false });
    expect(asked).toBe(1);
  });
});
