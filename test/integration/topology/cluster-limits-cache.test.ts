/**
 * The worker's budget-limits cache (src/budget/limits-cache.ts) on a Redis Cluster. ioredis
 * subscribes a Cluster client on one node's connection of its own and, when that node goes,
 * subscribes again on another — without a `close` or `ready` on the client. A publish sent in
 * between is lost, so the cache must drop what it knew then, as it does when a single Redis
 * connection closes; and its PING must go to that connection, or a frozen subscriber node would
 * look alive (a Cluster sends a keyless PING to any node).
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LimitsCache } from "../../../src/budget/index.js";
import { silentLogger } from "../../../src/logger.js";
import { createRedis } from "../../../src/queue/index.js";
import { startRedisCluster, type RedisClusterHandle } from "../../helpers/redis-cluster.js";

const CHANNEL = "lh:budget-limits";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The node the Cluster client's subscription lives on (ioredis' ClusterSubscriber: not public). */
const subscriberPort = (cluster: Redis): number | undefined =>
  (cluster as unknown as { subscriber?: { getInstance(): Redis | null } }).subscriber?.getInstance()?.options.port;

describe("the budget-limits cache on a Redis Cluster", () => {
  let cluster: RedisClusterHandle;
  const opened: Array<{ disconnect(): void }> = [];

  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 120_000);
  afterAll(async () => {
    for (const each of opened) each.disconnect();
    await cluster?.dispose();
  });

  const startCache = async () => {
    const subscriber = createRedis({ kind: "cluster", nodes: cluster.nodes.map((node) => ({ host: "127.0.0.1", port: node.port })) }, { autoResubscribe: false });
    subscriber.on("error", () => undefined);
    opened.push(subscriber);
    const cache = new LimitsCache({ subscriber, channel: CHANNEL, logger: silentLogger, pingMs: 200 });
    opened.push({ disconnect: () => cache.close() });
    for (let waited = 0; !cache.live; waited += 50) {
      if (waited > 10_000) throw new Error("the cache never subscribed");
      await sleep(50);
    }
    cache.learn(cache.mark(), "chat:tg:1", true);
    expect(cache.unlimited(["chat:tg:1"])).toBe(true);
    return { subscriber, cache };
  };
  /** A publisher on a node other than `avoid` (a plain connection: a Cluster may route PUBLISH to any node). */
  const publisherAvoiding = (avoid: number) => {
    const node = cluster.nodes.find((each) => each.port !== avoid && each.child)!;
    const publisher = new Redis({ host: "127.0.0.1", port: node.port, maxRetriesPerRequest: 1 });
    publisher.on("error", () => undefined);
    opened.push(publisher);
    return publisher;
  };

  it("hears a publish: the account is forgotten", async () => {
    const { subscriber, cache } = await startCache();
    await publisherAvoiding(subscriberPort(subscriber)!).publish(CHANNEL, "chat:tg:1");
    for (let waited = 0; cache.unlimited(["chat:tg:1"]) && waited < 5_000; waited += 50) await sleep(50);
    expect(cache.unlimited(["chat:tg:1"])).toBe(false);
  });

  it("its subscriber's node frozen: the cache is not used while its PING goes unanswered", async () => {
    const { subscriber, cache } = await startCache();
    const port = subscriberPort(subscriber)!;
    const node = cluster.nodes.find((each) => each.port === port)!;
    node.pause();
    try {
      // A publish the frozen node cannot pass on; the cache must stop trusting what it knew.
      await publisherAvoiding(port).publish(CHANNEL, "chat:tg:1");
      await sleep(1_000);
      expect(cache.unlimited(["chat:tg:1"])).toBe(false);
    } finally {
      node.resume();
    }
  });

  it("its subscriber's node killed: subscribed again on another node, it drops what it knew (a publish in between is lost)", async () => {
    const { subscriber, cache } = await startCache();
    const port = subscriberPort(subscriber)!;
    const node = cluster.nodes.find((each) => each.port === port)!;
    await node.kill();
    try {
      for (let waited = 0; (subscriberPort(subscriber) === port || subscriberPort(subscriber) === undefined || !cache.live) && waited < 15_000; waited += 50) await sleep(50);
      expect(subscriberPort(subscriber)).not.toBe(port);
      await sleep(500);
      expect(cache.unlimited(["chat:tg:1"])).toBe(false);
      // And it is in use again, hearing publishes on its new node.
      cache.learn(cache.mark(), "chat:tg:2", true);
      expect(cache.unlimited(["chat:tg:2"])).toBe(true);
      await publisherAvoiding(port).publish(CHANNEL, "chat:tg:2");
      for (let waited = 0; cache.unlimited(["chat:tg:2"]) && waited < 5_000; waited += 50) await sleep(50);
      expect(cache.unlimited(["chat:tg:2"])).toBe(false);
    } finally {
      await node.start();
    }
  }, 60_000);
});
