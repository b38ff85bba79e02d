/**
 * A real Redis Sentinel setup for tests, from Debian's redis-server binary: a master, two
 * replicas and three sentinels (`redis-server sentinel.conf --sentinel`, what the
 * redis-sentinel package runs), each on a free loopback port with its files in a temp
 * directory. Sentinel timings are small (down after 1 s) so a failover takes seconds.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { assertRedisServerInstalled, freePort } from "./redis-server.js";

export const SENTINEL_MASTER = "lhmaster";
export const DOWN_AFTER_MS = 1_000;

export interface RedisNode {
  port: number;
  /** The process (undefined once killed and not started again). */
  readonly child: ChildProcess | undefined;
  start(): Promise<void>;
  /** SIGKILL: no goodbye, the connections drop at once. */
  kill(): Promise<void>;
  /** SIGSTOP: connections stay open, nothing is answered. */
  pause(): void;
  resume(): void;
}

export interface SentinelSetup {
  /** REDIS_SENTINELS for the configuration. */
  sentinels: string;
  master: string;
  nodes: RedisNode[];
  sentinelNodes: RedisNode[];
  /** The master's port, as the sentinels report it now. */
  masterPort(): Promise<number>;
  nodeAt(port: number): RedisNode;
  /** Waits until every sentinel reports a master other than `formerPort`; returns its port. */
  waitForFailover(formerPort: number, timeoutMs?: number): Promise<number>;
  /** Waits until the master has `count` replicas online (INFO replication). */
  waitForReplicas(count: number, timeoutMs?: number): Promise<void>;
  dispose(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitUntilAnswers(port: number, timeoutMs: number, password?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis({ port, host: "127.0.0.1", lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0, enableOfflineQueue: false, ...(password ? { password } : {}) });
    client.on("error", () => undefined);
    try {
      await client.connect();
      await client.ping();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`nothing answered on ${port} within ${timeoutMs} ms: ${String(error)}`);
    } finally {
      client.disconnect();
    }
    await sleep(50);
  }
}

function node(port: number, args: () => string[], password?: string): RedisNode {
  let child: ChildProcess | undefined;
  return {
    port,
    get child() {
      return child;
    },
    async start() {
      child = spawn("redis-server", args(), { stdio: "ignore" });
      await waitUntilAnswers(port, 15_000, password);
    },
    async kill() {
      const running = child;
      child = undefined;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        running.once("exit", () => resolve());
        running.kill("SIGKILL");
      });
    },
    pause: () => child?.kill("SIGSTOP"),
    resume: () => child?.kill("SIGCONT"),
  };
}

/** Asks one sentinel for a command's answer on a short-lived connection. */
async function askSentinel<T>(port: number, ask: (client: Redis) => Promise<T>, password?: string): Promise<T> {
  const client = new Redis({ port, host: "127.0.0.1", retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 2_000, commandTimeout: 2_000, ...(password ? { password } : {}) });
  client.on("error", () => undefined);
  try {
    return await ask(client);
  } finally {
    client.disconnect();
  }
}

async function reportedMasterPort(port: number, password?: string): Promise<number | undefined> {
  const reply = (await askSentinel(port, (client) => client.call("SENTINEL", "get-master-addr-by-name", SENTINEL_MASTER), password).catch(() => null)) as [string, string] | null;
  return reply ? Number(reply[1]) : undefined;
}

/**
 * `password`: the data nodes' requirepass (replicas and sentinels given it as masterauth and
 * auth-pass); `sentinelPassword`: the sentinels' own requirepass (each other's sentinel-pass).
 */
