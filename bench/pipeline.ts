/**
 * Pipeline overhead: messages through ingress → queue → worker → LLM server (zero latency) →
 * delivery, with worker processes of the real build; and, measured in the same run on the same
 * redis-server, a bare two-hop BullMQ request → reply (a job on one queue whose processor adds
 * a job on a second queue) as the baseline.
 *
 * Two modes:
 * - closed loop (one and two worker processes): each of N sessions sends its next message when
 *   the previous one is answered; turns/s is the throughput, latency is per message;
 * - open loop (two worker processes): messages arrive at a fixed offered rate (default 100, 200
 *   and 400 per second for 20 s each, spread over `rate` sessions, one message per session per
 *   second), and latency runs from the message's scheduled arrival, so a backlog shows up as
 *   latency instead of slowing the sender down.
 *
 * Redis commands per turn: what Redis executed over the phase (INFO commandstats, the commands
 * scripts call included, BullMQ's own work too) per message, for the baseline as well.
 *
 * CPU per turn: the workers' (from /proc, user + system) and the gateway's (this process: the
 * gateway and the bench driver; the LLM server runs in a process of its own), over the measured
 * phase only.
 *
 *   npx tsx bench/pipeline.ts [sessions=20] [messages=25] [--rates=100,200,400] [--seconds=20]
 *                             [--mode=both|closed|open] [--cpu-prof=<dir>] [--loop-delay] [--llm=zero|fake]
 *                             [--worker-node-args="--max-semi-space-size=32 …"] [--stages]
 *
 * `--llm=zero` (the default) answers from bench/zero-llm.ts, which does the least a server can;
 * `--llm=fake` from the tests' strict fake (test/fakes/fake-llm.ts), which checks every request
 * against OpenAI's rules and costs ~1 ms per request.
 *
 * `--cpu-prof=<dir>` writes V8 CPU profiles of the worker processes there (run this process
 * itself with `node --cpu-prof --import tsx` to profile the gateway). `--loop-delay` adds the
 * event-loop delay (p99 and max) of this process and of the worst worker over each phase.
 *
 * `--stages` adds, per offered rate of the open loop, where a message's time goes: the time
 * between the points it passes (ingress, enqueued, picked, begun, …, sending; src/core/stages.ts).
 *
 * Latency ends when the reply reaches the adapter's `send` (what a platform would show); the
 * fenced record of the sent part follows it, as it does after a real platform's answer.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Queue, Worker } from "bullmq";
import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions } from "../src/adapters/channel-adapter.js";
import { loadConfig } from "../config/index.js";
import { startGateway } from "../src/gateway/gateway.js";
import { silentLogger } from "../src/logger.js";
import { createMetrics } from "../src/metrics.js";
import { createRedis } from "../src/queue/index.js";
import { spawnApp, type AppProcess } from "../test/helpers/app-process.js";
import { startRedisServer } from "../test/helpers/redis-server.js";
import { buildForChildProcesses } from "../test/helpers/test-build.js";
import { counted, LOOP_DELAY_PROBE, measured, type LoopDelay } from "./measure.js";
import { recordStages, stageProbe, stageTable, turnsOf } from "./stages.js";
import { isMain, percentile, table } from "./stats.js";

export interface RunResult {
  label: string;
  messages: number;
  seconds: number;
  latencies: number[];
  /** Offered rate (open loop), messages/s. */
  offered?: number;
  /** CPU ms per message: this process (gateway + driver) and all worker processes together. */
  gatewayCpuMs?: number;
  workerCpuMs?: number;
  /** `--loop-delay`: this process's (gateway + driver) and the worst worker's. */
  gatewayLoopDelay?: LoopDelay;
  workerLoopDelay?: LoopDelay;
  /** Commands Redis executed per message over the phase (scripts' inner commands included). */
  redisCommands?: number;
  /** `--stages`: the table of where the time went. */
  stages?: string;
}

