/**
 * The activity channel (a turn's `turn-started` / `turn-finished`, published by the worker, heard
 * by the gateway, which hands it to the adapter's typing indicator) on a Redis Cluster: three
 * masters with a replica each. A Cluster's pub/sub is broadcast to every node; ioredis keeps the
 * gateway's subscription on one node's connection of its own and, when that node goes, subscribes
 * again on another. The channel is lossy by design (a publish while the subscription moves is
 * lost): what is checked is that the turns after the move are heard again, as they were before it.
 * TYPING_DELAY_MS=0: every turn publishes, and the gateway's own look for waiting messages is off,
 * so each activity the adapter records came over the channel. REDIS_MIN_REPLICAS_ACK=1, as
 * docs/operator.md asks of a Cluster with replicas: without it, in 6 runs of 33 a message
 * acknowledged around the failover went unanswered until its chat's next message (the one looked
 * at: in its inbox, but with no turn job and off the work list) — that setting's documented risk
 * (docs/benchmarks.md), not this file's subject.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { InboundMessage } from "../../../src/core/channel.js";
import { CONNECTION_NAMES } from "../../../src/queue/index.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { startRedisCluster, type ClusterNode, type RedisClusterHandle } from "../../helpers/redis-cluster.js";
import { sleep } from "../../helpers/stall-run.js";

describe("the activity channel on a Redis Cluster", () => {
  let cluster: RedisClusterHandle;
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  // Three chats: their sessions spread over the masters, so some turns run on every node.
  const chats = ["a", "b", "c"];
  let asked = 0;

  beforeAll(async () => {
    cluster = await startRedisCluster({ replicas: 1 });
    llm = await startFakeLlm();
    pipeline = await startPipeline(testConfig({
      // REDIS_URL points nowhere: the cluster's nodes are the seeds.
      REDIS_URL: "redis://127.0.0.1:1", REDIS_CLUSTER_NODES: cluster.nodeList, REDIS_MIN_REPLICAS_ACK: "1", LLM_BASE_URL: llm.url, TYPING_DELAY_MS: "0",
    }), [adapter], { logs: captureLogs("debug") });
  }, 120_000);
  afterAll(async () => {
    await pipeline?.close();
    await llm?.close();
    await cluster?.dispose();
  });

  /** The nodes, among those running and not frozen, holding the gateway's subscription (its two channels: activity, previews). */
  const subscriberPorts = () => cluster.nodes.filter((node) => node.child && !node.paused).flatMap((node) => {
    try {
      const clients = cluster.cli(node.port, "CLIENT", "LIST");
      return clients.split("\n").some((line) => line.includes(`name=ioredis-cluster(subscriber):${CONNECTION_NAMES.gatewayEvents} `) && / sub=2 /.test(line)) ? [node.port] : [];
    } catch {
      return [];
    }
  });
  const subscriberNode = async (other?: number): Promise<ClusterNode> => {
    let port: number | undefined;
    await vi.waitFor(() => {
      const ports = subscriberPorts().filter((each) => each !== other);
      expect(ports).toHaveLength(1);
      port = ports[0];
    }, { timeout: 30_000, interval: 200 });
    return cluster.nodes.find((node) => node.port === port)!;
  };
  /**
   * Offers `message` until it is acknowledged, as a platform does: while a master fails over, the
   * ingress may fail (MOVED to the dead master until the nodes agree on its replica) or wait.
   */
  const offer = async (message: InboundMessage) => {
    for (let attempt = 1; ; attempt++) {
      let timer: NodeJS.Timeout | undefined;
      try {
        const result = await Promise.race([
          adapter.submit(message),
          new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("submit attempt timed out")), 10_000))),
        ]);
        if (result.status === "accepted" || result.status === "duplicate") return;
        throw new Error(`unexpected ${result.status}`);
      } catch (error) {
        if (attempt >= 30) throw error;
        await sleep(500);
      } finally {
        clearTimeout(timer);
      }
    }
  };
  /** What the adapter was handed for the turn answering `messageId`, and the starts the gateway dropped as late (logged). */
  const heard = (messageId: string) => adapter.activity.filter((activity) => activity.target.replyToMessageId === messageId).map((activity) => activity.type);
  const droppedStart = (messageId: string) => {
    const turnId = adapter.activity.find((activity) => activity.target.replyToMessageId === messageId)?.turnId;
    return pipeline.logs.lines.some((line) => line.includes('"msg":"turn-activity-late"') && line.includes(`"turnId":"${turnId}"`) && line.includes('"type":"turn-started"'));
  };
  /**
   * One turn in each chat: each answered, and its activities heard in order — never a start after
   * the finish, which would leave the chat "typing…". Each PUBLISH goes through any master, so a
   * start may reach the gateway after its finish even with every node up (under load: the bus
   * between two nodes is slower than the one node's own delivery); the gateway then drops it
   * (src/gateway/activity-order.ts) and logs it. With every node up, no start is lost: it is
   * heard or dropped as late. While a node fails (`failing`) a start sent to it may be lost.
   */
  const turnsAreHeard = async (failing = false) => {
    for (const chat of chats) {
      const messageId = `m${++asked}`;
      await offer(inbound({ chatId: chat, text: `hello ${messageId}`, messageId }));
      await adapter.waitFor(() => adapter.answeredIds().includes(messageId), 60_000);
      expect(adapter.sent.filter((entry) => entry.reply.inReplyTo.includes(messageId)).map((entry) => entry.reply.text)).toEqual([`echo: hello ${messageId}`]);
      await vi.waitFor(() => expect(heard(messageId)).toContain("turn-finished"), { timeout: 15_000, interval: 50 });
      expect([["turn-started", "turn-finished"], ["turn-finished"]]).toContainEqual(heard(messageId));
      if (!failing) await vi.waitFor(() => expect(heard(messageId).includes("turn-started") || droppedStart(messageId)).toBe(true), { timeout: 15_000, interval: 50 });
    }
  };

  it("each turn's activities reach the gateway, a start never after its finish", async () => {
    await turnsAreHeard();
  }, 180_000);

  it("the subscription's node killed: subscribed again on another node at once; heard after its failover, the node back", async () => {
    const node = await subscriberNode();
    const port = node.port;
    // ioredis' pick: a master or a replica. A master is started again only once its replica took over.
    const master = (await cluster.masters()).includes(port);
    await node.kill();
    try {
      await subscriberNode(port);
      if (master) await cluster.waitForFailoverOf(port);
    } finally {
      await node.start();
    }
    await turnsAreHeard(true);
    await cluster.waitUntilHealthy({ replicas: 1, timeoutMs: 60_000 });
    await turnsAreHeard();
  }, 240_000);

  it("the subscription's node frozen past the node timeout: subscribed again on another node once the slot map drops it; heard after it wakes as a stale node", async () => {
    const node = await subscriberNode();
    const port = node.port;
    node.pause();
    try {
      // No `end` on a frozen node's socket: the subscription moves when the refreshed slot map
      // leaves the node out (its failover, or its being flagged failing as a replica).
      await subscriberNode(port);
    } finally {
      node.resume();
    }
    await turnsAreHeard(true);
    await cluster.waitUntilHealthy({ replicas: 1, timeoutMs: 60_000 });
    await turnsAreHeard();
  }, 240_000);
});