export async function startSentinelSetup(options: { replicas?: number; password?: string; sentinelPassword?: string } = {}): Promise<SentinelSetup> {
  const { password, sentinelPassword } = options;
  assertRedisServerInstalled();
  const dir = mkdtempSync(join(tmpdir(), "longhaul-sentinel-"));
  const dataPorts = await Promise.all(Array.from({ length: 1 + (options.replicas ?? 2) }, () => freePort()));
  const sentinelPorts = await Promise.all([0, 1, 2].map(() => freePort()));
  const masterPort = dataPorts[0]!;

  const dataArgs = (port: number, replicaOf?: number) => () => [
    "--port", String(port), "--bind", "127.0.0.1", "--protected-mode", "no",
    "--dir", dir, "--dbfilename", `dump-${port}.rdb`, "--appendfilename", `aof-${port}.aof`, "--appenddirname", `aof-${port}`,
    "--save", "", "--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction",
    // A replica that rejoins syncs at once instead of waiting for more replicas to batch.
    "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
    ...(replicaOf === undefined ? [] : ["--replicaof", "127.0.0.1", String(replicaOf)]),
    ...(password ? ["--requirepass", password, "--masterauth", password] : []),
  ];
  const nodes = dataPorts.map((port, index) => node(port, dataArgs(port, index === 0 ? undefined : masterPort), password));
  const sentinelNodes = sentinelPorts.map((port) => {
    // Sentinels rewrite their file (known replicas, epochs): one writable file each.
    const file = join(dir, `sentinel-${port}.conf`);
    writeFileSync(file, [
      `port ${port}`, "bind 127.0.0.1", "protected-mode no", `dir ${dir}`,
      `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${masterPort} 2`,
      `sentinel down-after-milliseconds ${SENTINEL_MASTER} ${DOWN_AFTER_MS}`,
      `sentinel failover-timeout ${SENTINEL_MASTER} 5000`,
      `sentinel parallel-syncs ${SENTINEL_MASTER} 2`,
      ...(password ? [`sentinel auth-pass ${SENTINEL_MASTER} ${password}`] : []),
      ...(sentinelPassword ? [`requirepass ${sentinelPassword}`, `sentinel sentinel-pass ${sentinelPassword}`] : []),
      "",
    ].join("\n"));
    return node(port, () => [file, "--sentinel"], sentinelPassword);
  });

  const all = [...nodes, ...sentinelNodes];
  const setup: SentinelSetup = {
    sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(","),
    master: SENTINEL_MASTER,
    nodes,
    sentinelNodes,
    async masterPort() {
      for (const port of sentinelPorts) {
        const reported = await reportedMasterPort(port, sentinelPassword);
        if (reported !== undefined) return reported;
      }
      throw new Error("no sentinel answered");
    },
    nodeAt(port) {
      const found = nodes.find((candidate) => candidate.port === port);
      if (!found) throw new Error(`no data node on ${port}`);
      return found;
    },
    async waitForFailover(formerPort, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const reported = await Promise.all(sentinelPorts.map((port) => reportedMasterPort(port, sentinelPassword)));
        const first = reported[0];
        if (first !== undefined && first !== formerPort && reported.every((port) => port === first)) return first;
        if (Date.now() > deadline) throw new Error(`no failover from ${formerPort} within ${timeoutMs} ms (sentinels report ${reported.join(", ")})`);
        await sleep(100);
      }
    },
    async waitForReplicas(count, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const port = await setup.masterPort();
        const info = await askSentinel(port, (client) => client.info("replication"), password).catch(() => "");
        const online = info.split(/\r?\n/).filter((line) => /^slave\d+:.*state=online/.test(line)).length;
        if (/role:master/.test(info) && online >= count) return;
        if (Date.now() > deadline) throw new Error(`the master on ${port} has ${online} of ${count} replicas online after ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    async dispose() {
      for (const each of all) each.resume();
      await Promise.all(all.map((each) => each.kill()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await nodes[0]!.start();
    await Promise.all(nodes.slice(1).map((each) => each.start()));
    await Promise.all(sentinelNodes.map((each) => each.start()));
    await setup.waitForReplicas(nodes.length - 1);
    // Every sentinel has found the other two (they vote on failovers) and the replicas.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const known = await Promise.all(sentinelPorts.map((port) => askSentinel(port, (client) => client.call("SENTINEL", "master", SENTINEL_MASTER), sentinelPassword).catch(() => [])));
      const field = (reply: unknown, name: string) => {
        const list = reply as string[];
        const at = list.indexOf(name);
        return at >= 0 ? Number(list[at + 1]) : 0;
      };
      if (known.every((reply) => field(reply, "num-other-sentinels") === 2 && field(reply, "num-slaves") === nodes.length - 1)) break;
      if (Date.now() > deadline) throw new Error("the sentinels did not discover each other within 30 s");
      await sleep(100);
    }
  } catch (error) {
    await setup.dispose();
    throw error;
  }
  return setup;
}