class BenchAdapter implements ChannelAdapter {
  readonly platform = "console" as const;
  ingress?: IngressPort;
  readonly #waiting = new Map<string, () => void>();
  async start(ingress: IngressPort) {
    this.ingress = ingress;
  }
  /** The reply has reached the platform once `send` has it; recording the part is bookkeeping after that. */
  async send(reply: OutboundReply, options: SendOptions) {
    for (const id of reply.inReplyTo) {
      this.#waiting.get(id)?.();
      this.#waiting.delete(id);
    }
    await options.onPartSent(0, { last: true });
  }
  answered(messageId: string) {
    return new Promise<void>((resolve) => this.#waiting.set(messageId, resolve));
  }
  async stop() {}
  isConnected() {
    return true;
  }
}

type RoundTrip = (session: number, index: number) => Promise<void>;

async function closedLoop(sessions: number, messages: number, roundTrip: RoundTrip): Promise<{ seconds: number; latencies: number[] }> {
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

/**
 * Offers `rate` messages per second for `seconds`: message i is due at start + i / rate, over
 * `rate` sessions in turn. Latency is measured from when a message was due, not from when the
 * timer got round to sending it (no coordinated omission).
 */
async function openLoop(rate: number, seconds: number, roundTrip: RoundTrip): Promise<{ seconds: number; latencies: number[] }> {
  const total = Math.round(rate * seconds);
  const sessions = Math.max(1, Math.round(rate));
  const latencies: number[] = [];
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  let next = 0;
  while (next < total) {
    const now = performance.now();
    while (next < total && started + (next * 1_000) / rate <= now) {
      const due = started + (next * 1_000) / rate;
      const index = next++;
      inFlight.push(roundTrip(index % sessions, Math.floor(index / sessions)).then(() => {
        latencies.push(performance.now() - due);
      }));
    }
    if (next < total) await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + (next * 1_000) / rate - performance.now())));
  }
  await Promise.all(inFlight);
  return { seconds: (performance.now() - started) / 1_000, latencies };
}

export interface BenchPlan {
  sessions: number;
  messages: number;
  rates: number[];
  seconds: number;
  mode: "both" | "closed" | "open";
  cpuProfileDir?: string;
  /** Event-loop delay of the gateway and the workers over each measured phase. */
  loopDelay: boolean;
  /** The LLM server: zero-latency (bench/zero-llm.ts) or the tests' strict fake. */
  llm: "zero" | "fake";
  /** `--worker-node-args`: extra Node.js flags for the worker processes (e.g. GC settings). */
  workerNodeArgs: string[];
  /** `--stages`: where a message's time goes, per offered rate (bench/stages.ts). */
  stages: boolean;
}

async function withLonghaul<T>(redisUrl: string, llmUrl: string, workers: number, plan: BenchPlan, body: (roundTrip: RoundTrip, processes: readonly AppProcess[]) => Promise<T>, extraNodeArgs: string[] = []): Promise<T> {
  const prefix = `bench${workers}${Date.now().toString(36)}`;
  const env: Record<string, string> = {
    REDIS_URL: redisUrl, REDIS_PREFIX: prefix, LLM_BASE_URL: llmUrl, LLM_API_KEY: "bench", LOG_LEVEL: "info",
    HTTP_PORT: "0", CONSOLE: "off", RATE_LIMIT_PER_MINUTE: "0", WORKER_CONCURRENCY: "16",
  };
  const nodeArgs = [...plan.workerNodeArgs, ...extraNodeArgs, ...(plan.cpuProfileDir ? ["--cpu-prof", `--cpu-prof-dir=${plan.cpuProfileDir}`] : []), ...(plan.loopDelay ? ["--import", LOOP_DELAY_PROBE] : [])];
  const processes = Array.from({ length: workers }, () => spawnApp({ ...env, LONGHAUL_ROLE: "worker" }, { nodeArgs }));
  await Promise.all(processes.map((worker) => worker.waitForStderr(/longhaul-ready/, 240_000)));
  const adapter = new BenchAdapter();
  const gateway = await startGateway({ config: loadConfig({ ...env, LONGHAUL_ROLE: "gateway" }), redisAddress: redisUrl, adapters: [adapter], logger: silentLogger, metrics: createMetrics() });
  const roundTrip: RoundTrip = async (session, index) => {
    const messageId = `b-${session}-${index}`;
    const answered = adapter.answered(messageId);
    await adapter.ingress!.submit({ platform: "console", sessionKey: `console:s${session}`, messageId, chatId: `s${session}`, userId: "bench", userName: "bench", chatType: "private", text: `message ${index}`, sentAt: Date.now() });
    await answered;
  };
  try {
    // Warm-up (sessions of its own): the first turn of each worker builds the tokenizer (~1.5 s), which is not pipeline overhead.
    await closedLoop(workers * 16, 2, (session, index) => roundTrip(session + 1_000_000, index));
    return await body(roundTrip, processes);
  } finally {
    await gateway.close();
    // SIGTERM: a profiled worker writes its profile on the way out.
    await Promise.all(processes.map((worker) => worker.kill("SIGTERM")));
  }
}

