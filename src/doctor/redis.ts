/**
 * Redis checks: reachable; whose it is (a marker key under the prefix); whether it keeps what
 * it acknowledged (AOF, fsync) and never evicts keys. docs/architecture.md ("Redis: whose it
 * is, and what it keeps") states the rules.
 */
import { createRedis, describeRedisAddress, type Redis, type RedisAddress } from "../queue/index.js";
import { globalKeys } from "../session/keys.js";
import { describeNetworkError, fail, ok, warn, type CheckResult } from "./check.js";

export interface RedisFacts {
  version: string | undefined;
  aofEnabled: boolean;
  /** `always` | `everysec` | `no`; undefined where CONFIG is disabled (managed Redis). */
  appendfsync: string | undefined;
  /** RDB snapshot rules (`save`), undefined where CONFIG is disabled. */
  save: string | undefined;
  maxmemoryPolicy: string | undefined;
  maxmemory: number | undefined;
  /** Keys in the selected database. */
  keys: number;
  /** The marker's value, null when absent. */
  marker: string | null;
}

/**
 * A connection that fails instead of waiting: the pipeline's connections wait for Redis to
 * come back (queue/redis.ts), which is right for turns and wrong for a check.
 */
export async function connectForChecks(address: RedisAddress, timeoutMs: number): Promise<Redis> {
  // A Cluster's ready check refuses a cluster whose state is `fail` (a slot uncovered, a master
  // down): the connection would close as if no node answered. The doctor connects anyway and
  // says what is wrong from CLUSTER INFO (topology.ts, clusterResults).
  const cluster = typeof address !== "string" && address.kind === "cluster";
  const redis = createRedis(address, { lazyConnect: true, retryStrategy: () => null, sentinelRetryStrategy: () => null, failoverDetector: false, maxRetriesPerRequest: 0, connectTimeout: timeoutMs, enableOfflineQueue: false, ...(cluster ? { enableReadyCheck: false } : {}) });
  // ioredis rejects connect() with "Connection is closed."; the reason comes as an error event.
  let reason: unknown;
  redis.on("error", (error) => (reason ??= error));
  try {
    await redis.connect();
    await redis.ping();
    return redis;
  } catch (error) {
    redis.disconnect();
    throw reason ?? error;
  }
}

export function unreachableResult(address: RedisAddress, error: unknown, explicit: boolean): CheckResult {
  const reason = describeRedisError(error);
  const auth = /NOAUTH|WRONGPASS|invalid password|invalid username/i.test(reason);
  return fail("redis", `Redis at ${describeRedisAddress(address)} ${auth ? "refused the credentials" : "is unreachable"} (${reason})`,
    auth ? "put the right password in REDIS_URL (redis://:PASSWORD@host:port, or redis://USER:PASSWORD@… with ACLs)"
    : explicit ? "start Redis there, or point REDIS_URL at a running Redis"
    : "start Redis, or set REDIS_URL to a running one");
}

function describeRedisError(error: unknown): string {
  if (error instanceof Error && /NOAUTH|WRONGPASS|ERR AUTH|invalid password/i.test(error.message)) return error.message.split("\n")[0] ?? "authentication failed";
  return describeNetworkError(error);
}

/** Reads what the checks judge. GET marker and DBSIZE run as one transaction: see `ownershipResult`. */
export async function readRedisFacts(redis: Redis, prefix: string, options: { ownership?: boolean } = {}): Promise<RedisFacts> {
  const server = parseInfo(await redis.info("server"));
  const persistence = parseInfo(await redis.info("persistence"));
  const memory = parseInfo(await redis.info("memory"));
  const config = async (name: string): Promise<string | undefined> => {
    try {
      const reply = (await redis.config("GET", name)) as string[];
      return reply[1];
    } catch {
      return undefined; // CONFIG renamed or disabled (ElastiCache, Upstash…)
    }
  };
  // A Cluster's master answers only for its own slots: its facts are read without the marker.
  const snapshot = options.ownership === false ? undefined : await redis.multi().get(globalKeys(prefix).marker).dbsize().exec();
  const maxmemory = memory.maxmemory ?? (await config("maxmemory"));
  return {
    version: server.redis_version,
    aofEnabled: persistence.aof_enabled === "1",
    appendfsync: await config("appendfsync"),
    save: await config("save"),
    maxmemoryPolicy: memory.maxmemory_policy ?? (await config("maxmemory-policy")),
    maxmemory: maxmemory === undefined ? undefined : Number(maxmemory),
    marker: (snapshot?.[0]?.[1] as string | null | undefined) ?? null,
    keys: Number(snapshot?.[1]?.[1] ?? 0),
  };
}

