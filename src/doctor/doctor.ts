/**
 * `npm run doctor`: every check, run side by side, reported in group order. Read-only: it
 * starts no Redis and writes no marker (start-up does that).
 */
import { minReplicasAckOf, type Config } from "../../config/index.js";
import { locateRedis, NO_REDIS_FIX, redisLookupOf, type RedisLookup } from "../embedded-redis.js";
import { clusterMasters } from "../queue/index.js";
import { CHECK_GROUPS, fail, ok, skip, type CheckResult, type DoctorCheck } from "./check.js";
import { llmResults } from "./llm.js";
import { discordResults, telegramResults } from "./platforms.js";
import { connectForChecks, durabilityResults, ownershipResult, readRedisFacts, unreachableResult } from "./redis.js";
import { settingsResults } from "./settings.js";
import { clusterResults, replicaResult, sentinelResults } from "./topology.js";

export interface DoctorOptions {
  /** Longest wait of one network check. @defaultValue 15000 */
  timeoutMs?: number;
  /** Checks other capabilities contribute: MCP servers (src/tools/mcp) plug in here. */
  extraChecks?: readonly DoctorCheck[];
  /** Where to look for Redis when REDIS_URL is unset (tests move the ports). */
  redisLookup?: Omit<RedisLookup, "redisUrl" | "dataDir">;
}

export async function runDoctor(config: Config, options: DoctorOptions = {}): Promise<CheckResult[]> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const settings = settingsResults(config);
  const modelConfigured = !settings.some((result) => result.status === "fail");
  const groups = await Promise.all([
    redisResults(config, timeoutMs, options.redisLookup),
    config.LONGHAUL_ROLE === "gateway" ? [skip("llm", "the gateway role calls no model")]
    : modelConfigured ? llmResults(config, timeoutMs) : [],
    config.LONGHAUL_ROLE === "worker" ? [] : telegramResults(config, { timeoutMs, webhook: true }),
    config.LONGHAUL_ROLE === "worker" ? [] : discordResults(config, { timeoutMs }),
    ...(options.extraChecks ?? []).map((check) => check.run({ timeoutMs }).catch((error: unknown) =>
      [fail(check.group, `check crashed: ${error instanceof Error ? error.message : String(error)}`, "report this as a bug")])),
  ]);
  const results = [...settings, ...groups.flat()];
  // Stable sort: the order within a group is the order the checks reported.
  return results.sort((a, b) => CHECK_GROUPS.indexOf(a.group) - CHECK_GROUPS.indexOf(b.group));
}

export async function redisResults(config: Config, timeoutMs: number, lookup: DoctorOptions["redisLookup"] = {}): Promise<CheckResult[]> {
  const location = await locateRedis({ ...lookup, ...redisLookupOf(config) });
  if (location.kind === "none") {
    return [fail("redis", "no Redis: REDIS_URL is unset, nothing listens on 127.0.0.1:6379, and redis-server is not installed", NO_REDIS_FIX)];
  }
  if (location.kind === "private-startable") {
    return [ok("redis", `nothing on 127.0.0.1:6379: npm start runs a private redis-server (AOF, fsync every second, noeviction) with its data in ${location.dir}`)];
  }
  const explicit = location.kind === "configured";
  const configured = location.kind === "configured" && typeof location.address !== "string" ? location.address : undefined;
  const sentinel = configured?.kind === "sentinel" ? configured : undefined;
  const cluster = configured?.kind === "cluster";
  const topology = sentinel ? await sentinelResults(sentinel, Math.min(timeoutMs, 5_000)) : [];
  if (topology.some((result) => result.status === "fail")) return topology;
  const source = sentinel ? "the master REDIS_SENTINELS name" : cluster ? "the REDIS_CLUSTER_NODES cluster" : explicit ? "REDIS_URL" : location.kind === "default" ? "found listening, REDIS_URL unset" : "longhaul's private redis-server";
  let redis;
  try {
    redis = await connectForChecks(location.kind === "configured" ? location.address : location.url, Math.min(timeoutMs, 5_000));
  } catch (error) {
    return [...topology, unreachableResult(location.kind === "configured" ? location.address : location.url, error, explicit)];
  }
  try {
    if (cluster) {
      const minReplicasAck = minReplicasAckOf(config);
      const shape = await clusterResults(redis, minReplicasAck);
      // A cluster that is down answers every key with CLUSTERDOWN: its shape is the finding.
      if (shape.some((result) => result.status === "fail")) return shape;
      const facts = await readRedisFacts(redis, config.REDIS_PREFIX);
      // Each master answers INFO and CONFIG for itself: every one must keep AOF and noeviction.
      const masters = await Promise.all(clusterMasters(redis).map(async (master) => ({
        where: `${master.options.host ?? "?"}:${master.options.port ?? "?"}`,
        facts: await readRedisFacts(master, config.REDIS_PREFIX, { ownership: false }),
        keys: await master.dbsize(),
        // The ingress waits for replicas of each node a message is written to: each master must have them.
        replicas: minReplicasAck > 0 ? [await replicaResult(master, minReplicasAck)] : [],
      })));
      const perMaster = masters.map(({ where, facts: own, replicas }) => [...replicas, ...durabilityResults(own)].map((result) => ({ ...result, detail: `master ${where}: ${result.detail}` })));
      // The deployment's keys are spread over the masters: empty means empty on every one.
      facts.keys = masters.reduce((sum, master) => sum + master.keys, 0);
      return [
        ...shape,
        ok("redis", `reachable: Redis ${facts.version ?? "(version unknown)"} (${source})`),
        ownershipResult(facts, { url: location.kind === "configured" ? location.address : location.url, explicit, prefix: config.REDIS_PREFIX }),
        ...perMaster.flat(),
      ];
    }
    const facts = await readRedisFacts(redis, config.REDIS_PREFIX);
    return [
      ...topology,
      ...(sentinel ? [await replicaResult(redis, minReplicasAckOf(config))] : []),
      ok("redis", `reachable: Redis ${facts.version ?? "(version unknown)"} (${source})`),
      ownershipResult(facts, { url: location.kind === "configured" ? location.address : location.url, explicit, prefix: config.REDIS_PREFIX }),
      ...durabilityResults(facts),
    ];
  } catch (error) {
    return [fail("redis", `Redis answered but could not be inspected (${error instanceof Error ? error.message : String(error)})`, "check the Redis user's permissions (INFO, DBSIZE, GET)")];
  } finally {
    redis.disconnect();
  }
}
