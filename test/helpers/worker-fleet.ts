/**
 * The shape of every cross-process test: the fake LLM, the real gateway in this process around
 * a RecordingAdapter, and worker processes started (and killed) as the test needs them.
 */
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { createRedis } from "../../src/queue/index.js";
import { SessionStore } from "../../src/session/store.js";
import { spawnApp, type AppProcess } from "./app-process.js";
import { testConfig, testEnv } from "./config.js";
import { startPipeline, type Pipeline } from "./pipeline.js";
import { RecordingAdapter } from "./recording-adapter.js";

export interface WorkerFleet {
  llm: FakeLlm;
  env: Record<string, string>;
  adapter: RecordingAdapter;
  pipeline: Pipeline;
  /** Starts one more worker process with the fleet's environment (plus `extraEnv`). */
  startWorker(extraEnv?: Record<string, string>): AppProcess;
  /** Reads a session the way a worker would, with a connection of its own. */
  withStore<T>(use: (store: SessionStore) => Promise<T>): Promise<T>;
  /** Stops the gateway, kills every worker, closes the fake LLM. */
  close(): Promise<void>;
}

export async function startWorkerFleet(overrides: Record<string, string> = {}): Promise<WorkerFleet> {
  const llm = await startFakeLlm();
  const env = testEnv({ LLM_BASE_URL: llm.url, LOG_LEVEL: "info", ...overrides });
  const adapter = new RecordingAdapter("console");
  const pipeline = await startPipeline(testConfig({ ...env, LONGHAUL_ROLE: "gateway" }), [adapter], { worker: false });
  const workers: AppProcess[] = [];
  return {
    llm,
    env,
    adapter,
    pipeline,
    startWorker(extraEnv = {}) {
      const worker = spawnApp({ ...env, LONGHAUL_ROLE: "worker", ...extraEnv });
      workers.push(worker);
      return worker;
    },
    async withStore(use) {
      const redis = createRedis(env.REDIS_URL!);
      try {
        return await use(new SessionStore(redis, env.REDIS_PREFIX!));
      } finally {
        redis.disconnect();
      }
    },
    async close() {
      await pipeline.close();
      await Promise.all(workers.map((worker) => worker.kill("SIGKILL")));
      await llm.close();
    },
  };
}