async function longhaulRuns(redisUrl: string, llmUrl: string, plan: BenchPlan): Promise<RunResult[]> {
  const results: RunResult[] = [];
  if (plan.mode !== "open") {
    for (const workers of [1, 2]) {
      results.push(await withLonghaul(redisUrl, llmUrl, workers, plan, async (roundTrip, processes) => ({
        label: `longhaul, ${workers} worker process${workers > 1 ? "es" : ""}`,
        messages: plan.sessions * plan.messages,
        ...(await counted(redisUrl, () => measured(() => closedLoop(plan.sessions, plan.messages, roundTrip), processes, plan.loopDelay))),
      })));
    }
  }
  if (plan.mode !== "closed") {
    const stages = plan.stages ? recordStages() : undefined;
    const open = await withLonghaul(redisUrl, llmUrl, 2, plan, async (roundTrip, processes) => {
      const open: RunResult[] = [];
      for (const [runIndex, rate] of plan.rates.entries()) {
        // Each rate talks to sessions of its own.
        const tagged: RoundTrip = (session, index) => roundTrip(session + runIndex * 100_000, index);
        const result = await counted(redisUrl, () => measured(() => openLoop(rate, plan.seconds, tagged), processes, plan.loopDelay));
        open.push({ label: `longhaul, 2 worker processes, ${rate}/s offered`, messages: result.latencies.length, offered: rate, ...result });
      }
      return open;
    }, stages ? ["--import", stageProbe(stages.file)] : []);
    if (stages) {
      // The workers have exited: their marks are all written. Each rate's sessions are its own.
      const turns = turnsOf(stages.stop());
      const runOf = (sessionKey: string) => Math.floor(Number(sessionKey.slice("console:s".length)) / 100_000);
      for (const [runIndex, result] of open.entries()) {
        result.stages = stageTable(`Where the time goes at ${result.offered}/s offered`, turns.filter((turn) => runOf(turn.sessionKey) === runIndex));
      }
    }
    results.push(...open);
  }
  return results;
}

async function baselineRuns(redisUrl: string, plan: BenchPlan): Promise<RunResult[]> {
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
  let run = 0;
  const roundTrip: RoundTrip = async (session, index) => {
    const id = `${run}-${session}-${index}`;
    const done = new Promise<void>((resolve) => waiting.set(id, resolve));
    await requests.add("request", { id }, { removeOnComplete: true });
    await done;
  };
  const label = "baseline: bare two-hop BullMQ";
  try {
    const results: RunResult[] = [];
    if (plan.mode !== "open") results.push({ label, messages: plan.sessions * plan.messages, ...(await counted(redisUrl, () => closedLoop(plan.sessions, plan.messages, roundTrip))) });
    if (plan.mode !== "closed") {
      for (const rate of plan.rates) {
        run++;
        const result = await counted(redisUrl, () => openLoop(rate, plan.seconds, roundTrip));
        results.push({ label: `${label}, ${rate}/s offered`, messages: result.latencies.length, offered: rate, ...result });
      }
    }
    return results;
  } finally {
    await first.close();
    await second.close();
    await requests.close();
    await replies.close();
    for (const worker of workerConnections) worker.disconnect();
    connection.disconnect();
  }
}

