import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync } from "node:fs";
import { connect } from "node:net";
import { resolve } from "node:path";
import type { Logger } from "./logger.js";

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
  url: string;
  /** REDIS_URL named this Redis: the operator chose it, so an unmarked one may be used (doctor/redis.ts). */
  explicit: boolean;
  /** Stops the private redis-server, if one was started. */
  stop(): Promise<void>;
}

/** Where `resolveRedis` would find Redis, without starting anything (for the doctor). */
export type RedisLocation =
  | { kind: "configured"; url: string }
  | { kind: "default"; url: string }
  | { kind: "private-running"; url: string }
  | { kind: "private-startable"; port: number; dir: string }
  | { kind: "none" };

export interface RedisLookup {
  redisUrl?: string;
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
  if (lookup.redisUrl) return { kind: "configured", url: lookup.redisUrl };
  const defaultPort = lookup.defaultPort ?? 6379;
  if (await isListening("127.0.0.1", defaultPort)) return { kind: "default", url: `redis://127.0.0.1:${defaultPort}` };
  const port = lookup.embeddedPort ?? 6399;
  // A private server from an earlier run that is still up (e.g. another longhaul process).
  if (await isListening("127.0.0.1", port)) return { kind: "private-running", url: `redis://127.0.0.1:${port}` };
  const probe = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) return { kind: "none" };
  return { kind: "private-startable", port, dir: resolve(lookup.dataDir, "redis") };
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
      return { url: location.url, explicit: true, ...keep };
    case "default":
      return { url: location.url, explicit: false, ...keep };
    case "private-running":
      options.logger.info({ url: location.url }, "embedded-redis-reused");
      return { url: location.url, explicit: false, ...keep };
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
    url: `redis://127.0.0.1:${port}`,
    explicit: false,
    stop: () => new Promise<void>((done) => {
      if (child.exitCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
    }),
  };
}
