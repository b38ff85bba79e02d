/**
 * Soak (issue 32 item 5): `npm run bench -- soak [--minutes=60]` (only when named; not in CI).
 *
 * The load bench's deployment (bench/load.ts: longhaul's build in child processes with default
 * settings, the fake Telegram with its limits, the paced model) under a steady open loop for
 * `--minutes`, from `--users` private chats (1,000), with the same mix: a share of turns with tool
 * steps, and long sessions in a 12K window that compact again and again. Every `--sample-seconds`
 * it records per process heap used, RSS, active handles and requests (timers included) and the
 * largest listener count on `process`; Redis used memory, its key count and BullMQ's keys per
 * queue. It reports the samples, the trend of heap and RSS after `--warmup-minutes` (a least-
 * squares line: growth over the measured span, in % of its start), and Redis bytes per stored
 * message (two per answered message: the user's and the answer) over the same span.
 *
 *   npm run bench -- soak [--minutes=60] [--rate=2] [--users=1000] [--topology=split]
 *                         [--sample-seconds=30] [--warmup-minutes=5]
 *
 * Not in the mix (yet): reminders firing and approvals waiting on a button.
 */
import { loadavg } from "node:os";
import { createRedis, type Redis } from "../src/queue/index.js";
import { startRedisServer } from "../test/helpers/redis-server.js";
import { deploy, LOAD_CONTEXT_WINDOW, messageOf, modelTimeMs, parsePlan as parseLoadPlan, probe, progress, random, reuseOrBuild, startPacedLlm, telegramDriver, type ProbeReport, type Topology } from "./load.js";
import { isMain, percentile, table } from "./stats.js";

interface Sample {
  minute: number;
  processes: ProbeReport[];
  redisUsed: number;
  keys: number;
  bullmqKeys: Record<string, number>;
  answered: number;
  sent: number;
}

const MB = 1024 * 1024;

async function keyCounts(redis: Redis, prefix: string): Promise<{ keys: number; bullmq: Record<string, number> }> {
  const bullmq: Record<string, number> = {};
  let keys = 0;
  let cursor = "0";
  do {
    const [next, batch] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1_000);
    cursor = next;
    for (const key of batch) {
      keys++;
      // BullMQ's keys: <prefix>:<queue>:<what> where the queue is one of ours (not a {session} tag).
      const queue = /^[^:]+:([a-z][a-z-]*):/.exec(key)?.[1];
      if (queue && ["turns", "deliveries-telegram", "deliveries-discord", "deliveries-console", "idle", "idle-compaction", "firings", "schedule"].includes(queue)) bullmq[queue] = (bullmq[queue] ?? 0) + 1;
    }
  } while (cursor !== "0");
  return { keys, bullmq };
}

