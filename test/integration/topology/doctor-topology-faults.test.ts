/**
 * `npm run doctor` against broken topologies, each fault made on real servers: a Cluster master
 * that may evict keys, one without AOF, a slot no master serves; a sentinel that names another
 * master than the others. The healthy lines are in cluster.test.ts and sentinel.test.ts.
 */
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatResult } from "../../../src/doctor/check.js";
import { redisResults } from "../../../src/doctor/doctor.js";
import { testConfig } from "../../helpers/config.js";
import { startRedisCluster, type RedisClusterHandle } from "../../helpers/redis-cluster.js";
import { startSentinelSetup, type SentinelSetup } from "../../helpers/redis-sentinel.js";

const notOk = (lines: string[]) => lines.filter((line) => !line.startsWith("ok"));

describe("npm run doctor on a Cluster with a fault", () => {
  let cluster: RedisClusterHandle;
  const doctor = async () => (await redisResults(testConfig({ REDIS_URL: "redis://127.0.0.1:1", REDIS_CLUSTER_NODES: cluster.nodeList }), 5_000)).map((result) => formatResult(result, { color: false }));

  beforeAll(async () => {
    cluster = await startRedisCluster();
  }, 120_000);
  afterAll(async () => {
    await cluster?.dispose();
  });

  it("a master that may evict keys, and another without AOF, are each named", async () => {
    const [evicting, noAof] = cluster.nodes;
    cluster.cli(evicting!.port, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
    cluster.cli(noAof!.port, "CONFIG", "SET", "appendonly", "no");
    try {
      const lines = notOk(await doctor());
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`master 127\\.0\\.0\\.1:${evicting!.port}: maxmemory-policy allkeys-lru`)));
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`master 127\\.0\\.0\\.1:${noAof!.port}: no AOF`)));
      // Only those two, and each on its own master: the third is clean (0 replicas is a warning of its own).
      expect(lines.filter((line) => /maxmemory-policy|AOF/.test(line))).toHaveLength(2);
    } finally {
      cluster.cli(evicting!.port, "CONFIG", "SET", "maxmemory-policy", "noeviction");
      cluster.cli(noAof!.port, "CONFIG", "SET", "appendonly", "yes");
    }
  }, 60_000);

  it("a slot no master serves is a failure", async () => {
    const slot = "0";
    const owner = cluster.nodes.find((node) => / 0-\d+/.test(cluster.cli(node.port, "CLUSTER", "NODES").split("\n").find((line) => line.includes("myself")) ?? ""))!;
    for (const node of cluster.nodes) cluster.cli(node.port, "CLUSTER", "DELSLOTS", slot);
    try {
      const lines = await doctor();
      expect(lines.filter((line) => line.startsWith("FAIL"))).toEqual([expect.stringMatching(/cluster state fail: 16383 of 16384 slots assigned/)]);
    } finally {
      cluster.cli(owner.port, "CLUSTER", "ADDSLOTS", slot);
      await cluster.waitUntilHealthy();
    }
  }, 60_000);

  it("a master down (no replica to take its slots) is a failure saying which slots are not served", async () => {
    const down = cluster.nodes[2]!;
    await down.kill();
    try {
      // Past the node timeout the others mark it failed and the cluster's state turns fail.
      const deadline = Date.now() + 30_000;
      while (!/cluster_state:fail/.test(cluster.cli(cluster.nodes[0]!.port, "CLUSTER", "INFO")) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
      const lines = await doctor();
      expect(lines.filter((line) => line.startsWith("FAIL"))).toEqual([expect.stringMatching(/cluster state fail: 16384 of 16384 slots assigned, \d+ served/)]);
    } finally {
      await down.start();
      await cluster.waitUntilHealthy();
    }
  }, 90_000);
});

describe("npm run doctor on Sentinel with a fault", () => {
  let setup: SentinelSetup;
  const doctor = async () => (await redisResults(testConfig({ REDIS_URL: "redis://127.0.0.1:1", REDIS_SENTINELS: setup.sentinels, REDIS_SENTINEL_MASTER: setup.master }), 5_000)).map((result) => formatResult(result, { color: false }));

  beforeAll(async () => {
    setup = await startSentinelSetup();
  }, 120_000);
  afterAll(async () => {
    await setup?.dispose();
  });

  it("a sentinel that names another master than the others is a failure", async () => {
    const masterPort = await setup.masterPort();
    const replica = setup.nodes.find((node) => node.port !== masterPort)!;
    const rogue = setup.sentinelNodes[0]!;
    const ask = (...args: string[]) => {
      return spawnSync("redis-cli", ["-p", String(rogue.port), ...args], { encoding: "utf8" }).stdout;
    };
    ask("SENTINEL", "REMOVE", setup.master);
    ask("SENTINEL", "MONITOR", setup.master, "127.0.0.1", String(replica.port), "2");
    const lines = await doctor();
    expect(lines.filter((line) => line.startsWith("FAIL"))).toEqual([
      expect.stringMatching(new RegExp(`the sentinels disagree on the master of "${setup.master}": .*127\\.0\\.0\\.1:${rogue.port} says 127\\.0\\.0\\.1:${replica.port}`)),
    ]);
  }, 60_000);
});
