/**
 * A Redis Cluster master fails over under a running chat: three masters, one replica each
 * (test/helpers/redis-cluster.ts, cluster-node-timeout 1 s), the whole pipeline on them with
 * REDIS_MIN_REPLICAS_ACK=1 — each message is acknowledged only once a replica of every node it
 * was written to holds it (WAIT on that node's own connection). The rule under test: a master
 * killed (SIGKILL), or frozen (SIGSTOP) past the node timeout, loses no acknowledged message and
 * none is answered twice; the chat goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatResult } from "../../../src/doctor/check.js";
import { redisResults } from "../../../src/doctor/doctor.js";
import { ReplicasBehindError } from "../../../src/gateway/ingress.js";
import { createRedis, keySlot, TURN_QUEUE, type Redis } from "../../../src/queue/index.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { FailoverChat } from "../../helpers/failover-chat.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { RecordingAdapter } from "../../helpers/recording-adapter.js";
import { startRedisCluster, type RedisClusterHandle } from "../../helpers/redis-cluster.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("Redis Cluster: a master fails over under a running chat", () => {
  let cluster: RedisClusterHandle;
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let checker: Redis;
  let chat: FailoverChat;
  const adapter = new RecordingAdapter("console");
  const prefix = `cf${Date.now().toString(36)}`;
  const turnsKey = `${prefix}:{${TURN_QUEUE}}:${TURN_QUEUE}:id`;

  beforeAll(async () => {
    cluster = await startRedisCluster({ replicas: 1, nodeTimeoutMs: 1_000 });
    // One chat per master, so whichever master fails holds a chat's session.
    const masters = await cluster.masters();
    const chats: string[] = [];
    const owners: number[] = [];
    for (let candidate = 0; chats.length < masters.length && candidate < 1_000; candidate++) {
      const owner = await cluster.masterOf(`console:k${candidate}`);
      if (!owners.includes(owner)) {
        owners.push(owner);
        chats.push(`k${candidate}`);
      }
    }
    expect(keySlot(`${prefix}:{console:${chats[0]}}:inbox`)).toBe(keySlot(`{console:${chats[0]}}`));
    llm = await startFakeLlm();
    llm.setHandler((request) => {
      const users = request.body.messages.filter((entry) => entry.role === "user");
      return { text: `ack ${String(users[users.length - 1]?.content)}`, delayMs: 150 };
    });
    const config = testConfig({
      REDIS_URL: "redis://127.0.0.1:1", REDIS_CLUSTER_NODES: cluster.nodeList, REDIS_PREFIX: prefix, REDIS_MIN_REPLICAS_ACK: "1",
      LLM_BASE_URL: llm.url, JOB_LOCK_MS: "2000",
    });
    pipeline = await startPipeline(config, [adapter]);
    checker = createRedis({ kind: "cluster", nodes: cluster.nodes.map((node) => ({ host: "127.0.0.1", port: node.port })) });
    chat = new FailoverChat(adapter, chats, prefix);
  }, 180_000);

  afterAll(async () => {
    checker?.disconnect();
    await pipeline?.close();
    await llm?.close();
    await cluster?.dispose();
  }, 60_000);

  it("chats on the cluster, each message confirmed by a replica", async () => {
    for (let index = 0; index < 3; index++) await chat.deliver(chat.message(index));
    await chat.expectClean(checker);
  }, 120_000);

  it("npm run doctor: each master's replicas against REDIS_MIN_REPLICAS_ACK, and a warning when replicas are not waited for", async () => {
    const doctor = async (minReplicasAck: string) => (await redisResults(testConfig({
      REDIS_URL: "redis://127.0.0.1:1", REDIS_CLUSTER_NODES: cluster.nodeList, REDIS_PREFIX: prefix, REDIS_MIN_REPLICAS_ACK: minReplicasAck,
    }), 5_000)).map((result) => formatResult(result, { color: false })).filter((line) => !line.startsWith("ok"));
    const masters = await cluster.masters();
    const one = await doctor("1");
    expect(one).toHaveLength(masters.length);
    for (const port of masters) expect(one.some((line) => new RegExp(`^WARN.*master 127\\.0\\.0\\.1:${port}: 1 replica online, exactly REDIS_MIN_REPLICAS_ACK=1`).test(line))).toBe(true);
    expect(await doctor("2")).toHaveLength(masters.length);
    expect((await doctor("2")).every((line) => /^FAIL.*1 replica online, fewer than REDIS_MIN_REPLICAS_ACK=2/.test(line))).toBe(true);
    expect(await doctor("0")).toEqual([expect.stringMatching(/^WARN.*REDIS_MIN_REPLICAS_ACK=0 on a Cluster with replicas/)]);
  }, 60_000);

  it("acknowledges nothing while the session's node has no replica confirming it, and answers it once when it has", async () => {
    const message = chat.message(3);
    const master = await cluster.masterOf(message.sessionKey);
    const replicaPorts = cluster.nodes.filter((node) => node.port !== master && /master_port:(\d+)/.exec(cluster.cli(node.port, "INFO", "replication"))?.[1] === String(master));
    expect(replicaPorts).toHaveLength(1);
    replicaPorts[0]!.pause();
    try {
      await expect(adapter.submit(message)).rejects.toBeInstanceOf(ReplicasBehindError);
    } finally {
      replicaPorts[0]!.resume();
    }
    await chat.deliver(message);
    await chat.expectClean(checker);
  }, 120_000);

  it("the turns queue's master killed (SIGKILL) mid-chat: 0 acknowledged messages lost, 0 doubled, 0 answered twice", async () => {
    const former = await cluster.masterOf(turnsKey);
    const victim = cluster.nodes.find((node) => node.port === former)!;
    await chat.through(4, async () => {
      await victim.kill();
      await cluster.waitForFailover(turnsKey, former);
      // Its supervisor starts it again: it rejoins as the new master's replica.
      await victim.start();
      await cluster.waitUntilHealthy({ replicas: 1 });
    });
    await chat.expectClean(checker);
  }, 240_000);

  it("a session's master frozen (SIGSTOP) past the node timeout mid-chat, then woken: 0 lost, 0 doubled, 0 answered twice", async () => {
    const sessionKey = chat.message(18).sessionKey;
    const former = await cluster.masterOf(sessionKey);
    const frozen = cluster.nodes.find((node) => node.port === former)!;
    await chat.through(18, async () => {
      frozen.pause();
      try {
        await cluster.waitForFailover(sessionKey, former);
        // Past the failover: it wakes as a stale master and learns it is a replica now.
        await sleep(cluster.nodeTimeoutMs);
      } finally {
        frozen.resume();
      }
      await cluster.waitUntilHealthy({ replicas: 1 });
    });
    await chat.expectClean(checker);
  }, 240_000);

  it("after the failovers the pipeline closes: every BullMQ worker stops and lets go of its connections", async () => {
    // A worker's blocking connection reset by BullMQ's watchdog mid-failover used to wait forever
    // on ioredis' connect() (see src/queue/redis.ts, connectSettles): its fetch loop never ended,
    // and neither did close() (CI's cleanup ran past 180 s). 30 s is far above a close's
    // ~0.1-0.4 s here, however loaded the machine.
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<"still closing">((resolve) => {
      timer = setTimeout(() => resolve("still closing"), 30_000);
    });
    try {
      expect(await Promise.race([pipeline.close().then(() => "closed" as const), deadline])).toBe("closed");
    } finally {
      clearTimeout(timer);
    }
  }, 60_000);
});
