import { afterEach, describe, expect, it } from "vitest";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { testConfig, testEnv } from "../helpers/config.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../helpers/recording-adapter.js";
import { createRedis } from "../../src/queue/index.js";
import { SessionStore } from "../../src/session/store.js";

describe("worker crash and shutdown", () => {
  let llm: FakeLlm | undefined;
  let pipeline: Pipeline | undefined;
  let workers: AppProcess[] = [];

  afterEach(async () => {
    await pipeline?.close();
    await Promise.all(workers.map((worker) => worker.kill("SIGKILL")));
    workers = [];
    await llm?.close();
  });

  async function setup(overrides: Record<string, string> = {}) {
    llm = await startFakeLlm();
    const env = testEnv({ LLM_BASE_URL: llm.url, JOB_LOCK_MS: "1500", LOG_LEVEL: "info", ...overrides });
    const adapter = new RecordingAdapter("console");
    pipeline = await startPipeline(testConfig({ ...env, LONGHAUL_ROLE: "gateway" }), [adapter], { worker: false });
    const startWorker = () => {
      const worker = spawnApp({ ...env, LONGHAUL_ROLE: "worker" });
      workers.push(worker);
      return worker;
    };
    return { env, adapter, startWorker, llm };
  }

  async function transcriptOf(prefix: string, sessionKey: string) {
    const redis = createRedis(testConfig().REDIS_URL!);
    try {
      return await new SessionStore(redis, prefix).readTranscript(sessionKey);
    } finally {
      redis.disconnect();
    }
  }

  it("finishes the turn of a worker killed with SIGKILL mid-turn on another worker, replying exactly once", async () => {
    const { env, adapter, startWorker, llm } = await setup();
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/);
    const gate = llm.hold();
    const message = inbound({ text: "survive this" });
    await adapter.submit(message);
    await llm.waitForRequests(1);
    expect(await first.kill("SIGKILL")).toBeNull();
    gate.release();

    const second = startWorker();
    await adapter.waitFor((sent) => sent.length >= 1, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(adapter.sent).toHaveLength(1);
    expect(adapter.sent[0]?.reply.text).toBe("echo: survive this");
    expect(second.stderr()).toContain("turn-committed");
    const transcript = await transcriptOf(env.REDIS_PREFIX!, message.sessionKey);
    expect(transcript.filter((entry) => entry.role === "user").map((entry) => entry.content)).toEqual(["survive this"]);
    expect(transcript.filter((entry) => entry.role === "assistant")).toHaveLength(1);
  });

  it("on SIGTERM hands a hanging turn back; another worker answers it once", async () => {
    const { env, adapter, startWorker, llm } = await setup({ SHUTDOWN_TIMEOUT_MS: "8000" });
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/);
    const gate = llm.hold();
    const message = inbound({ text: "finish me" });
    await adapter.submit(message);
    await llm.waitForRequests(1);
    const second = startWorker();
    await second.waitForStderr(/longhaul-ready/);
    expect(await first.kill("SIGTERM")).toBe(0);
    expect(first.stderr()).toContain("handing-back-running-turns");
    gate.release();

    await adapter.waitFor((sent) => sent.length >= 1, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(adapter.sent).toHaveLength(1);
    expect(adapter.sent[0]?.reply.text).toBe("echo: finish me");
    const transcript = await transcriptOf(env.REDIS_PREFIX!, message.sessionKey);
    expect(transcript.filter((entry) => entry.role === "user")).toHaveLength(1);
  });

  it("on SIGTERM lets a turn that finishes in time complete in the same worker", async () => {
    const { adapter, startWorker, llm } = await setup({ SHUTDOWN_TIMEOUT_MS: "8000" });
    llm.setHandler(() => ({ text: "done in time", delayMs: 800 }));
    const worker = startWorker();
    await worker.waitForStderr(/longhaul-ready/);
    await adapter.submit(inbound({ text: "quick one" }));
    await llm.waitForRequests(1);
    expect(await worker.kill("SIGTERM")).toBe(0);
    expect(worker.stderr()).toContain("turn-committed");
    expect(worker.stderr()).not.toContain("handing-back-running-turns");
    await adapter.waitFor((sent) => sent.length === 1);
    expect(adapter.sent[0]?.reply.text).toBe("done in time");
  });
});
