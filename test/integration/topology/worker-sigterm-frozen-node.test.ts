/**
 * A worker process told to stop (SIGTERM) while one Cluster master is frozen (SIGSTOP): the
 * master holding the schedule and idle-compaction queues, not the turns queue nor the chat's
 * session. The turn it runs (held at the model) must be handed back at the hand-back time
 * (SHUTDOWN_TIMEOUT_MS / 2) and answered once by the other worker. Before, the schedule and idle
 * workers closed first, one after the other, waiting on the frozen master (4 and 2 s measured):
 * the turn worker's close — and its hand-back clock — started after 6 s, and the hard exit at
 * 10 s came before the hand-back.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDLE_QUEUE, SCHEDULE_QUEUE, TURN_QUEUE } from "../../../src/queue/index.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "../../helpers/app-process.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { startRedisCluster, type ClusterNode, type RedisClusterHandle } from "../../helpers/redis-cluster.js";

const SHUTDOWN_TIMEOUT_MS = 10_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const START_MS = 90_000;

describe("Redis Cluster: SIGTERM to a worker while a master is frozen", () => {
  let cluster: RedisClusterHandle;
  let llm: FakeLlm;
  let pipeline: Pipeline | undefined;
  const workers: AppProcess[] = [];
  let frozen: ClusterNode | undefined;
  const adapter = new RecordingAdapter("console");

  beforeAll(async () => {
    cluster = await startRedisCluster({ replicas: 1, nodeTimeoutMs: 1_000 });
    llm = await startFakeLlm();
  }, 180_000);

  afterAll(async () => {
    frozen?.resume();
    await pipeline?.close();
    await Promise.all(workers.map((worker) => worker.kill("SIGKILL")));
    await llm?.close();
    await cluster?.dispose();
  }, 60_000);

  it("hands the running turn back before the hard exit; the other worker answers it once", async () => {
    const scheduleMaster = await cluster.masterOf(`{${SCHEDULE_QUEUE}}`);
    // The setup this test stands on: the turns queue elsewhere, the idle queue on the same node.
    expect(await cluster.masterOf(`{${TURN_QUEUE}}`)).not.toBe(scheduleMaster);
    expect(await cluster.masterOf(`{${IDLE_QUEUE}}`)).toBe(scheduleMaster);
    let chatId = "";
    for (let candidate = 0; !chatId; candidate++) {
      if ((await cluster.masterOf(`console:s${candidate}`)) !== scheduleMaster) chatId = `s${candidate}`;
    }

    const env = testEnv({
      REDIS_URL: "redis://127.0.0.1:1", REDIS_CLUSTER_NODES: cluster.nodeList, LLM_BASE_URL: llm.url,
      SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), LLM_TIMEOUT_MS: "150000", LOG_LEVEL: "info",
    });
    pipeline = await startPipeline(testConfig({ ...env, LONGHAUL_ROLE: "gateway" }), [adapter], { worker: false });
    const first = spawnApp({ ...env, LONGHAUL_ROLE: "worker" });
    workers.push(first);
    await first.waitForStderr(/longhaul-ready/, START_MS);
    const gate = llm.hold();
    await adapter.submit(inbound({ chatId, text: "hand me back" }));
    await llm.waitForRequests(1, 60_000);
    const second = spawnApp({ ...env, LONGHAUL_ROLE: "worker" });
    workers.push(second);
    await second.waitForStderr(/longhaul-ready/, START_MS);

    frozen = cluster.nodes.find((node) => node.port === scheduleMaster);
    frozen!.pause();
    const signalledAt = Date.now();
    const exitCode = await first.kill("SIGTERM");
    const tookMs = Date.now() - signalledAt;
    // Handed back at SHUTDOWN_TIMEOUT_MS / 2. What closes after the turns (the schedule and idle
    // workers, the queues) may still wait on the frozen master until its failover: that is left
    // to the hard exit, which comes after the hand-back now.
    expect(first.stderr()).toContain("handing-back-running-turns");
    expect(tookMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 2_000);
    expect([0, 1]).toContain(exitCode);
    gate.release();

    await adapter.waitFor((sent) => sent.length >= 1, 60_000);
    await sleep(1_000);
    expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(["echo: hand me back"]);
  }, 300_000);
});
