/**
 * A real Redis Cluster for tests: N cluster-enabled redis-servers on free loopback ports, joined
 * with `redis-cli --cluster create` (Debian's redis-tools), slots spread over the masters.
 * With `replicas: 1` each master gets one replica (failover tests): the cluster is handed over
 * only once every replica finished its first sync (`master_link_status:up`) — a replica that
 * has not synced is never promoted, and a failover test would wait for nothing.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertRedisServerInstalled, freeClusterPort, ServerExitedError, waitForPort } from "./redis-server.js";

export interface ClusterNode {
  port: number;
  dir: string;
  /** The running process (undefined once killed and not started again). */
  readonly child: ChildProcess | undefined;
  /** Starts it again on its port with its files (nodes.conf, AOF): it rejoins the cluster. */
  start(): Promise<void>;
  /** SIGKILL: no goodbye, the connections drop at once. */
  kill(): Promise<void>;
  /** SIGSTOP: connections stay open, nothing is answered. */
  pause(): void;
  resume(): void;
  /** Paused and not resumed: the helper's own checks skip it rather than wait on it. */
  readonly paused: boolean;
}

export interface RedisClusterHandle {
  nodes: ClusterNode[];
  /** `host:port,…` of every node, as REDIS_CLUSTER_NODES takes it. */
  nodeList: string;
  /** cluster-node-timeout of every node: a master silent this long is failed over. */
  nodeTimeoutMs: number;
  /** Runs redis-cli against one node and returns its output (blocks this process: for quick reads in tests). */
  cli(port: number, ...args: string[]): string;
  /** The port of the master serving `key`'s slot, as every live node sees it. */
  masterOf(key: string): Promise<number>;
  /** The masters now (a live node that is a master serving slots). */
  masters(): Promise<number[]>;
  /**
   * Waits until every node that runs agrees: cluster_state:ok, every master with `replicas`
   * replicas whose link is up, and no node still flagged failing.
   */
  waitUntilHealthy(options?: { replicas?: number; timeoutMs?: number }): Promise<void>;
  /** Waits until the live nodes name a master other than `formerPort` for `key`'s slot; returns its port. */
  waitForFailover(key: string, formerPort: number, timeoutMs?: number): Promise<number>;
  /** Waits until every live node sees master `port` serve no slot (its replica took them over). */
  waitForFailoverOf(port: number, timeoutMs?: number): Promise<void>;
  dispose(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function cli(port: number, ...args: string[]): string {
  // A short timeout: a frozen node must not hang the test (callers skip nodes that fail).
  const run = spawnSync("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { encoding: "utf8", timeout: args[0] === "--cluster" ? 60_000 : 5_000 });
  if (run.error) throw run.error;
  if (run.status !== 0 || /^(ERR|Could not connect)/.test(run.stdout) || /Could not connect/.test(run.stderr)) throw new Error(`redis-cli -p ${port} ${args.join(" ")}: ${run.stderr || run.stdout}`);
  return run.stdout;
}

/**
 * redis-cli without blocking this process: the chaos driver and the tests host fake platforms
 * and the pipeline in this process, and a blocked event loop looks like a platform outage.
 */
function ask(port: number, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { encoding: "utf8", timeout: 10_000 }, (error, stdout, stderr) => {
      if (error) return reject(error);
      if (/^(ERR|Could not connect)/.test(stdout) || /Could not connect/.test(stderr)) return reject(new Error(`redis-cli -p ${port} ${args.join(" ")}: ${stderr || stdout}`));
      resolve(stdout);
    });
  });
}

