/**
 * The Redis a chaos run uses, and the Redis faults it can apply: one redis-server (frozen past
 * the lock), or a Sentinel setup (its master frozen past the sentinels' down-after, or killed
 * and brought back by its "supervisor" after the failover).
 */
import { parseHostPorts, type RedisAddress } from "../../src/queue/index.js";
import { startRedisServer } from "./redis-server.js";
import { startSentinelSetup } from "./redis-sentinel.js";

export type ChaosTopology = "single" | "sentinel";

export interface ChaosRedis {
  /** The settings the app processes get. */
  env: Record<string, string>;
  address: RedisAddress;
  /** Freezes (the master) for `ms`; with Sentinel at least until the sentinels failed over. */
  pause(ms: number): Promise<void>;
  /** SIGKILLs the master; back after the failover (Sentinel only). */
  kill?(): Promise<void>;
  dispose(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startChaosRedis(topology: ChaosTopology): Promise<ChaosRedis> {
  if (topology === "single") {
    const redis = await startRedisServer();
    return { env: { REDIS_URL: redis.url }, address: redis.url, pause: (ms) => redis.freeze(ms), dispose: () => redis.dispose() };
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
