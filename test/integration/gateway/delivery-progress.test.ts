/**
 * What the delivery records while it sends a reply: every part but the last, each before the
 * next part goes out (a crash then resumes after it); the last part is recorded by the
 * reply's finish alone, so a one-part reply costs BEGIN_DELIVERY and FINISH_REPLY only.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions } from "../../../src/adapters/channel-adapter.js";
import { startDeliveryWorker } from "../../../src/gateway/delivery.js";
import { silentLogger } from "../../../src/logger.js";
import { createProducers, createRedis, type Redis } from "../../../src/queue/index.js";
import { FINISH_REPLY, RECORD_PART } from "../../../src/session/scripts.js";
import { SessionStore } from "../../../src/session/store.js";
import { uniquePrefix } from "../../helpers/config.js";
import { countRoundTrips, runs } from "../../helpers/round-trips.js";
import { sleep } from "../../helpers/stall-run.js";

const SESSION = "console:progress";

/** Sends a reply's paragraphs as its parts, and notes the recorded progress after each. */
class PartsAdapter implements ChannelAdapter {
  readonly platform = "console" as const;
  readonly progress: Array<string | null> = [];
  constructor(private readonly redis: Redis, private readonly progressKey: string) {}
  async start(_ingress: IngressPort) {}
  async send(reply: OutboundReply, options: SendOptions) {
    const parts = reply.text.split("\n\n");
    for (let index = options.fromPart; index < parts.length; index++) {
      await options.onPartSent(index, { last: index === parts.length - 1 });
      this.progress.push(await this.redis.get(this.progressKey));
    }
  }
  async stop() {}
  isConnected() {
    return true;
  }
}

describe("delivery progress", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = createRedis(inject("redisUrl"));
  });
  afterAll(() => redis.disconnect());

  const deliver = async (texts: string[]) => {
    const store = new SessionStore(redis, uniquePrefix());
    const producers = createProducers(redis, store.prefix);
    const keys = store.keys(SESSION);
    const observer = createRedis(inject("redisUrl"));
    const adapter = new PartsAdapter(observer, keys.outboxProgress);
    const replies = texts.map((text, index): OutboundReply => ({
      replyId: `${SESSION}#1#${index}`, sessionKey: SESSION, target: { platform: "console", chatId: "c" }, text, inReplyTo: [], kind: "answer",
    }));
    for (const reply of replies) await redis.rpush(keys.outbox, JSON.stringify(reply));
    const trips = countRoundTrips(redis);
    const delivery = startDeliveryWorker({
      redisAddress: inject("redisUrl"), prefix: store.prefix, store, producers, adapters: new Map([["console", adapter]]),
      concurrency: 1, lockMs: 30_000, leaseMs: 30_000, logger: silentLogger,
    });
    try {
      await producers.enqueueDelivery(SESSION, "console");
      for (let waited = 0; (await redis.llen(keys.outbox)) > 0; waited += 10) {
        if (waited > 10_000) throw new Error("the replies were never finished");
        await sleep(10);
      }
      return { adapter, replies, sent: trips.sent.filter((entry) => entry.args.some((arg) => String(arg).includes(store.prefix))) };
    } finally {
      await delivery.close();
      trips.restore();
      observer.disconnect();
      await producers.close();
    }
  };

  it("records every part of a reply but the last, each before the next part is sent", async () => {
    const { adapter, replies, sent } = await deliver(["one\n\ntwo\n\nthree", "single"]);
    // After part 1: "1 sent", after part 2: "2 sent"; after part 3 nothing new (its finish pops
    // the reply); the next reply starts from nothing, and its only part is not recorded either.
    expect(adapter.progress).toEqual([`${replies[0]!.replyId}:1`, `${replies[0]!.replyId}:2`, `${replies[0]!.replyId}:2`, null]);
    const records = sent.filter((entry) => runs(entry, RECORD_PART));
    // RECORD_PART's arguments end with the parts sent and the lease's TTL.
    expect(records.map((entry) => String(entry.args.at(-2)))).toEqual(["1", "2"]);
    expect(sent.filter((entry) => runs(entry, FINISH_REPLY))).toHaveLength(2);
  });
});