function parseInfo(text: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    const at = line.indexOf(":");
    if (at > 0 && !line.startsWith("#")) fields[line.slice(0, at)] = line.slice(at + 1).trim();
  }
  return fields;
}

export type Ownership = "ours" | "empty" | "foreign";

/**
 * Whose Redis this is. "Empty" means the selected database holds no key at all: with a shared
 * Redis we cannot tell another app's keys from our own old ones, so any key without our marker
 * makes it someone else's — usable only when REDIS_URL names it (the operator decided).
 */
export function ownershipOf(facts: RedisFacts): Ownership {
  if (facts.marker !== null) return "ours";
  return facts.keys === 0 ? "empty" : "foreign";
}

export function ownershipResult(facts: RedisFacts, options: { url: RedisAddress; explicit: boolean; prefix: string }): CheckResult {
  const where = `Redis at ${describeRedisAddress(options.url)}`;
  const marker = globalKeys(options.prefix).marker;
  switch (ownershipOf(facts)) {
    case "ours":
      return ok("redis", `${where} is longhaul's (marker ${marker}${markedSince(facts.marker)})`);
    case "empty":
      return ok("redis", `${where} is empty: longhaul marks it as its own (${marker}) at start`);
    case "foreign":
      if (options.explicit) return ok("redis", `${where} holds ${facts.keys} keys and no longhaul marker under "${options.prefix}": used because REDIS_URL names it; longhaul marks it at start`);
      return fail("redis", `${where} holds ${facts.keys} keys and no longhaul marker (${marker}): it may be another app's`,
        `to use it anyway set REDIS_URL=${typeof options.url === "string" ? options.url : "redis://HOST:PORT"} (and a REDIS_PREFIX of its own); or stop it, so longhaul runs its private Redis under DATA_DIR`);
  }
}

function markedSince(marker: string | null): string {
  try {
    const { markedAt } = JSON.parse(marker ?? "") as { markedAt?: unknown };
    return typeof markedAt === "string" ? `, since ${markedAt.slice(0, 10)}` : "";
  } catch {
    return "";
  }
}

/** Writes the marker unless one is there. */
export async function markRedis(redis: Redis, prefix: string, now = new Date()): Promise<void> {
  await redis.set(globalKeys(prefix).marker, JSON.stringify({ app: "longhaul", prefix, markedAt: now.toISOString() }), "NX");
}

/** Persistence and eviction: a warning for each way this Redis can lose what it acknowledged. */
export function durabilityResults(facts: RedisFacts): CheckResult[] {
  return [persistenceResult(facts), evictionResult(facts)];
}

function persistenceResult(facts: RedisFacts): CheckResult {
  if (!facts.aofEnabled) {
    const snapshots = facts.save === undefined ? "" : facts.save.trim() === "" ? " and no RDB snapshots" : ` (RDB snapshots only: save "${facts.save}")`;
    const loses = facts.save?.trim() === "" ? "loses everything it held" : "loses what arrived since the last snapshot";
    return warn("redis", `no AOF${snapshots}: a Redis crash or restart ${loses} — messages already acknowledged to users`,
      "run Redis with --appendonly yes --appendfsync everysec (compose.yaml does), or CONFIG SET appendonly yes then CONFIG REWRITE");
  }
  switch (facts.appendfsync) {
    case "always":
      return ok("redis", "AOF on, fsync on every write: nothing acknowledged is lost");
    case "everysec":
      return ok("redis", "AOF on, fsync every second: a power loss can take the last second of writes (docs/architecture.md)");
    case "no":
      return warn("redis", "AOF on but appendfsync no: the OS flushes when it likes (~30 s on Linux), so a power loss can lose that much",
        "CONFIG SET appendfsync everysec then CONFIG REWRITE (or --appendfsync everysec)");
    default:
      return ok("redis", "AOF on (appendfsync not readable: CONFIG is disabled on this Redis)");
  }
}

function evictionResult(facts: RedisFacts): CheckResult {
  const policy = facts.maxmemoryPolicy;
  if (policy === undefined) return ok("redis", "eviction policy not readable (INFO memory has no maxmemory_policy)");
  if (policy === "noeviction") return ok("redis", "maxmemory-policy noeviction: keys are never evicted");
  const limit = facts.maxmemory ? `at maxmemory (${Math.round(facts.maxmemory / 1_048_576)} MB)` : "once a maxmemory limit is set";
  return warn("redis", `maxmemory-policy ${policy}: ${limit} Redis deletes keys — sessions, queued turns, dedupe records`,
    "CONFIG SET maxmemory-policy noeviction then CONFIG REWRITE (BullMQ requires noeviction)");
}
