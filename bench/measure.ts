/**
 * What bench/pipeline.ts measures besides latency, over one phase: CPU per message of this
 * process and of the workers (/proc), the commands Redis executed (INFO commandstats), and with
 * `--loop-delay` the event-loop delay of this process and of the worst worker.
 */
import { readFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createRedis } from "../src/queue/index.js";
import type { AppProcess } from "../test/helpers/app-process.js";

/** Event-loop delay over a measured phase (monitorEventLoopDelay), ms. */
export interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

/**
 * `--loop-delay`: every worker process samples its event-loop delay (10 ms resolution); SIGUSR2
 * prints what it saw since the last SIGUSR2 to stderr and starts over. Given to the workers as a
 * preloaded module, so the app itself is unchanged.
 */
export const LOOP_DELAY_PROBE = `data:text/javascript,${encodeURIComponent(`
import { monitorEventLoopDelay } from "node:perf_hooks";
const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
process.on("SIGUSR2", () => {
  const ms = (ns) => ns / 1e6;
  process.stderr.write("loop-delay " + JSON.stringify({ p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max) }) + "\\n");
  histogram.reset();
});`)}`;

/** Asks each worker for its loop delay since the last ask (the worst of them is reported). */
export async function workerLoopDelay(workers: readonly AppProcess[]): Promise<LoopDelay> {
  const seen = workers.map((worker) => worker.stderr().split("loop-delay ").length);
  for (const worker of workers) worker.signal("SIGUSR2");
  const reports = await Promise.all(workers.map(async (worker, index) => {
    for (let waited = 0; waited < 5_000; waited += 20) {
      const parts = worker.stderr().split("loop-delay ");
      if (parts.length > seen[index]! && parts[parts.length - 1]!.includes("\n")) return JSON.parse(parts[parts.length - 1]!.split("\n")[0]!) as LoopDelay;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error("a worker did not report its loop delay");
  }));
  return { p50: Math.max(...reports.map((report) => report.p50)), p99: Math.max(...reports.map((report) => report.p99)), max: Math.max(...reports.map((report) => report.max)) };
}

/**
 * Commands Redis executed (INFO commandstats, the commands scripts call included) from now to
 * `stop()`: work per message that does not depend on how loaded the machine is.
 */
export async function commandCounter(redisUrl: string): Promise<{ stop(): Promise<number> }> {
  const connection = createRedis(redisUrl);
  const total = async () => {
    let calls = 0;
    for (const match of (await connection.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
      // The counting itself (INFO) is not the pipeline's work.
      if (match[1] !== "info") calls += Number(match[2]);
    }
    return calls;
  };
  const before = await total();
  return {
    async stop() {
      const after = await total();
      connection.disconnect();
      return after - before;
    },
  };
}

/** CPU time (user + system) of a child process so far, in ms, from /proc. */
export function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return 0;
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  // utime and stime are fields 14 and 15 of the whole line: 12 and 13 after "pid (comm) ".
  return ((Number(fields[11]) + Number(fields[12])) * 1_000) / 100;
}

export const ownCpuMs = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1_000;
};

/** A run with the Redis commands it made per message. */
export async function counted<T extends { latencies: number[] }>(redisUrl: string, run: () => Promise<T>): Promise<T & { redisCommands: number }> {
  const counter = await commandCounter(redisUrl);
  const result = await run();
  return { ...result, redisCommands: (await counter.stop()) / result.latencies.length };
}

export async function measured(run: () => Promise<{ seconds: number; latencies: number[] }>, workers: readonly AppProcess[], loopDelay: boolean) {
  const gatewayLoop = loopDelay ? monitorEventLoopDelay({ resolution: 10 }) : undefined;
  if (loopDelay) await workerLoopDelay(workers);
  gatewayLoop?.enable();
  const gatewayBefore = ownCpuMs();
  const workersBefore = workers.reduce((sum, worker) => sum + processCpuMs(worker.child.pid), 0);
  const result = await run();
  const messages = result.latencies.length;
  const cpu = {
    gatewayCpuMs: (ownCpuMs() - gatewayBefore) / messages,
    workerCpuMs: (workers.reduce((sum, worker) => sum + processCpuMs(worker.child.pid), 0) - workersBefore) / messages,
  };
  gatewayLoop?.disable();
  const ms = (ns: number) => ns / 1e6;
  return {
    ...result,
    ...cpu,
    ...(gatewayLoop ? {
      gatewayLoopDelay: { p50: ms(gatewayLoop.percentile(50)), p99: ms(gatewayLoop.percentile(99)), max: ms(gatewayLoop.max) },
      workerLoopDelay: await workerLoopDelay(workers),
    } : {}),
  };
}