function infoField(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(.*)$`, "m").exec(info)?.[1]?.trim();
}

interface NodeLine {
  port: number;
  flags: string[];
  masterId: string;
  id: string;
  linkState: string;
  slots: string[];
}

/** CLUSTER NODES as one node sees it. */
async function clusterNodes(port: number): Promise<NodeLine[]> {
  return (await ask(port, "CLUSTER", "NODES")).trim().split("\n").filter(Boolean).map((line) => {
    const [id, address, flags, masterId, , , , linkState, ...slots] = line.split(" ");
    return { id: id!, port: Number(address!.split("@")[0]!.split(":").pop()), flags: flags!.split(","), masterId: masterId!, linkState: linkState!, slots };
  });
}

export async function startRedisCluster(options: { masters?: number; replicas?: number; nodeTimeoutMs?: number } = {}): Promise<RedisClusterHandle> {
  assertRedisServerInstalled();
  const masterCount = options.masters ?? 3;
  const replicas = options.replicas ?? 0;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2_000;
  const nodes: ClusterNode[] = [];
  for (let index = 0; index < masterCount * (1 + replicas); index++) {
    let port = await freeClusterPort();
    let started = false;
    let startFailures = 0;
    const dir = mkdtempSync(join(tmpdir(), "longhaul-cluster-"));
    let child: ChildProcess | undefined;
    let paused = false;
    const exited = () => !child || child.exitCode !== null || child.signalCode !== null;
    nodes.push({
      get port() {
        return port;
      },
      dir,
      get child() {
        return child;
      },
      async start() {
        child = spawn("redis-server", [
          "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
          "--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction", "--protected-mode", "no",
          "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", String(nodeTimeoutMs),
          // A replica syncs at once rather than waiting to batch others (a restarted master rejoins fast).
          "--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
        ], { stdio: "ignore" });
        try {
          await waitForPort(port, 10_000, child);
          started = true;
        } catch (error) {
          // First start only: the free port (or its bus port) was taken meanwhile; take another.
          if (started || !(error instanceof ServerExitedError) || ++startFailures >= 5) throw error;
          port = await freeClusterPort();
          await this.start();
        }
      },
      async kill() {
        const running = child;
        child = undefined;
        paused = false;
        if (!running || running.exitCode !== null || running.signalCode !== null) return;
        await new Promise<void>((resolve) => {
          running.once("exit", () => resolve());
          running.kill("SIGCONT");
          running.kill("SIGKILL");
        });
      },
      get paused() {
        return paused && !exited();
      },
      pause: () => {
        if (exited()) return;
        paused = true;
        child!.kill("SIGSTOP");
      },
      resume: () => {
        paused = false;
        if (!exited()) child!.kill("SIGCONT");
      },
    });
  }
  /** What the running nodes say; a dead, frozen or silent node is skipped. */
  const answering = async (question: (port: number) => Promise<string>): Promise<Array<{ port: number; answer: string }>> => {
    const answers = await Promise.all(nodes.map(async (node) => {
      if (!node.child || node.paused) return [];
      try {
        return [{ port: node.port, answer: await question(node.port) }];
      } catch {
        return [];
      }
    }));
    return answers.flat();
  };
  const handle: RedisClusterHandle = {
    nodes,
    get nodeList() {
      return nodes.map((node) => `127.0.0.1:${node.port}`).join(",");
    },
    nodeTimeoutMs,
    cli,
    async masterOf(key) {
      const slot = Number((await ask(nodes.find((node) => node.child && !node.paused)!.port, "CLUSTER", "KEYSLOT", key)).trim());
      const serves = (line: NodeLine) => line.slots.some((range) => {
        const [from, to = from] = range.split("-").map(Number);
        return slot >= from! && slot <= to!;
      });
      // Every live node's view must agree, so a test does not act on one node's stale view.
      const named = await answering(async (port) => String((await clusterNodes(port)).find((line) => line.flags.includes("master") && !line.flags.includes("fail") && serves(line))?.port ?? ""));
      const ports = new Set(named.map(({ answer }) => answer));
      const [only] = [...ports];
      if (ports.size !== 1 || !only) throw new Error(`the live nodes do not agree on the master of ${key} (slot ${slot}): ${[...ports].join(", ")}`);
      return Number(only);
    },
    async masters() {
      const answers = await answering(async (port) => {
        const mine = (await clusterNodes(port)).find((line) => line.flags.includes("myself"));
        return mine && mine.flags.includes("master") && mine.slots.length > 0 ? "yes" : "";
      });
      return answers.filter(({ answer }) => answer === "yes").map(({ port }) => port);
    },
    async waitUntilHealthy({ replicas: wanted = replicas, timeoutMs = 60_000 } = {}) {
      const deadline = Date.now() + timeoutMs;
      const check = async (): Promise<string> => {
        const running = nodes.filter((node) => node.child && !node.paused);
        const states = await answering((port) => ask(port, "CLUSTER", "INFO"));
        if (states.length < running.length) return `${running.length - states.length} running node(s) do not answer`;
        if (!states.every(({ answer }) => /cluster_state:ok/.test(answer))) return "cluster_state is not ok on every node";
        const views = await answering(async (port) => JSON.stringify(await clusterNodes(port)));
        for (const { port, answer } of views) {
          const lines = JSON.parse(answer) as NodeLine[];
          const failing = lines.filter((line) => line.flags.some((flag) => flag === "fail" || flag === "fail?") && running.some((node) => node.port === line.port));
          if (failing.length > 0) return `node ${port} still flags ${failing.map((line) => line.port).join(",")} failing`;
        }
        const replication = await answering((port) => ask(port, "INFO", "replication"));
        for (const { port, answer } of replication) {
          if (infoField(answer, "role") === "slave" && infoField(answer, "master_link_status") !== "up") return `replica ${port}: link to its master not up`;
        }
        for (const { port, answer } of replication.filter((each) => infoField(each.answer, "role") === "master")) {
          const online = answer.split(/\r?\n/).filter((line) => /^slave\d+:.*state=online/.test(line)).length;
          const own = JSON.parse(views.find((view) => view.port === port)?.answer ?? "[]") as NodeLine[];
          const serving = (own.find((line) => line.flags.includes("myself"))?.slots.length ?? 0) > 0;
          if (serving && online < wanted) return `master ${port}: ${online} of ${wanted} replicas online`;
        }
        return "";
      };
      for (;;) {
        const why = await check();
        if (!why) return;
        if (Date.now() > deadline) throw new Error(`the test cluster is not healthy after ${timeoutMs} ms: ${why}`);
        await sleep(100);
      }
    },
    async waitForFailover(key, formerPort, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const now = await handle.masterOf(key).catch(() => undefined);
        if (now !== undefined && now !== formerPort) return now;
        if (Date.now() > deadline) throw new Error(`no failover of ${key}'s master ${formerPort} within ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    async waitForFailoverOf(port, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        // Every live node sees another master serve the slots `port` served.
        const views = await answering(async (asked) => JSON.stringify(await clusterNodes(asked)));
        const settled = views.length > 0 && views.every(({ answer }) => {
          const lines = JSON.parse(answer) as NodeLine[];
          const former = lines.find((line) => line.port === port);
          return former !== undefined && !(former.flags.includes("master") && former.slots.length > 0);
        });
        if (settled) return;
        if (Date.now() > deadline) throw new Error(`no failover of master ${port} within ${timeoutMs} ms`);
        await sleep(100);
      }
    },
    dispose: async () => {
      // Survives any node state: dead, frozen, restarted.
      await Promise.all(nodes.map((node) => node.kill()));
      for (const node of nodes) rmSync(node.dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((node) => node.start()));
    cli(nodes[0]!.port, "--cluster", "create", ...nodes.map((node) => `127.0.0.1:${node.port}`), "--cluster-replicas", String(replicas), "--cluster-yes");
    // Every node must agree the slots are covered, and every replica hold its master's data,
    // before a client may rely on the layout or a test on a failover.
    await handle.waitUntilHealthy({ replicas, timeoutMs: 60_000 });
  } catch (error) {
    await handle.dispose();
    throw error;
  }
  return handle;
}
