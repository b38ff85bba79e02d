/**
 * Pipeline overhead: N sessions × M messages through ingress → queue → worker → fake LLM
 * (zero latency) → delivery, with one and with two worker processes; and, measured in the same
 * run, a bare two-hop BullMQ request → reply (a job on one queue whose processor adds a job on a
 * second queue) as the baseline. Each session is a closed loop: it sends its next message
 * when the previous one is answered, so latency is per message, not batched.
 *
 *   npx tsx bench/pipeline.ts [sessions=20] [messages=25]
 */
import { Queue, Worker } from "bullmq";
import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions } from "../src/adapters/channel-adapter.js";
import { loadConfig } from "../config/index.js";
import { startGateway } from "../src/gateway/gateway.js";
import { silentLogger } from "../src/logger.js";
import { createMetrics } from "../src/metrics.js";
import { createRedis } from "../src/queue/index.js";
import { startFakeLlm } from "../test/fakes/fake-llm.js";
import { spawnApp } from "../test/helpers/app-process.js";
import { startRedisServer } from "../test/helpers/redis-server.js";
import { buildForChildProcesses } from "../test/helpers/test-build.js";
import { isMain, percentile, table } from "./stats.js";

interface RunResult {
  label: string;
  messages: number;
  seconds: number;
  latencies: number[];
}

class BenchAdapter implements ChannelAdapter {
  readonly platform = "console" as const;
  ingress?: IngressPort;
  readonly #waiting = new Map<string, () => void>();
  async start(ingress: IngressPort) {
    this.ingress = ingress;
  }
  async send(reply: OutboundReply, options: SendOptions) {
    await options.onPartSent(0);
    for (const id of reply.inReplyTo) {
      this.#waiting.get(id)?.();
      this.#waiting.delete(id);
    }
  }
  answered(messageId: string) {
    return new Promise<void>((resolve) => this.#waiting.set(messageId, resolve));
  }
  async stop() {}
  isConnected() {
    return true;
  }
}

async function closedLoop(sessions: number, messages: number, roundTrip: (session: number, index: number) => Promise<void>): Promise<{ seconds: number; latencies: number[] }> {
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(Array.from({ length: sessions }, async (_, session) => {
    for (let index = 0; index < messages; index++) {
      const sentAt = performance.now();
      await roundTrip(session, index);
      latencies.push(performance.now() - sentAt);
    }
  }));
  return { seconds: (performance.now() - started) / 1_000, latencies };
}

async function runLonghaul(redisUrl: string, llmUrl: string, workers: number, sessions: number, messages: number): Promise<RunResult> {
  const prefix = `bench${workers}${Date.now().toString(36)}`;
  const env: Record<string, string> = {
    REDIS_URL: redisUrl, REDIS_PREFIX: prefix, LLM_BASE_URL: llmUrl, LLM_API_KEY: "bench", LOG_LEVEL: "info",
    HTTP_PORT: "0", CONSOLE: "off", RATE_LIMIT_PER_MINUTE: "0", WORKER_CONCURRENCY: "16",
  };
  const processes = Array.from({ length: workers }, () => spawnApp({ ...env, LONGHAUL_ROLE: "worker" }));
  await Promise.all(processes.map((worker) => worker.waitForStderr(/longhaul-ready/, 60_000)));
  const adapter = new BenchAdapter();
  const gateway = await startGateway({ config: loadConfig({ ...env, LONGHAUL_ROLE: "gateway" }), redisUrl, adapters: [adapter], logger: silentLogger, metrics: createMetrics() });
  try {
    // Warm-up: the first turn of each worker builds the tokenizer (~1.5 s), which is not pipeline overhead.
    await closedLoop(workers * 16, 1, async (session) => {
      const messageId = `warm-${session}`;
      const answered = adapter.answered(messageId);
      await adapter.ingress!.submit({ platform: "console", sessionKey: `console:warm${session}`, messageId, chatId: `warm${session}`, userId: "bench", userName: "bench", chatType: "private", text: "warm up", sentAt: Date.now() });
      await answered;
    });
    const result = await closedLoop(sessions, messages, async (session, index) => {
      const messageId = `b-${session}-${index}`;
      const answered = adapter.answered(messageId);
      await adapter.ingress!.submit({ platform: "console", sessionKey: `console:s${session}`, messageId, chatId: `s${session}`, userId: "bench", userName: "bench", chatType: "private", text: `message ${index}`, sentAt: Date.now() });
      await answered;
    });
    return { label: `longhaul, ${workers} worker process${workers > 1 ? "es" : ""}`, messages: sessions * messages, ...result };
  } finally {
    await gateway.close();
    await Promise.all(processes.map((worker) => worker.kill("SIGTERM")));
  }
}

async function runBaseline(redisUrl: string, sessions: number, messages: number): Promise<RunResult> {
  const prefix = `base${Date.now().toString(36)}`;
  const connection = createRedis(redisUrl);
  const requests = new Queue("requests", { connection, prefix });
  const replies = new Queue("replies", { connection, prefix });
  const waiting = new Map<string, () => void>();
  const workerConnections = [createRedis(redisUrl), createRedis(redisUrl)] as const;
  const first = new Worker("requests", async (job) => {
    await replies.add("reply", job.data as object, { removeOnComplete: true });
  }, { connection: workerConnections[0], prefix, concurrency: 16 });
  const second = new Worker("replies", async (job) => {
    const id = (job.data as { id: string }).id;
    waiting.get(id)?.();
    waiting.delete(id);
  }, { connection: workerConnections[1], prefix, concurrency: 16 });
  try {
    const result = await closedLoop(sessions, messages, async (session, index) => {
      const id = `${session}-${index}`;
      const done = new Promise<void>((resolve) => waiting.set(id, resolve));
      await requests.add("request", { id }, { removeOnComplete: true });
      await done;
    });
    return { label: "baseline: bare two-hop BullMQ", messages: sessions * messages, ...result };
  } finally {
    await first.close();
    await second.close();
    await requests.close();
    await replies.close();
    for (const worker of workerConnections) worker.disconnect();
    connection.disconnect();
  }
}

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const sessions = Number(args[0] ?? 20);
  const messages = Number(args[1] ?? 25);
  const build = buildForChildProcesses();
  const redis = await startRedisServer();
  const llm = await startFakeLlm();
  try {
    const results = [
      await runBaseline(redis.url, sessions, messages),
      await runLonghaul(redis.url, llm.url, 1, sessions, messages),
      await runLonghaul(redis.url, llm.url, 2, sessions, messages),
    ];
    const baselineP50 = percentile([...results[0]!.latencies].sort((a, b) => a - b), 50);
    const rows = results.map((result) => {
      const sorted = [...result.latencies].sort((a, b) => a - b);
      return [
        result.label, result.messages, result.messages / result.seconds,
        percentile(sorted, 50), percentile(sorted, 95), percentile(sorted, 99), percentile(sorted, 50) / baselineP50,
      ];
    });
    const output = `Pipeline: ${sessions} sessions × ${messages} messages, closed loop per session, fake LLM with zero latency\n\n` +
      table(["run", "messages", "turns/s", "p50 ms", "p95 ms", "p99 ms", "p50 / baseline p50"], rows);
    console.log(output);
    return output;
  } finally {
    await llm.close();
    await redis.dispose();
    build.remove();
  }
}

if (isMain(import.meta.url)) await main();
