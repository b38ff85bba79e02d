/**
 * A heartbeat must never land after the write that releases the lease. The delivery's last
 * FINISH_REPLY releases the session's delivery lease; a heartbeat sent while that script is on
 * its way runs after it in Redis and (HEARTBEAT takes back a lease nobody holds) re-creates the
 * lease for a whole TTL, with no delivery behind it: the next reply of the session then waits
 * "busy" until the TTL runs out (60 s with the default lock), and the sweeper leaves the session
 * alone because a delivery looks under way. The bench saw such 60-second answers under load.
 *
 * Made certain here: Redis is frozen (SIGSTOP) right after the adapter sent the reply, so the
 * FINISH_REPLY waits in Redis's socket for longer than several heartbeat intervals.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions } from "../../../src/adapters/channel-adapter.js";
import { startDeliveryWorker } from "../../../src/gateway/delivery.js";
import { silentLogger } from "../../../src/logger.js";
import { createProducers, createRedis, type Redis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { uniquePrefix } from "../../helpers/config.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { sleep } from "../../helpers/stall-run.js";

const SESSION = "console:lease";
const LEASE_MS = 400; // heartbeats every 50 ms
const FROZEN_MS = 250;

class FreezingAdapter implements ChannelAdapter {
  readonly platform = "console" as const;
  readonly sent: string[] = [];
  constructor(private readonly freeze: () => void) {}
  async start(_ingress: IngressPort) {}
  async send(reply: OutboundReply, options: SendOptions) {
    await options.onPartSent(0, { last: true });
    this.sent.push(reply.replyId);
    // The reply is out; the delivery's next write (FINISH_REPLY) meets a frozen Redis.
    this.freeze();
  }
  async stop() {}
  isConnected() {
    return true;
  }
}

describe("delivery lease: no heartbeat after the releasing write", () => {
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

  it("leaves no delivery lease behind when the outbox empties while Redis is frozen", async () => {
    const prefix = uniquePrefix();
    const store = new SessionStore(redis, prefix);
    const producers = createProducers(redis, prefix);
    const pid = server.pid()!;
    const adapter = new FreezingAdapter(() => {
      process.kill(pid, "SIGSTOP");
      setTimeout(() => process.kill(pid, "SIGCONT"), FROZEN_MS);
    });
    const delivery = startDeliveryWorker({
      redisAddress: server.url, prefix, store, producers, adapters: new Map([["console", adapter]]),
      concurrency: 1, lockMs: 30_000, leaseMs: LEASE_MS, logger: silentLogger,
    });
    try {
      const keys = store.keys(SESSION);
      const reply: OutboundReply = { replyId: `${SESSION}#1#0`, sessionKey: SESSION, target: { platform: "console", chatId: "c" }, text: "hello", inReplyTo: [], kind: "answer" };
      await redis.rpush(keys.outbox, JSON.stringify(reply));
      await producers.enqueueDelivery(SESSION, "console");
      for (let waited = 0; (await redis.llen(keys.outbox)) > 0; waited += 5) {
        if (waited > 10_000) throw new Error("the reply was never finished");
        await sleep(5);
      }
      expect(adapter.sent).toEqual([reply.replyId]);
      // A heartbeat queued behind FINISH_REPLY runs right after it; give it time to land.
      await sleep(60);
      expect(await redis.exists(keys.deliveryLease)).toBe(0);
    } finally {
      await delivery.close();
    }
  });
});
