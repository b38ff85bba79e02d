/**
 * The LLM client's own cost (issue 18): CPU ms per `complete()` of `createLlmClient`, plain and
 * streamed (`onText`), against the fake LLM in a process of its own (bench/fake-llm-process.ts),
 * so that only the client's CPU is counted. Sequential calls on one client, as a worker makes
 * them; after a warm-up, RUNS runs of CALLS calls each, the median run reported, and each call's
 * own CPU over all runs (p50, p99: garbage collections and JIT land on a few calls). CPU time,
 * not wall time: the machine is shared.
 *
 *   npm run bench -- llm-client
 *   npx tsx bench/llm-client.ts --calls=1000 --runs=5
 */
import { createLlmClient } from "../src/llm/index.js";
import type { ChatRequest } from "../src/llm/index.js";
import { startLlmProcess } from "./pipeline.js";
import { isMain, median, percentile, table } from "./stats.js";

/** A turn's first step in miniature: a system prompt and one short user message. */
const MESSAGES: ChatRequest["messages"] = [
  { role: "system", content: "You are a helpful assistant in a long conversation. ".repeat(8) },
  { role: "user", content: "What did we decide about the trip?" },
];

/**
 * CPU ms (user + system) of this process per call, over `calls` sequential calls; each call's own
 * CPU is pushed on `samples` (ms) when given, for per-call percentiles.
 */
async function cpuPerCall(calls: number, call: () => Promise<unknown>, samples?: number[]): Promise<number> {
  const before = process.cpuUsage();
  for (let index = 0; index < calls; index++) {
    const start = samples ? process.cpuUsage() : undefined;
    await call();
    if (start) {
      const one = process.cpuUsage(start);
      samples!.push((one.user + one.system) / 1000);
    }
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / calls;
}

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const flag = (name: string, fallback: number) => Number(args.find((arg) => arg.startsWith(`--${name}=`))?.split("=")[1] ?? fallback);
  const calls = flag("calls", 1_000);
  const runs = flag("runs", 5);
  const llm = await startLlmProcess("fake");
  try {
    const client = createLlmClient({ baseUrl: llm.url, apiKey: "sk-bench-0123456789", model: "gpt-4o-mini", timeoutMs: 30_000, maxRetries: 2 });
    let streamedText = "";
    const modes = {
      plain: () => client.complete({ messages: MESSAGES }),
      streamed: () => client.complete({ messages: MESSAGES, onText: (delta) => void (streamedText += delta) }),
    };
    const rows: Array<[string, number, number, number, string]> = [];
    for (const [mode, call] of Object.entries(modes)) {
      await cpuPerCall(200, call); // warm-up: JIT, the connection
      const perRun: number[] = [];
      const perCall: number[] = [];
      for (let run = 0; run < runs; run++) perRun.push(await cpuPerCall(calls, call, perCall));
      perCall.sort((a, b) => a - b);
      rows.push([mode, median(perRun), percentile(perCall, 50), percentile(perCall, 99), perRun.map((value) => value.toFixed(2)).join(" / ")]);
    }
    if (!streamedText.startsWith("echo: ")) throw new Error(`unexpected streamed text: ${streamedText.slice(0, 40)}`);
    const report = [
      `LLM client CPU per call: ${runs} runs × ${calls} sequential calls against the fake LLM in its own process (median run)`,
      "",
      table(["mode", "CPU ms/call (median run)", "per call p50", "per call p99", "runs"], rows),
    ].join("\n");
    console.log(report);
    return report;
  } finally {
    await llm.close();
  }
}

if (isMain(import.meta.url)) await main();
