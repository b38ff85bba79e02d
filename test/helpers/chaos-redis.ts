/**
 * The Redis a chaos run uses, and the Redis faults it can apply: one redis-server (frozen past
 * the lock), a Sentinel setup (its master frozen past the sentinels' down-after, or killed and
 * brought back by its "supervisor" after the failover), or a Cluster of three masters with one
 * replica each (a master — each in turn — frozen past the node timeout, or killed and brought
 * back as a replica after its replica took over).
 */
import { parseHostPorts, type RedisAddress } from "../../src/queue/index.js";
import { startRedisServer } from "./redis-server.js";
import { startRedisCluster } from "./redis-cluster.js";
import { startSentinelSetup } from "./redis-sentinel.js";

export type ChaosTopology = "single" | "sentinel" | "cluster";
export const CHAOS_TOPOLOGIES: readonly ChaosTopology[] = ["single", "sentinel", "cluster"];

export interface ChaosRedis {
  /** The settings the app processes get. */
  env: Record<string, string>;
  address: RedisAddress;
  /** Freezes (the master) for `ms`; with Sentinel at least until the sentinels failed over. */
  pause(ms: number): Promise<void>;
  /** SIGKILLs the master (a Cluster: one of them); back after the failover (Sentinel and Cluster). */
  kill?(): Promise<void>;
  dispose(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startChaosRedis(topology: ChaosTopology): Promise<ChaosRedis> {
  if (topology === "single") {
    const redis = await startRedisServer();
    return { env: { REDIS_URL: redis.url }, address: redis.url, pause: (ms) => redis.freeze(ms), dispose: () => redis.dispose() };
  }
  if (topology === "cluster") {
    const cluster = await startRedisCluster({ replicas: 1, nodeTimeoutMs: 1_000 });
    let turn = 0;
    // Each fault takes the next master in turn, so every shard fails over in a long enough run.
    const nextMaster = async () => {
      // A loaded machine may leave every node's answer late: ask again rather than pick none.
      for (let attempt = 0; ; attempt++) {
        const masters = (await cluster.masters()).sort((a, b) => a - b);
        const node = cluster.nodes.find((candidate) => candidate.port === masters[turn % masters.length]);
        if (node) {
          turn += 1;
          return node;
        }
        if (attempt > 100) throw new Error("no master answered");
        await sleep(300);
      }
    };
    return {
      // One replica per master: the ingress and delivery wait for it (docs/operator.md).
      env: { REDIS_CLUSTER_NODES: cluster.nodeList, REDIS_MIN_REPLICAS_ACK: "1" },
      address: { kind: "cluster", nodes: parseHostPorts(cluster.nodeList) },
      async pause(ms) {
        const frozen = await nextMaster();
        frozen.pause();
        try {
          await Promise.all([cluster.waitForFailoverOf(frozen.port), sleep(ms)]);
        } finally {
          frozen.resume();
        }
        await cluster.waitUntilHealthy({ replicas: 1 });
      },
      async kill() {
        const victim = await nextMaster();
        await victim.kill();
        await cluster.waitForFailoverOf(victim.port);
        await victim.start();
        await cluster.waitUntilHealthy({ replicas: 1 });
      },
      dispose: () => cluster.dispose(),
    };
  }
  const setup = await startSentinelSetup();
  const address: RedisAddress = { kind: "sentinel", sentinels: parseHostPorts(setup.sentinels), master: setup.master };
  return {
    env: { REDIS_SENTINELS: setup.sentinels, REDIS_SENTINEL_MASTER: setup.master },
    address,
    async pause(ms) {
      const formerPort = await setup.masterPort();
      const frozen = setup.nodeAt(formerPort);
      frozen.pause();
      try {
        await Promise.all([setup.waitForFailover(formerPort), sleep(ms)]);
      } finally {
        frozen.resume();
      }
      await setup.waitForReplicas(2);
    },
    async kill() {
      const formerPort = await setup.masterPort();
      await setup.nodeAt(formerPort).kill();
      await setup.waitForFailover(formerPort);
      await setup.nodeAt(formerPort).start();
      await setup.waitForReplicas(2);
    },
    dispose: () => setup.dispose(),
  };
}
