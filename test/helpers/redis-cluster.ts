/**
 * A real Redis Cluster for tests: N cluster-enabled redis-servers on free loopback ports, joined
 * with `redis-cli --cluster create` (Debian's redis-tools), slots spread over the masters.
 * With `replicas: 1` each master gets one replica (failover tests).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { assertRedisServerInstalled, freePort } from "./redis-server.js";

export interface ClusterNode {
  port: number;
  dir: string;
  child: ChildProcess;
}

export interface RedisClusterHandle {
  nodes: ClusterNode[];
  /** `host:port,…` of every node, as REDIS_CLUSTER_NODES takes it. */
  nodeList: string;
  /** Runs redis-cli against one node and returns its output. */
  cli(port: number, ...args: string[]): string;
  dispose(): Promise<void>;
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`redis-server did not listen on ${port} within ${timeoutMs} ms`);
}

function cli(port: number, ...args: string[]): string {
  const run = spawnSync("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args], { encoding: "utf8", timeout: 60_000 });
  if (run.error) throw run.error;
  if (run.status !== 0) throw new Error(`redis-cli ${args.join(" ")}: ${run.stderr || run.stdout}`);
  return run.stdout;
}

export async function startRedisCluster(options: { masters?: number; replicas?: number } = {}): Promise<RedisClusterHandle> {
  assertRedisServerInstalled();
  const masters = options.masters ?? 3;
  const replicas = options.replicas ?? 0;
  const nodes: ClusterNode[] = [];
  for (let index = 0; index < masters * (1 + replicas); index++) {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "longhaul-cluster-"));
    const child = spawn("redis-server", [
      "--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "",
      "--appendonly", "yes", "--appendfsync", "everysec", "--maxmemory-policy", "noeviction", "--protected-mode", "no",
      "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
    ], { stdio: "ignore" });
    nodes.push({ port, dir, child });
  }
  const handle: RedisClusterHandle = {
    nodes,
    nodeList: nodes.map((node) => `127.0.0.1:${node.port}`).join(","),
    cli,
    dispose: async () => {
      await Promise.all(nodes.map((node) => new Promise<void>((resolve) => {
        if (node.child.exitCode !== null || node.child.signalCode !== null) return resolve();
        node.child.once("exit", () => resolve());
        node.child.kill("SIGCONT");
        node.child.kill("SIGKILL");
      })));
      for (const node of nodes) rmSync(node.dir, { recursive: true, force: true });
    },
  };
  try {
    await Promise.all(nodes.map((node) => waitForPort(node.port, 10_000)));
    cli(nodes[0]!.port, "--cluster", "create", ...nodes.map((node) => `127.0.0.1:${node.port}`), "--cluster-replicas", String(replicas), "--cluster-yes");
    // Every node must agree the slots are covered before a client may rely on the layout.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const states = nodes.map((node) => /cluster_state:ok/.test(cli(node.port, "CLUSTER", "INFO")));
      if (states.every(Boolean)) break;
      if (Date.now() > deadline) throw new Error("the test cluster did not reach cluster_state:ok");
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (error) {
    await handle.dispose();
    throw error;
  }
  return handle;
}
