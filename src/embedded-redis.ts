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
  /** Stops the private redis-server, if one was started. */
  stop(): Promise<void>;
}

/**
 * SPEC §8: REDIS_URL when set; else 127.0.0.1:6379 when something listens there; else a
 * private redis-server (AOF on, data under DATA_DIR/redis) that lives as long as this process.
 * The private server listens on loopback port 6399.
 */
export async function resolveRedis(options: {
  redisUrl?: string;
  dataDir: string;
  logger: Logger;
  /** The default Redis port probed when REDIS_URL is unset (tests move it). */
  defaultPort?: number;
  /** Where the private server listens. */
  embeddedPort?: number;
}): Promise<ResolvedRedis> {
  if (options.redisUrl) return { url: options.redisUrl, stop: async () => undefined };
  const defaultPort = options.defaultPort ?? 6379;
  if (await isListening("127.0.0.1", defaultPort)) return { url: `redis://127.0.0.1:${defaultPort}`, stop: async () => undefined };

  const probe = spawnSync("redis-server", ["--version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    throw new Error("No Redis: set REDIS_URL, start Redis on 127.0.0.1:6379, or install redis-server (apt-get install redis-server) so longhaul can run a private one.");
  }
  const dir = resolve(options.dataDir, "redis");
  mkdirSync(dir, { recursive: true });
  const port = options.embeddedPort ?? 6399;
  if (await isListening("127.0.0.1", port)) {
    // A private server from an earlier run that is still up (e.g. another longhaul process).
    options.logger.info({ port }, "embedded-redis-reused");
    return { url: `redis://127.0.0.1:${port}`, stop: async () => undefined };
  }
  const child: ChildProcess = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--appendonly", "yes", "--maxmemory-policy", "noeviction", "--save", ""],
    { stdio: "ignore" },
  );
  const deadline = Date.now() + 10_000;
  while (!(await isListening("127.0.0.1", port))) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the private redis-server did not start (data dir ${dir})`);
    await new Promise((done) => setTimeout(done, 50));
  }
  options.logger.info({ port, dir }, "embedded-redis-started");
  return {
    url: `redis://127.0.0.1:${port}`,
    stop: () => new Promise<void>((done) => {
      if (child.exitCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
    }),
  };
}
