import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { connect } from "node:net";
import { resolve } from "node:path";
import type { Logger } from "./logger.js";
import { describeRedisAddress, parseHostPorts, type ClusterAddress, type RedisAddress, type SentinelAddress } from "./queue/redis.js";

export async function isListening(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect(port, host);
    const finish = (open: boolean) => {
      socket.destroy();
      done(open);
    };
    socket.setTimeout(timeoutMs, () => finish(false));
    socket.once("connect", () => finish(true));
    socket.once("error", () => finish(false));
  });
}

export interface ResolvedRedis {
  /** What connections are made to (`createRedis`). */
  address: RedisAddress;
  /** The address for messages: a URL for one server, the sentinels and master name otherwise. */
  url: string;
  /** REDIS_URL named this Redis: the operator chose it, so an unmarked one may be used (doctor/redis.ts). */
  explicit: boolean;
  /** Stops the private redis-server, if one was started. */
  stop(): Promise<void>;
}

/** Where `resolveRedis` would find Redis, without starting anything (for the doctor). */
export type RedisLocation =
  | { kind: "configured"; url: string; address: RedisAddress }
  | { kind: "default"; url: string }
  | { kind: "private-running"; url: string }
  | { kind: "private-startable"; port: number; dir: string }
  | { kind: "none" };

export interface RedisLookup {
  redisUrl?: string;
  /** REDIS_SENTINELS and friends: the master they name wins over REDIS_URL's host. */
  sentinel?: SentinelAddress;
  /** REDIS_CLUSTER_NODES: a Cluster, its nodes' password from REDIS_URL. */
  cluster?: ClusterAddress;
  dataDir: string;
  /** The default Redis port probed when REDIS_URL is unset (tests move it). */
  defaultPort?: number;
  /** Where the private server listens. */
  embeddedPort?: number;
}

/**
 * SPEC §8: REDIS_URL when set; else 127.0.0.1:6379 when something listens there; else a
 * private redis-server (AOF on, data under DATA_DIR/redis) on loopback port 6399.
 */
export async function locateRedis(lookup: RedisLookup): Promise<RedisLocation> {
  if (lookup.cluster) return { kind: "configured", url: describeRedisAddress(lookup.cluster), address: lookup.cluster };
  if (lookup.sentinel) return { kind: "configured", url: describeRedisAddress(lookup.sentinel), address: lookup.sentinel };
  if (lookup.redisUrl) return { kind: "configured", url: lookup.redisUrl, address: lookup.redisUrl };
  const defaultPort = lookup.defaultPort ?? 6379;
  if (await isListening("127.0.0.1", defaultPort)) return { kind: "default", url: `redis://127.0.0.1:${defaultPort}` };
  const port = lookup.embeddedPort ?? 6399;
  // A private server from an earlier run that is still up (e.g. another longhaul process).
  if (await isListening("127.0.0.1", port)) return { kind: "private-running", url: `redis://127.0.0.1:${port}` };
  const probe = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) return { kind: "none" };
  return { kind: "private-startable", port, dir: resolve(lookup.dataDir, "redis") };
}

/** The Redis settings of a configuration, as `locateRedis` reads them. */
export interface RedisSettings {
  REDIS_URL?: string | undefined;
  REDIS_SENTINELS?: string | undefined;
  REDIS_SENTINEL_MASTER?: string | undefined;
  REDIS_SENTINEL_PASSWORD?: string | undefined;
  REDIS_CLUSTER_NODES?: string | undefined;
  DATA_DIR: string;
}

/**
 * REDIS_SENTINELS (with REDIS_SENTINEL_MASTER, REDIS_SENTINEL_PASSWORD, and REDIS_URL's
 * user and password for the data nodes), else REDIS_URL, else nothing: look for one.
 */
export function redisLookupOf(config: RedisSettings): RedisLookup {
  const lookup: RedisLookup = { dataDir: config.DATA_DIR, ...(config.REDIS_URL ? { redisUrl: config.REDIS_URL } : {}) };
  if (config.REDIS_CLUSTER_NODES) {
    const auth = config.REDIS_URL ? new URL(config.REDIS_URL) : undefined;
    return {
      ...lookup,
      cluster: {
        kind: "cluster",
        nodes: parseHostPorts(config.REDIS_CLUSTER_NODES),
        ...(auth?.username ? { username: decodeURIComponent(auth.username) } : {}),
        ...(auth?.password ? { password: decodeURIComponent(auth.password) } : {}),
        ...(auth?.protocol === "rediss:" ? { tls: true } : {}),
      },
    };
  }
  if (!config.REDIS_SENTINELS) return lookup;
  if (!config.REDIS_SENTINEL_MASTER) throw new Error("REDIS_SENTINEL_MASTER is required with REDIS_SENTINELS");
  const auth = config.REDIS_URL ? new URL(config.REDIS_URL) : undefined;
  return {
    ...lookup,
    sentinel: {
      kind: "sentinel",
      sentinels: parseHostPorts(config.REDIS_SENTINELS),
      master: config.REDIS_SENTINEL_MASTER,
      ...(config.REDIS_SENTINEL_PASSWORD ? { sentinelPassword: config.REDIS_SENTINEL_PASSWORD } : {}),
      ...(auth?.username ? { username: decodeURIComponent(auth.username) } : {}),
      ...(auth?.password ? { password: decodeURIComponent(auth.password) } : {}),
    },
  };
}

export const NO_REDIS_FIX = "set REDIS_URL, start Redis on 127.0.0.1:6379, or install redis-server (apt-get install redis-server) so longhaul can run a private one";

/**
 * The Redis this process uses (`locateRedis`), starting the private redis-server when that is
 * the answer; it lives as long as this process.
 */
export async function resolveRedis(options: RedisLookup & { logger: Logger }): Promise<ResolvedRedis> {
  const location = await locateRedis(options);
  const keep = { stop: async () => undefined };
  switch (location.kind) {
    case "configured":
      return { address: location.address, url: location.url, explicit: true, ...keep };
    case "default":
      return { address: location.url, url: location.url, explicit: false, ...keep };
    case "private-running":
      options.logger.info({ url: location.url }, "embedded-redis-reused");
      return { address: location.url, url: location.url, explicit: false, ...keep };
    case "none":
      throw new Error(`No Redis: ${NO_REDIS_FIX}.`);
    case "private-startable":
      return startPrivateRedis(location.port, location.dir, options.logger);
  }
}

async function startPrivateRedis(port: number, dir: string, logger: Logger): Promise<ResolvedRedis> {
  mkdirSync(dir, { recursive: true });
  // AOF with an fsync every second: what docs/architecture.md promises ("Persistence").
  const child: ChildProcess = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction", "--save", ""],
    { stdio: "ignore" },
  );
  const deadline = Date.now() + 10_000;
  while (!(await isListening("127.0.0.1", port))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the private redis-server did not start (data dir ${dir})`);
    await new Promise((done) => setTimeout(done, 50));
  }
  logger.info({ port, dir }, "embedded-redis-started");
  return {
    address: `redis://127.0.0.1:${port}`,
    url: `redis://127.0.0.1:${port}`,
    explicit: false,
    stop: () => new Promise<void>((done) => {
      if (child.exitCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
    }),
  };
}