/** The LLM server in its own process: bench/zero-llm.ts, or the tests' fake (bench/fake-llm-process.ts). */
export async function startLlmProcess(llm: BenchPlan["llm"]): Promise<{ url: string; close(): Promise<void> }> {
  const file = llm === "fake" ? "./fake-llm-process.ts" : "./zero-llm.ts";
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL(file, import.meta.url))], { stdio: ["pipe", "pipe", "pipe"] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("\n")) resolve(out.split("\n")[0]!.trim());
    });
    child.once("exit", (code) => reject(new Error(`fake LLM exited with ${code}`)));
  });
  return {
    url,
    close: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

export function parsePlan(args: readonly string[]): BenchPlan {
  const flags = new Map(args.filter((arg) => arg.startsWith("--")).map((arg) => {
    const at = arg.indexOf("=");
    return at < 0 ? [arg.slice(2), ""] as const : [arg.slice(2, at), arg.slice(at + 1)] as const;
  }));
  const positional = args.filter((arg) => !arg.startsWith("--"));
  const mode = flags.get("mode") ?? "both";
  if (mode !== "both" && mode !== "closed" && mode !== "open") throw new Error(`--mode must be both, closed or open, not ${mode}`);
  const cpuProfileDir = flags.get("cpu-prof");
  const llm = flags.get("llm") ?? "zero";
  if (llm !== "zero" && llm !== "fake") throw new Error(`--llm must be zero or fake, not ${llm}`);
  return {
    sessions: Number(positional[0] ?? 20),
    messages: Number(positional[1] ?? 25),
    rates: (flags.get("rates") ?? "100,200,400").split(",").map(Number).filter((rate) => rate > 0),
    seconds: Number(flags.get("seconds") ?? 20),
    mode,
    ...(cpuProfileDir ? { cpuProfileDir } : {}),
    loopDelay: flags.has("loop-delay"),
    llm,
    workerNodeArgs: (flags.get("worker-node-args") ?? "").split(" ").filter((arg) => arg !== ""),
    stages: flags.has("stages"),
  };
}

export function report(plan: BenchPlan, results: readonly RunResult[]): string {
  const sorted = (result: RunResult) => [...result.latencies].sort((a, b) => a - b);
  const baselineOf = (result: RunResult) => results.find((other) => other.label.startsWith("baseline") && other.offered === result.offered);
  const cpu = (value: number | undefined) => (value === undefined ? "" : value);
  const loopHeaders = plan.loopDelay ? ["gateway loop delay p99 / max ms", "worker loop delay p99 / max ms"] : [];
  const delay = (value: LoopDelay | undefined) => (value === undefined ? "" : `${value.p99.toFixed(1)} / ${value.max.toFixed(1)}`);
  const loop = (result: RunResult) => (plan.loopDelay ? [delay(result.gatewayLoopDelay), delay(result.workerLoopDelay)] : []);
  const parts: string[] = [];
  const closed = results.filter((result) => result.offered === undefined);
  if (closed.length > 0) {
    const baseline = sorted(baselineOf(closed[0]!)!);
    parts.push(`Closed loop: ${plan.sessions} sessions × ${plan.messages} messages, LLM server: ${plan.llm === "fake" ? "the tests' fake" : "zero latency"}\n\n` + table(
      ["run", "messages", "turns/s", "p50 ms", "p95 ms", "p99 ms", "max ms", "p50 / baseline", "p99 / baseline", "gateway CPU ms/turn", "worker CPU ms/turn", "Redis commands / turn", ...loopHeaders],
      closed.map((result) => {
        const latencies = sorted(result);
        return [result.label, result.messages, result.messages / result.seconds, percentile(latencies, 50), percentile(latencies, 95), percentile(latencies, 99), latencies[latencies.length - 1]!,
          percentile(latencies, 50) / percentile(baseline, 50), percentile(latencies, 99) / percentile(baseline, 99), cpu(result.gatewayCpuMs), cpu(result.workerCpuMs), cpu(result.redisCommands), ...loop(result)];
      }),
    ));
  }
  const open = results.filter((result) => result.offered !== undefined);
  if (open.length > 0) {
    parts.push(`Open loop: ${plan.seconds} s at each offered rate, latency from arrival, 2 worker processes\n\n` + table(
      ["run", "offered /s", "achieved /s", "p50 ms", "p95 ms", "p99 ms", "max ms", "p50 / baseline", "p99 / baseline", "gateway CPU ms/turn", "worker CPU ms/turn", "Redis commands / turn", ...loopHeaders],
      open.map((result) => {
        const latencies = sorted(result);
        const baseline = sorted(baselineOf(result)!);
        return [result.label, result.offered!, result.messages / result.seconds, percentile(latencies, 50), percentile(latencies, 95), percentile(latencies, 99), latencies[latencies.length - 1]!,
          percentile(latencies, 50) / percentile(baseline, 50), percentile(latencies, 99) / percentile(baseline, 99), cpu(result.gatewayCpuMs), cpu(result.workerCpuMs), cpu(result.redisCommands), ...loop(result)];
      }),
    ));
    for (const result of open) if (result.stages) parts.push(result.stages);
  }
  return parts.join("\n\n");
}

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const plan = parsePlan(args);
  const build = buildForChildProcesses();
  const redis = await startRedisServer();
  const llm = await startLlmProcess(plan.llm);
  try {
    const baseline = await baselineRuns(redis.url, plan);
    const longhaul = await longhaulRuns(redis.url, llm.url, plan);
    // Baseline first in each table, then longhaul in run order.
    const output = report(plan, [...baseline.filter((result) => result.offered === undefined), ...longhaul.filter((result) => result.offered === undefined),
      ...plan.rates.flatMap((rate) => [...baseline, ...longhaul].filter((result) => result.offered === rate))]);
    console.log(output);
    return output;
  } finally {
    await llm.close();
    await redis.dispose();
    build.remove();
  }
}

if (isMain(import.meta.url)) await main();
