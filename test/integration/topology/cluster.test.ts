/**
 * The pipeline (ingress, BullMQ queues, worker, delivery) on a real Redis Cluster: three masters
 * made with `redis-cli --cluster create` (test/helpers/redis-cluster.ts). A MULTI or a script
 * whose keys span two slots fails there (CROSSSLOT), and a command sent to the wrong node is
 * answered MOVED: a chat that runs clean here — compactions included — runs on any Cluster.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { formatResult } from "../../../src/doctor/check.js";
import { redisResults } from "../../../src/doctor/doctor.js";
import { runAdmin } from "../../../src/cli/admin-commands.js";
import { AccessControl } from "../../../src/gateway/access.js";
import { createProducers, createRedis, type Redis } from "../../../src/queue/index.js";
import { globalKeys } from "../../../src/session/keys.js";
import { SessionStore } from "../../../src/session/store.js";
import { startSweeper } from "../../../workers/turn-worker.js";
import { IDLE_QUEUE, SCHEDULE_QUEUE, TURN_QUEUE, deliveryQueueName } from "../../../src/queue/index.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { testConfig } from "../../helpers/config.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { startRedisCluster, type RedisClusterHandle } from "../../helpers/redis-cluster.js";
import { readTurnHistory, readUsageLedger } from "../../../src/session/turn-history.js";

describe("Redis Cluster: the pipeline on three masters", () => {
  let cluster: RedisClusterHandle;
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  let config: ReturnType<typeof testConfig> | undefined;
  /** One configuration (and so one REDIS_PREFIX) for the pipeline and the operator's tools. */
  const onCluster = () => (config ??= testConfig({
    // REDIS_URL points nowhere: the cluster's nodes are the seeds.
    REDIS_URL: "redis://127.0.0.1:1", REDIS_CLUSTER_NODES: cluster.nodeList, LLM_BASE_URL: llm.url, LLM_CONTEXT_WINDOW: "8000",
  }));

  beforeAll(async () => {
    cluster = await startRedisCluster();
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: "## Goal\nA long chat about the sea." });
    pipeline = await startPipeline(onCluster(), [adapter]);
  }, 120_000);
  afterAll(async () => {
    await pipeline?.close();
    await llm?.close();
    await cluster?.dispose();
  });

  /** Keys of a deployment per master, by the masters' own DBSIZE. */
  const keysPerMaster = () => cluster.nodes.map((node) => Number(cluster.cli(node.port, "DBSIZE").trim()));

  it("answers a conversation in several chats, commands included, with no error logged", async () => {
    for (const [chat, text] of [["a", "hello"], ["b", "hi"], ["a", "how are you"], ["a", "/new"], ["b", "/status"], ["c", "hey"]] as const) {
      const reply = await adapter.ask(inbound({ chatId: chat, text }), 60_000);
      expect(reply.length).toBeGreaterThan(0);
    }
    // A pipeline across slots is refused by ioredis before it is sent (no CROSSSLOT from Redis):
    // the turn history and its usage ledger were one such until 2026-12-06, each turn a warning.
    expect(pipeline.logs.lines.filter((line) => /CROSSSLOT|MOVED|same slots allocation group|"level":(50|60)/.test(line))).toEqual([]);
    const reader = createRedis({ kind: "cluster", nodes: cluster.nodes.map((node) => ({ host: "127.0.0.1", port: node.port })) });
    try {
      expect((await readTurnHistory(reader, onCluster().REDIS_PREFIX, "console:b")).length).toBeGreaterThan(0);
      const ledger = await readUsageLedger(reader, onCluster().REDIS_PREFIX, new Date().toISOString().slice(0, 10));
      expect(ledger.get("chat")?.get("console:b")?.tokens).toBeGreaterThan(0);
    } finally {
      reader.disconnect();
    }
  }, 180_000);

  it("the sweeper: a listed session with nothing left is settled, and a stored message with no job is answered", async () => {
    const { REDIS_PREFIX: prefix } = onCluster();
    const redis = createRedis({ kind: "cluster", nodes: cluster.nodes.map((node) => ({ host: "127.0.0.1", port: node.port })) });
    const store = new SessionStore(redis, prefix);
    const producers = createProducers(redis, prefix);
    const logs = captureLogs("warn");
    // Every 100 ms, beside the worker's own (every 5 s).
    const sweeper = startSweeper(store, producers, logs.logger, 100);
    const workSet = globalKeys(prefix).workSet;
    // Listed with nothing left (a settle that a failed master acknowledged and lost leaves them
    // so): the sweeper looks for wave-1 keys of each, three keys in three slots. One EXISTS over
    // them was refused (CROSSSLOT), which failed every sweep — the one below included.
    const idle = ["console:idle-1", "console:idle-2", "console:idle-3"];
    try {
      await redis.sadd(workSet, ...idle);
      // Stored, never enqueued (the gateway died in between).
      await store.appendInbox(inbound({ chatId: "stranded", userId: "user-2", text: "anyone there?", messageId: "sweep-1" }), Date.now());
      await adapter.waitFor(() => adapter.answeredIds().includes("sweep-1"), 30_000);
      await vi.waitFor(async () => expect(await redis.smismember(workSet, ...idle)).toEqual([0, 0, 0]));
      expect(logs.lines.filter((line) => line.includes("sweep-failed"))).toEqual([]);
    } finally {
      sweeper.stop();
      await producers.close();
      redis.disconnect();
    }
  }, 60_000);

  it("a long session compacts on the cluster (summarizer called, the turn answered)", async () => {
    const summaries = llm.requests.filter(isSummarizerRequest).length;
    for (let turn = 0; turn < 40 && llm.requests.filter(isSummarizerRequest).length === summaries; turn++) {
      const reply = await adapter.ask(inbound({ chatId: "long", text: `chapter ${turn}: ${"the waves, the wind and the salt on the deck ".repeat(40)}` }), 60_000);
      expect(reply.length).toBeGreaterThan(0);
    }
    expect(llm.requests.filter(isSummarizerRequest).length).toBeGreaterThan(summaries);
    const after = await adapter.ask(inbound({ chatId: "long", text: "and now?" }), 60_000);
    expect(after.length).toBeGreaterThan(0);
    expect(pipeline.logs.lines.filter((line) => /CROSSSLOT|MOVED|same slots allocation group|"level":(50|60)/.test(line))).toEqual([]);
  }, 300_000);

  it("spreads the deployment over the masters: each queue has its own slot, sessions land on several nodes", () => {
    const slotOf = (key: string) => Number(cluster.cli(cluster.nodes[0]!.port, "CLUSTER", "KEYSLOT", key).trim());
    const queues = [TURN_QUEUE, deliveryQueueName("console"), SCHEDULE_QUEUE, IDLE_QUEUE];
    const slots = new Set(queues.map((queue) => slotOf(`longhaul:{${queue}}:${queue}:wait`)));
    expect(slots.size).toBe(queues.length);
    expect(keysPerMaster().filter((keys) => keys > 0).length).toBeGreaterThanOrEqual(2);
  });

  it("npm run doctor judges the cluster: every slot served, each master's AOF and eviction policy", async () => {
    const results = await redisResults(onCluster(), 5_000);
    const lines = results.map((result) => formatResult(result, { color: false }));
    expect(lines.find((line) => /cluster ok: 16384 slots served by 3 masters, 3 nodes known/.test(line))).toBeDefined();
    // No replicas in this cluster: the doctor says what a dead master would cost.
    expect(lines.find((line) => /0 replicas for 3 masters/.test(line))).toBeDefined();
    for (const node of cluster.nodes) {
      expect(lines.find((line) => line.includes(`master 127.0.0.1:${node.port}: maxmemory-policy noeviction`))).toBeDefined();
      expect(lines.find((line) => line.includes(`master 127.0.0.1:${node.port}: AOF on, fsync every second`))).toBeDefined();
    }
    expect(results.filter((result) => result.status === "fail")).toEqual([]);
  }, 60_000);

  describe("the operator's tools on the cluster (keys spread over masters: SCAN walks each, no multi-key command crosses slots)", () => {
    let redis: Redis;
    beforeAll(() => {
      redis = createRedis({ kind: "cluster", nodes: cluster.nodes.map((node) => ({ host: "127.0.0.1", port: node.port })) });
    });
    afterAll(() => redis?.disconnect());

    it("pairing: a stranger's request is listed, approved, and the user is served", async () => {
      const config = onCluster();
      const access = new AccessControl(redis, config.REDIS_PREFIX, { users: {}, chats: {} });
      const strangers = ["s1", "s2", "s3", "s4", "s5"].map((userId) => ({ platform: "telegram" as const, chatType: "private" as const, chatId: userId, userId, userName: userId }));
      for (const stranger of strangers) expect((await access.check(stranger)).allowed).toBe(false);
      const pending = await access.pendingRequests();
      expect(pending.map((request) => request.userId).sort()).toEqual(["s1", "s2", "s3", "s4", "s5"]);
      const approved = await access.approve(pending.find((request) => request.userId === "s3")!.code);
      expect(approved?.userId).toBe("s3");
      expect((await access.check(strangers[2]!)).allowed).toBe(true);
      expect((await access.pendingRequests()).map((request) => request.userId).sort()).toEqual(["s1", "s2", "s4", "s5"]);
    });

    it("npm run admin -- sessions lists the chats of every master; delete-user removes a user's keys wherever they live", async () => {
      const config = onCluster();
      expect(keysPerMaster().filter((keys) => keys > 0).length).toBeGreaterThanOrEqual(2);
      let out = "";
      expect(await runAdmin({ redis, config, now: Date.now(), write: (text) => (out += text) }, ["sessions"])).toBe(0);
      for (const chat of ["a", "b", "c", "long"]) expect(out).toContain(`console:${chat}`);
      // The user's private chat (its id is the user's) lives on some master; delete-user finds it.
      await adapter.ask(inbound({ chatId: "user-1", text: "hello, it is me" }), 60_000);
      out = "";
      expect(await runAdmin({ redis, config, now: Date.now(), write: (text) => (out += text) }, ["delete-user", "console:user-1"])).toBe(0);
      // Every private chat of the user, wherever its slot put it, and all their keys.
      expect(out).toMatch(/^Deleted console:user-1: 4 private conversation\(s\) \(console:b, console:c, console:long, console:user-1\), [1-9]\d* key\(s\)/);
      out = "";
      await runAdmin({ redis, config, now: Date.now(), write: (text) => (out += text) }, ["sessions"]);
      for (const chat of ["b", "c", "long", "user-1"]) expect(out).not.toMatch(new RegExp(`console:${chat}\\b`));
    }, 60_000);
  });
});
