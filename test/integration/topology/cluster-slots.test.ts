/**
 * Is the key layout Cluster-shaped? The pipeline runs a chat on one Redis while MONITOR records
 * every command any connection sends (BullMQ's included); a real cluster-enabled redis-server
 * says which keys each command touches (COMMAND GETKEYS) and in which slot each lands
 * (CLUSTER KEYSLOT). A Lua script or a MULTI that touches two slots fails on a Cluster
 * (CROSSSLOT), so every one that touches a session's keys must stay in that session's slot.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { freePort, startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";

interface Atomic {
  /** The script's or the transaction's commands, as sent. */
  commands: string[][];
  keys: string[];
}

describe("Cluster shape of the key layout, measured on a chat on one Redis (test/integration/topology/cluster.test.ts runs it on a real Cluster)", () => {
  let redis: RedisServerHandle;
  let judge: { child: ChildProcess; client: Redis; dir: string };
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const atomics: Atomic[] = [];
  const adapter = new RecordingAdapter("console");

  beforeAll(async () => {
    redis = await startRedisServer();
    // A cluster-enabled node that never joins a cluster still answers CLUSTER KEYSLOT.
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), "longhaul-slots-"));
    const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"], { stdio: "ignore" });
    const client = createRedis(`redis://127.0.0.1:${port}`, { maxRetriesPerRequest: 5 });
    client.on("error", () => undefined);
    await client.ping();
    judge = { child, client, dir };

    const monitor = await createRedis(redis.url).monitor();
    const open = new Map<string, string[][]>();
    monitor.on("monitor", (_time: string, args: string[], source: string) => {
      if (source === "lua") return; // commands a script runs: judged as the script
      const name = args[0]?.toUpperCase();
      if (name === "MULTI") open.set(source, []);
      else if (name === "EXEC") {
        const commands = open.get(source);
        open.delete(source);
        if (commands && commands.length > 0) atomics.push({ commands, keys: [] });
      } else if (open.has(source)) open.get(source)!.push(args);
      else if (name === "EVALSHA" || name === "EVAL" || name === "FCALL") atomics.push({ commands: [args], keys: [] });
    });

    llm = await startFakeLlm();
    pipeline = await startPipeline(testConfig({ REDIS_URL: redis.url, LLM_BASE_URL: llm.url }), [adapter]);
    for (const [chat, text] of [["a", "hello"], ["b", "hi"], ["a", "how are you"], ["a", "/new"], ["b", "/status"]] as const) {
      await adapter.ask(inbound({ chatId: chat, text }), 60_000);
    }
    await pipeline.close();
    monitor.disconnect();
    for (const atomic of atomics) {
      for (const command of atomic.commands) {
        const keys = (await judge.client.call("COMMAND", "GETKEYS", ...command).catch(() => [])) as string[];
        atomic.keys.push(...keys);
      }
    }
  }, 180_000);

  afterAll(async () => {
    judge?.client.disconnect();
    judge?.child.kill("SIGKILL");
    if (judge) rmSync(judge.dir, { recursive: true, force: true });
    await llm?.close();
    await redis?.dispose();
  });

  const slotsOf = async (keys: string[]) => new Set(await Promise.all(keys.map(async (key) => Number(await judge.client.cluster("KEYSLOT", key)))));

  it("every script and transaction that touches a session's keys stays in that session's slot", async () => {
    const session = atomics.filter((atomic) => atomic.keys.some((key) => /:\{[^}]+\}:/.test(key)));
    // Not vacuous: the turns' scripts (begin, end, deliver) and the ingress' append were seen.
    expect(session.length).toBeGreaterThanOrEqual(10);
    const crossing: string[] = [];
    for (const atomic of session) {
      if ((await slotsOf(atomic.keys)).size > 1) crossing.push(`${atomic.commands.map((command) => command[0]).join(",")}: ${atomic.keys.join(" ")}`);
    }
    expect(crossing).toEqual([]);
  });

  it("so do the deployment-wide ones of ours; only BullMQ's queue scripts cross slots on one Redis (on a Cluster each queue gets its hash tag: queuePrefix)", async () => {
    const queueKey = /^[A-Za-z0-9_-]+:(turns|deliveries-[a-z]+|schedule|idle-compactions):/;
    const ours = atomics.filter((atomic) => !atomic.keys.every((key) => queueKey.test(key)));
    const queues = atomics.filter((atomic) => atomic.keys.length > 0 && atomic.keys.every((key) => queueKey.test(key)));
    expect(queues.length).toBeGreaterThan(0);
    const crossing: string[] = [];
    for (const atomic of ours) {
      if ((await slotsOf(atomic.keys)).size > 1) crossing.push(`${atomic.commands.map((command) => command[0]).join(",")}: ${atomic.keys.join(" ")}`);
    }
    expect(crossing).toEqual([]);
  });
});