/** Least-squares slope of ys over xs, as growth over the span in % of the fitted start. */
export function trendPercent(xs: readonly number[], ys: readonly number[]): number {
  const n = xs.length;
  if (n < 2) return 0;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let index = 0; index < n; index++) {
    num += (xs[index]! - mx) * (ys[index]! - my);
    den += (xs[index]! - mx) ** 2;
  }
  const slope = den === 0 ? 0 : num / den;
  const start = my - slope * (mx - xs[0]!);
  return start === 0 ? 0 : (100 * slope * (xs[n - 1]! - xs[0]!)) / start;
}

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const flags = new Map(args.filter((arg) => arg.startsWith("--")).map((arg) => {
    const at = arg.indexOf("=");
    return at < 0 ? [arg.slice(2), ""] as const : [arg.slice(2, at), arg.slice(at + 1)] as const;
  }));
  const minutes = Number(flags.get("minutes") ?? 60);
  const rate = Number(flags.get("rate") ?? 2);
  const sampleSeconds = Number(flags.get("sample-seconds") ?? 30);
  const warmupMinutes = Number(flags.get("warmup-minutes") ?? Math.min(5, minutes / 3));
  const topology = (flags.get("topology") ?? "split") as Topology;
  const plan = parseLoadPlan([`--users=${flags.get("users") ?? 1_000}`, "--platforms=telegram", `--topologies=${topology}`]);
  const build = reuseOrBuild();
  const redisServer = await startRedisServer();
  const llm = await startPacedLlm(plan);
  const platform = await telegramDriver(plan.users);
  const prefix = `soak${Date.now().toString(36)}`;
  const deployment = await deploy(topology, {
    REDIS_URL: redisServer.url, REDIS_PREFIX: prefix, LLM_BASE_URL: llm.url, LLM_API_KEY: "bench", LLM_MODEL: "gpt-4o-mini", LLM_CONTEXT_WINDOW: LOAD_CONTEXT_WINDOW,
    HTTP_PORT: "0", CONSOLE: "off", LOG_LEVEL: "info", ...platform.env,
  });
  const redis = createRedis(redisServer.url);
  const samples: Sample[] = [];
  const answered = new Set<number>();
  const waits: number[] = [];
  const sentAt = new Map<number, { at: number; modelMs: number }>();
  const load0 = loadavg()[0]!;
  try {
    progress(`soak: ${deployment.labels.join(", ")} ready; ${rate}/s for ${minutes} min`);
    const started = Date.now();
    const draw = random(20261206);
    const total = Math.round(rate * minutes * 60);
    let nextSample = started;
    const sample = async () => {
      for (const { id, at } of platform.newAnswers()) {
        if (answered.has(id)) continue;
        answered.add(id);
        const sent = sentAt.get(id);
        if (sent) waits.push(at - sent.at - sent.modelMs);
      }
      const counts = await keyCounts(redis, prefix);
      const used = Number(/^used_memory:(\d+)/m.exec(await redis.info("memory"))?.[1] ?? 0);
      samples.push({ minute: (Date.now() - started) / 60_000, processes: await probe(deployment.processes), redisUsed: used, keys: counts.keys, bullmqKeys: counts.bullmq, answered: answered.size, sent: sentAt.size });
      const last = samples[samples.length - 1]!;
      progress(`minute ${last.minute.toFixed(1)}: sent ${last.sent}, answered ${last.answered}, heap ${last.processes.map((report) => (report.heapUsed / MB).toFixed(0)).join("/")} MB, Redis ${(used / MB).toFixed(1)} MB, keys ${counts.keys}`);
    };
    for (let index = 0; index < total; index++) {
      const due = started + (index * 1_000) / rate;
      if (Date.now() >= nextSample) {
        await sample();
        nextSample += sampleSeconds * 1_000;
      }
      const wait = due - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      const message = messageOf(index, plan, draw);
      sentAt.set(index, { at: Date.now(), modelMs: modelTimeMs(plan, message.tools) });
      platform.send(message.user, message.text);
    }
    // The last answers, then a final sample.
    const lastSent = Date.now();
    while (answered.size < total && Date.now() - lastSent < 60_000) {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      for (const { id } of platform.newAnswers()) answered.add(id);
    }
    await sample();
  } finally {
    redis.disconnect();
    await deployment.close();
    await platform.close();
    await llm.close();
    await redisServer.dispose();
    build.remove();
  }

  const measured = samples.filter((entry) => entry.minute >= warmupMinutes);
  const trendRows = deployment.labels.map((label, index) => {
    const xs = measured.map((entry) => entry.minute);
    const heap = measured.map((entry) => entry.processes[index]!.heapUsed);
    const rss = measured.map((entry) => entry.processes[index]!.rss);
    const handles = measured.map((entry) => Object.values(entry.processes[index]!.resources).reduce((sum, count) => sum + count, 0));
    return [label, `${(heap[0]! / MB).toFixed(0)} → ${(heap[heap.length - 1]! / MB).toFixed(0)}`, `${trendPercent(xs, heap).toFixed(1)}%`,
      `${(rss[0]! / MB).toFixed(0)} → ${(rss[rss.length - 1]! / MB).toFixed(0)}`, `${trendPercent(xs, rss).toFixed(1)}%`,
      `${handles[0]} → ${handles[handles.length - 1]} (max ${Math.max(...handles)})`];
  });
  const first = measured[0];
  const last = measured[measured.length - 1];
  const storedMessages = first && last ? 2 * (last.answered - first.answered) : 0;
  const bytesPerMessage = first && last && storedMessages > 0 ? (last.redisUsed - first.redisUsed) / storedMessages : Number.NaN;
  const sortedWaits = [...waits].sort((a, b) => a - b);
  const sampleRows = samples.map((entry) => [
    entry.minute.toFixed(1), entry.sent, entry.answered,
    entry.processes.map((report) => (report.heapUsed / MB).toFixed(0)).join(" / "),
    entry.processes.map((report) => (report.rss / MB).toFixed(0)).join(" / "),
    entry.processes.map((report) => Object.entries(report.resources).map(([type, count]) => `${type} ${count}`).join(" ")).join(" · "),
    entry.processes.map((report) => report.processListeners).join(" / "),
    (entry.redisUsed / MB).toFixed(2), entry.keys, JSON.stringify(entry.bullmqKeys),
  ]);
  const output = [
    `Soak: ${minutes} min at ${rate} messages/s from ${plan.users} Telegram chats (fake with limits), longhaul ${deployment.labels.join(" + ")} with defaults; model ${plan.ttftMs} ms to first token, ${plan.tokensPerSecond} tokens/s; ${Math.round(plan.toolShare * 100)}% with tool steps, ${Math.round(plan.longShare * 100)}% from 5 long sessions that compact (12K window). Warm-up: the first ${warmupMinutes} min. Load average ${load0.toFixed(1)} → ${loadavg()[0]!.toFixed(1)}.`,
    "",
    `Answered ${answered.size} of ${sentAt.size}; wait above the model's time p50 ${(percentile(sortedWaits, 50) / 1_000).toFixed(2)} s, p99 ${(percentile(sortedWaits, 99) / 1_000).toFixed(2)} s.`,
    `Redis: ${Number.isFinite(bytesPerMessage) ? bytesPerMessage.toFixed(0) : "n/a"} bytes of used memory per stored message after warm-up (${storedMessages} messages stored, ${first ? (first.redisUsed / MB).toFixed(2) : "?"} → ${last ? (last.redisUsed / MB).toFixed(2) : "?"} MB).`,
    "",
    table(["process", "heap MB (after warm-up → end)", "heap trend", "RSS MB", "RSS trend", "active handles + requests"], trendRows),
    "",
    table(["minute", "sent", "answered", "heap MB per process", "RSS MB per process", "active resources per process", "most listeners on process", "Redis used MB", "keys", "BullMQ keys"], sampleRows),
  ].join("\n");
  console.log(output);
  return output;
}

if (isMain(import.meta.url)) await main();
