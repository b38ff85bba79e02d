/**
 * Load with a real model's latency (issue 32): `npm run bench -- load` (not in `npm run bench`'s
 * default list, not in CI).
 *
 * Open loop: messages arrive at a fixed offered rate from N users, each message due at
 * start + i / rate whatever happened before it. The model is bench/paced-llm.ts in a process of
 * its own (first token after 1 s, 30 tokens/s streamed: a 90-token answer takes ~3.9 s); a share
 * of messages asks for one or two tool steps first (`current_time`, 1 s each), and a share goes
 * to five "long" users whose messages are ~1,900 characters in a 12K window, so their sessions
 * compact during the run. longhaul runs as an operator runs it — the build of `npm start` in
 * child processes with default settings (WORKER_CONCURRENCY unset), one process (`all`) or a
 * gateway and two workers (`split`) — against the platform fakes with their rate limits
 * (test/fakes/fake-telegram.ts: ~1 message/s per chat, 30/s overall; fake-discord.ts: 5 per 5 s
 * per channel; the bot's own send budget keeps under Discord's 50/s).
 *
 * Reported per run: answered share (answers seen within `--drain` seconds after the last
 * message), wait above the model's own time (answer visible − message pushed − the scripted
 * model time of its turn; p50 / p99), event-loop delay p99 and RSS (peak) per process, Redis
 * memory, platform requests per second (overall: mean and busiest second; per chat: the busiest
 * second of any chat), Redis commands per turn, and the turns in flight per worker with the RSS
 * they cost (what workers/concurrency.ts's TURN_FOOTPRINT_BYTES estimates).
 *
 *   npm run bench -- load [--platforms=telegram,discord] [--topologies=all,split] [--rates=25]
 *                         [--seconds=60] [--users=1000] [--tool-share=0.2] [--long-share=0.05]
 *                         [--drain=120] [--stages] [--patient]
 *
 * The wait above the model is also split (splitWaits): a follow-up — a message sent while an
 * earlier one of its chat is unanswered — first waits for that answer, which is the chat's own
 * (its session answers in order; the platform spaces a chat's sends); the rest is the "own wait".
 * `--patient` draws users who wait for their answer before writing again, so there are none.
 *
 * `--stages` adds, per run, where the answered messages' time went between the points a turn
 * passes (bench/stages.ts: ingress, queue, model, commit, delivery), p50 / p90 / p99.
 *
 * The fakes and this driver share one process; longhaul's processes, Redis and the model each
 * run in their own. On a 2-core machine they all compete for the same cores: read the figures
 * with the load average printed beside them.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { createRedis } from "../src/queue/index.js";
import { spawnApp, type AppProcess } from "../test/helpers/app-process.js";
import { startRedisServer } from "../test/helpers/redis-server.js";
import { buildForChildProcesses } from "../test/helpers/test-build.js";
import { FakeTelegram } from "../test/fakes/fake-telegram.js";
import { DEFAULT_GUILD, FAKE_TOKEN as DISCORD_TOKEN, FakeDiscord, HUMAN_USER, IDS, textChannel, type Payload } from "../test/fakes/fake-discord.js";
import { commandCounter } from "./measure.js";
import { furthestPoints, recordStages, stageProbe, stageTable, tailTable, turnsOf, type BenchMark } from "./stages.js";
import { isMain, percentile, table } from "./stats.js";

export type PlatformName = "telegram" | "discord";
export type Topology = "all" | "split";

export interface LoadPlan {
  platforms: PlatformName[];
  topologies: Topology[];
  rates: number[];
  seconds: number;
  users: number;
  toolShare: number;
  longShare: number;
  drainSeconds: number;
  /** `--stages`: where each answered message's time went (bench/stages.ts), per run. */
  stages: boolean;
  /** `--patient`: users write again only once their last message was answered (messageOf). */
  patient: boolean;
  /** Model pacing (bench/paced-llm.ts). */
  ttftMs: number;
  tokensPerSecond: number;
  answerTokens: number;
}

/** What a process reports on SIGUSR2 (LOAD_PROBE): since the last report. */
export interface ProbeReport {
  p50: number;
  p99: number;
  max: number;
  rss: number;
  heapUsed: number;
  /** CPU time (user + system, ms) since the last report. */
  cpuMs?: number;
  /** process.memoryUsage() when RSS was highest since the last report (sampled every second): where the memory was. */
  peak?: { rss: number; heapTotal: number; heapUsed: number; external: number; arrayBuffers: number };
  /** process.getActiveResourcesInfo(): handles and requests by type (timers included). */
  resources: Record<string, number>;
  /** The largest listener count on any of process's own emitters. */
  processListeners: number;
}

/**
 * Preloaded into every longhaul process (`--import`): samples the event-loop delay (10 ms
 * resolution); on SIGUSR2 it prints what it saw since the last SIGUSR2 with memory and active
 * resources, and starts over. The app itself is unchanged.
 */
export const LOAD_PROBE = `data:text/javascript,${encodeURIComponent(`
import { monitorEventLoopDelay } from "node:perf_hooks";
const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
let peak;
let cpuFrom = process.cpuUsage();
setInterval(() => {
  const now = process.memoryUsage();
  if (!peak || now.rss > peak.rss) peak = now;
}, 1000).unref();
process.on("SIGUSR2", () => {
  const ms = (ns) => ns / 1e6;
  const resources = {};
  for (const type of process.getActiveResourcesInfo()) resources[type] = (resources[type] ?? 0) + 1;
  const memory = process.memoryUsage();
  const processListeners = Math.max(0, ...process.eventNames().map((name) => process.listenerCount(name)));
  process.stderr.write("load-probe " + JSON.stringify({ p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max), rss: memory.rss, heapUsed: memory.heapUsed, peak, cpuMs: (process.cpuUsage(cpuFrom).user + process.cpuUsage(cpuFrom).system) / 1000, resources, processListeners }) + "\\n");
  cpuFrom = process.cpuUsage();
  histogram.reset();
  peak = undefined;
});`)}`;

export async function probe(processes: readonly AppProcess[]): Promise<ProbeReport[]> {
  const seen = processes.map((child) => child.stderr().split("load-probe ").length);
  for (const child of processes) child.signal("SIGUSR2");
  return Promise.all(processes.map(async (child, index) => {
    for (let waited = 0; waited < 10_000; waited += 20) {
      const parts = child.stderr().split("load-probe ");
      if (parts.length > seen[index]! && parts[parts.length - 1]!.includes("\n")) return JSON.parse(parts[parts.length - 1]!.split("\n")[0]!) as ProbeReport;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error("a process did not answer the probe");
  }));
}

/** Resident set size of a process now, from /proc (bytes). */
export function rssOf(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return match ? Number(match[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** A platform fake driven as N users, and what it saw. */
export interface PlatformDriver {
  name: PlatformName;
  /** longhaul's environment for this platform. */
  env: Record<string, string>;
  /** The session key of user `user`'s chat. */
  sessionKey(user: number): string;
  /** User `user` sends `text`. */
  send(user: number, text: string): void;
  /** Answer markers (⟦aN⟧) seen in accepted sends or edits since the last call, with when. */
  newAnswers(): Array<{ id: number; at: number }>;
  /** Requests the bot made to the platform (not its intake) in [from, to): by second, and per chat. */
  requests(from: number, to: number): RequestCounts;
  close(): Promise<void>;
}

const MARKER = /⟦a(\d+)⟧/g;

export interface RequestCounts {
  perSecond: number[];
  /** The most requests the platform's global limit counts (Telegram: sends and edits; Discord: all) in any second from `from`. */
  busiestLimitedSecond: number;
  busiestChatSecond: number;
  refused: number;
  byMethod: Record<string, number>;
  /** Of those, the ones answered 429, by method. */
  refusedByMethod: Record<string, number>;
}

function countRequests(calls: ReadonlyArray<{ at: number; chat: string; method: string; refused: boolean; limited: boolean }>, from: number, to: number): RequestCounts {
  const seconds = Math.max(1, Math.ceil((to - from) / 1_000));
  const perSecond = new Array<number>(seconds).fill(0);
  const limitedPerSecond = new Array<number>(seconds).fill(0);
  const perChat = new Map<string, number>();
  const byMethod: Record<string, number> = {};
  const refusedByMethod: Record<string, number> = {};
  let refused = 0;
  for (const call of calls) {
    if (call.at < from || call.at >= to) continue;
    const second = Math.floor((call.at - from) / 1_000);
    perSecond[second]!++;
    if (call.limited) limitedPerSecond[second]!++;
    const key = `${call.chat}@${second}`;
    perChat.set(key, (perChat.get(key) ?? 0) + 1);
    byMethod[call.method] = (byMethod[call.method] ?? 0) + 1;
    if (call.refused) {
      refused++;
      refusedByMethod[call.method] = (refusedByMethod[call.method] ?? 0) + 1;
    }
  }
  return { perSecond, busiestLimitedSecond: Math.max(0, ...limitedPerSecond), busiestChatSecond: Math.max(0, ...perChat.values()), refused, byMethod, refusedByMethod };
}

export async function telegramDriver(users: number): Promise<PlatformDriver> {
  const token = "123456:LOAD-bench-token";
  const telegram = await FakeTelegram.start({ token });
  const ids = Array.from({ length: users }, (_, index) => 7_000_000_000 + index);
  let scanned = 0;
  const BOT_METHODS = new Set(["sendMessage", "editMessageText", "deleteMessage", "sendChatAction", "setMessageReaction", "sendDocument"]);
  return {
    name: "telegram",
    env: { TELEGRAM_BOT_TOKEN: token, TELEGRAM_API_ROOT: telegram.apiRoot, ALLOWED_TELEGRAM_USERS: ids.join(",") },
    sessionKey: (user) => `tg:${ids[user % ids.length]!}`,
    send(user, text) {
      const id = ids[user % ids.length]!;
      telegram.pushMessage({ chat: { id, type: "private", first_name: `U${user}` }, from: { id, is_bot: false, first_name: `U${user}` }, text });
    },
    newAnswers() {
      const found: Array<{ id: number; at: number }> = [];
      for (; scanned < telegram.calls.length; scanned++) {
        const call = telegram.calls[scanned]!;
        // An accepted send (`visible`): what the user sees. Finals are sent as new messages.
        if (call.method !== "sendMessage" || call.visible === undefined) continue;
        for (const match of String(call.payload.text ?? "").matchAll(MARKER)) found.push({ id: Number(match[1]), at: call.at });
      }
      return found;
    },
    requests(from, to) {
      // A call is refused when the fake answered 429: it records no `visible` for a send; edits and
      // others are counted as made (the platform counts every request against the limits).
      return countRequests(telegram.calls.filter((call) => BOT_METHODS.has(call.method)).map((call) => ({
        at: call.at, chat: String(call.payload.chat_id), method: call.method, refused: call.method === "sendMessage" && call.visible === undefined,
        // Telegram's 30 a second counts messages sent and edited, not typing nor deletions.
        limited: /^(send|edit)/.test(call.method) && call.method !== "sendChatAction",
      })), from, to);
    },
    close: () => telegram.close(),
  };
}

export async function discordDriver(users: number): Promise<PlatformDriver> {
  // One guild channel per user (a guild channel is one session), the bot mentioned in each message.
  const channels = Array.from({ length: users }, (_, index) => String(310_000_000_000_000_000n + BigInt(index)));
  const guild: Payload = { ...DEFAULT_GUILD, channels: [...(DEFAULT_GUILD.channels as Payload[]), ...channels.map((id, index) => textChannel(id, `load-${index}`))] };
  const discord = await FakeDiscord.start({ guilds: [guild], heartbeatIntervalMs: 41_250 });
  let scanned = 0;
  let next = 0;
  const channelOf = (path: string) => /^\/channels\/(\d+)/.exec(path)?.[1] ?? "other";
  return {
    name: "discord",
    env: {
      DISCORD_BOT_TOKEN: DISCORD_TOKEN, DISCORD_API_ROOT: discord.apiRoot, ALLOWED_DISCORD_USERS: IDS.user, ALLOWED_DISCORD_CHANNELS: channels.join(","),
      // Every message comes from the fake's one human user (in a different channel each time):
      // the per-user rate limit would otherwise meter the bench, not the bot.
      RATE_LIMIT_PER_MINUTE: "0",
    },
    sessionKey: (user) => `dc:${channels[user % channels.length]!}`,
    send(user, text) {
      const channel = channels[user % channels.length]!;
      discord.dispatchMessage({
        id: String(600_000_000_000_000_000n + BigInt(++next)), channel_id: channel, guild_id: IDS.guild, author: HUMAN_USER,
        member: { nick: null, roles: [], joined_at: "2026-01-01T00:00:00.000Z", deaf: false, mute: false, flags: 0 },
        content: `<@${IDS.bot}> ${text}`, timestamp: new Date().toISOString(), edited_timestamp: null, tts: false, mention_everyone: false,
        mention_roles: [], attachments: [], embeds: [], pinned: false, type: 0, flags: 0,
      });
    },
    newAnswers() {
      const found: Array<{ id: number; at: number }> = [];
      const requests = discord.requests;
      for (; scanned < requests.length; scanned++) {
        const request = requests[scanned]!;
        if (request.status !== 200 || !(request.method === "POST" || request.method === "PATCH") || !/^\/channels\/\d+\/messages/.test(request.path)) continue;
        const content = String((request.body as Payload | undefined)?.content ?? "");
        for (const match of content.matchAll(MARKER)) found.push({ id: Number(match[1]), at: request.at });
      }
      return found;
    },
    requests(from, to) {
      return countRequests(discord.requests.filter((request) => !request.path.startsWith("/gateway") && request.path.startsWith("/")).map((request) => ({
        at: request.at, chat: channelOf(request.path), method: `${request.method} ${request.path.replace(/\d{6,}/g, ":id")}`, refused: request.status === 429,
        limited: !/^\/(interactions|webhooks)\//.test(request.path),
      })), from, to);
    },
    close: () => discord.close(),
  };
}

/** bench/paced-llm.ts in its own process. */
export async function startPacedLlm(plan: Pick<LoadPlan, "ttftMs" | "tokensPerSecond" | "answerTokens">): Promise<{ url: string; stats(): Promise<Record<string, number>>; close(): Promise<void> }> {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./paced-llm.ts", import.meta.url))], {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, TTFT_MS: String(plan.ttftMs), TOKENS_PER_SECOND: String(plan.tokensPerSecond), ANSWER_TOKENS: String(plan.answerTokens) },
  });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("\n")) resolve(out.split("\n")[0]!.trim());
    });
    child.once("exit", (code) => reject(new Error(`paced LLM exited with ${code}`)));
  });
  return {
    url,
    stats: async () => (await (await fetch(url.replace(/\/v1$/, "/stats"))).json()) as Record<string, number>,
    close: async () => {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** The model's own time for a message asking for `tools` tool steps (bench/paced-llm.ts's pacing). */
export function modelTimeMs(plan: Pick<LoadPlan, "ttftMs" | "tokensPerSecond" | "answerTokens">, tools: number): number {
  const perWrite = Math.max(1, Math.round(plan.tokensPerSecond / 10));
  const writes = Math.ceil(plan.answerTokens / perWrite);
  return tools * plan.ttftMs + plan.ttftMs + (writes - 1) * 100;
}

/** A deterministic stream of numbers in [0, 1) (mulberry32), so runs offer the same messages. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const LONG_USERS = 5;
/** The window of every session: small enough that the long sessions compact within a minute. */
export const LOAD_CONTEXT_WINDOW = "12000";

/** ~1,900 characters: under Discord's 2,000 and Telegram's 4,096 per user message. */
const LONG_TEXT = `${"Here is a long log excerpt from the service, line by line, with timestamps and values. ".repeat(22)}`;

/**
 * The i-th message of a run: who sends it, what it asks of the model. With `busy` (`--patient`:
 * people who wait for their answer before they write again), a message goes to a user with
 * nothing unanswered: a long one to the next idle long user (none idle: it goes as an ordinary
 * message), an ordinary one to the next draw that is idle.
 */
export function messageOf(index: number, plan: LoadPlan, draw: () => number, busy?: (user: number) => boolean): { user: number; tools: number; text: string; long: boolean } {
  let long = draw() < plan.longShare;
  const toolDraw = draw();
  const tools = toolDraw < plan.toolShare / 2 ? 2 : toolDraw < plan.toolShare ? 1 : 0;
  // Long users are the last LONG_USERS; the others take turns in a shuffled-looking order.
  let user = long ? plan.users - 1 - (index % LONG_USERS) : Math.floor(draw() * (plan.users - LONG_USERS));
  if (busy && long) {
    const idle = Array.from({ length: LONG_USERS }, (_, step) => plan.users - 1 - ((index + step) % LONG_USERS)).find((candidate) => !busy(candidate));
    if (idle === undefined) long = false;
    user = idle ?? Math.floor(draw() * (plan.users - LONG_USERS));
  }
  for (let tries = 0; busy && !long && busy(user) && tries < 100; tries++) user = Math.floor(draw() * (plan.users - LONG_USERS));
  const marker = `⟦m${index} tools=${tools}⟧`;
  return { user, tools, long, text: long ? `${marker} ${LONG_TEXT}` : `${marker} what does the queue look like right now, and why?` };
}

/**
 * Each answered message's wait above the model, split by what it waited for (docs/decisions.md,
 * "Load bench: a chat's own wait apart"). A message sent while an earlier message of its chat was
 * still unanswered (a **follow-up**) first waits for that answer: the session answers its
 * messages in order (BUSY_MODE=collect folds them into the next turn), and the platform's
 * per-chat limit (Discord 5 per 5 s per channel, Telegram about 1 a second per chat) spaces the
 * chat's sends. That part is the chat's own, whatever longhaul does; the rest — counted from when
 * the chat's earlier answer was visible, or from the push for a message whose chat was idle — is
 * what longhaul's queues, the bot's send budget and the machine added (`own`). A follow-up
 * answered in the same send as the earlier message (collected while that one still queued) has
 * no own wait of its own and is counted apart (`batched`).
 */
export interface WaitSplit {
  /** Every answered message: answer visible − push − its model time (ms). */
  all: number[];
  /** Answered messages whose chat had nothing unanswered when they were pushed. */
  idleChat: number[];
  /** Follow-ups: the time behind their chat's earlier answer (ms). */
  behindChat: number[];
  /** Every answered message but the batched: its wait from when its chat was free (ms). */
  own: number[];
  batched: number;
}

export function splitWaits(sent: ReadonlyMap<number, { at: number; modelMs: number; user: number }>, answeredAt: ReadonlyMap<number, number>): WaitSplit {
  const split: WaitSplit = { all: [], idleChat: [], behindChat: [], own: [], batched: 0 };
  /** Per user: when their latest message so far was answered (Infinity: never). */
  const chatFreeAt = new Map<number, number>();
  for (const [id, message] of [...sent.entries()].sort((a, b) => a[1].at - b[1].at || a[0] - b[0])) {
    const answered = answeredAt.get(id);
    const free = chatFreeAt.get(message.user) ?? Number.NEGATIVE_INFINITY;
    chatFreeAt.set(message.user, Math.max(free, answered ?? Number.POSITIVE_INFINITY));
    if (answered === undefined) continue;
    split.all.push(answered - message.at - message.modelMs);
    if (free <= message.at) {
      split.idleChat.push(answered - message.at - message.modelMs);
      split.own.push(answered - message.at - message.modelMs);
      continue;
    }
    split.behindChat.push(Math.min(free, answered) - message.at);
    if (answered <= free) split.batched++;
    else split.own.push(answered - free - message.modelMs);
  }
  return split;
}

export interface Deployment {
  processes: AppProcess[];
  labels: string[];
  close(): Promise<void>;
}

/** longhaul as child processes: `all` (one process) or `split` (a gateway and two workers). */
export async function deploy(topology: Topology, env: Record<string, string>, nodeArgs: readonly string[] = []): Promise<Deployment> {
  const roles = topology === "all" ? ["all"] : ["gateway", "worker", "worker"];
  // LOAD_NODE_ARGS: node options for longhaul's processes (e.g. a V8 flag tried against the defaults).
  const extra = (process.env.LOAD_NODE_ARGS ?? "").split(" ").filter((arg) => arg !== "");
  const processes = roles.map((role) => spawnApp({ ...env, LONGHAUL_ROLE: role }, { nodeArgs: ["--import", LOAD_PROBE, ...extra, ...nodeArgs] }));
  await Promise.all(processes.map((child) => child.waitForStderr(/longhaul-ready/, 240_000)));
  let closing: Promise<void> | undefined;
  return {
    processes,
    labels: roles.map((role, index) => (role === "worker" ? `worker ${index}` : role)),
    // Once: a run with --stages closes early (the probes flush on exit), and again at its end.
    close: () => (closing ??= (async () => {
      await Promise.all(processes.map((child) => child.kill("SIGTERM")));
      // LOAD_APP_LOGS=<dir>: each process's log lines (pino JSON) kept for a post-mortem.
      const dir = process.env.LOAD_APP_LOGS;
      if (dir) processes.forEach((child, index) => writeFileSync(join(dir, `${topology}-${index}-${roles[index]}.log`), child.stdout() + child.stderr()));
    })()),
  };
}

export interface RunResult {
  platform: PlatformName;
  topology: Topology;
  rate: number;
  offered: number;
  answered: number;
  /** ms above the model's own time, answered messages only. */
  waits: number[];
  /** The same waits split into the chat's own and the rest (splitWaits). */
  split: WaitSplit;
  /** Per process: label, ELD p99 over the run, peak RSS (sampled every second). */
  processes: Array<{ label: string; loopDelayP99: number; peakRss: number; endRss: number; peakMemory?: ProbeReport["peak"]; cpuMs?: number }>;
  redisUsedBefore: number;
  redisUsedAfter: number;
  redisCommandsPerTurn: number;
  requests: ReturnType<PlatformDriver["requests"]>;
  seconds: number;
  load: [number, number];
  /** Peak turns in flight over the workers, and the RSS they added (bytes per turn). */
  footprint?: { inFlight: number; bytesPerTurn: number };
  llm: Record<string, number>;
  /** `--stages`: the stage table of this run. */
  stages?: string;
}

async function redisUsedMemory(url: string): Promise<number> {
  const connection = createRedis(url);
  try {
    return Number(/^used_memory:(\d+)/m.exec(await connection.info("memory"))?.[1] ?? 0);
  } finally {
    connection.disconnect();
  }
}

export async function runOnce(plan: LoadPlan, platformName: PlatformName, topology: Topology, rate: number, redisUrl: string, llmUrl: string, llmStats: () => Promise<Record<string, number>>): Promise<RunResult> {
  const platform = platformName === "telegram" ? await telegramDriver(plan.users) : await discordDriver(plan.users);
  const env: Record<string, string> = {
    REDIS_URL: redisUrl, REDIS_PREFIX: `load-${platformName}-${topology}-${rate}-${Date.now().toString(36)}`,
    LLM_BASE_URL: llmUrl, LLM_API_KEY: "bench", LLM_MODEL: "gpt-4o-mini", LLM_CONTEXT_WINDOW: LOAD_CONTEXT_WINDOW,
    HTTP_PORT: "0", CONSOLE: "off", LOG_LEVEL: process.env.LOAD_LOG_LEVEL ?? "info",
    ...platform.env,
  };
  const stages = plan.stages ? recordStages() : undefined;
  const deployment = await deploy(topology, env, stages ? ["--import", stageProbe(stages.file)] : []);
  progress(`${platformName}, ${topology}: ${deployment.processes.length} process(es) ready; offering ${rate}/s for ${plan.seconds} s`);
  const workers = deployment.processes.filter((_, index) => deployment.labels[index] !== "gateway");
  const baseRss = workers.map((child) => rssOf(child.child.pid));
  const draw = random(20261206 + rate);
  const total = Math.round(rate * plan.seconds);
  const sent = new Map<number, { at: number; modelMs: number; user: number }>();
  const answeredAt = new Map<number, number>();
  const peakRss = deployment.processes.map(() => 0);
  const endRss = deployment.processes.map(() => 0);
  let inFlightPeak = 0;
  let footprintRss = 0;
  try {
    await probe(deployment.processes);
    const redisUsedBefore = await redisUsedMemory(redisUrl);
    const commands = await commandCounter(redisUrl);
    const load0 = loadavg()[0]!;
    const started = Date.now();
    const sampler = setInterval(() => {
      for (const [index, child] of deployment.processes.entries()) {
        const rss = rssOf(child.child.pid);
        peakRss[index] = Math.max(peakRss[index]!, rss);
        endRss[index] = rss;
      }
      for (const { id, at } of platform.newAnswers()) if (!answeredAt.has(id)) answeredAt.set(id, at);
      const inFlight = sent.size - answeredAt.size;
      if (inFlight > inFlightPeak) {
        inFlightPeak = inFlight;
        footprintRss = workers.reduce((sum, child, index) => sum + rssOf(child.child.pid) - baseRss[index]!, 0);
      }
    }, 1_000);
    /** Each user's latest message (--patient). */
    const lastOf = new Map<number, number>();
    // Open loop: message i is due at started + i / rate.
    for (let index = 0; index < total; index++) {
      const due = started + (index * 1_000) / rate;
      const wait = due - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      let message: ReturnType<typeof messageOf>;
      if (plan.patient) {
        for (const { id, at } of platform.newAnswers()) if (!answeredAt.has(id)) answeredAt.set(id, at);
        message = messageOf(index, plan, draw, (user) => {
          const last = lastOf.get(user);
          return last !== undefined && !answeredAt.has(last);
        });
      } else message = messageOf(index, plan, draw);
      lastOf.set(message.user, index);
      sent.set(index, { at: Date.now(), modelMs: modelTimeMs(plan, message.tools), user: message.user });
      platform.send(message.user, message.text);
    }
    const lastSent = Date.now();
    progress(`all ${total} sent; ${answeredAt.size} answered so far`);
    while (answeredAt.size < total && Date.now() - lastSent < plan.drainSeconds * 1_000) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      for (const { id, at } of platform.newAnswers()) if (!answeredAt.has(id)) answeredAt.set(id, at);
    }
    clearInterval(sampler);
    const ended = Date.now();
    const reports = await probe(deployment.processes);
    const redisCommands = await commands.stop();
    const split = splitWaits(sent, answeredAt);
    // The probes write twice a second: the last marks are in once the processes have flushed.
    const visible: BenchMark[] = [...answeredAt.entries()].map(([id, at]) => ({ stage: "visible", sessionKey: platform.sessionKey(sent.get(id)!.user), at }));
    // A chat's marks are told apart by its ingress marks, which a follow-up mixes with its earlier
    // message's: the stage tables take the chats that got one message in the run.
    const perChat = new Map<string, number>();
    for (const message of sent.values()) perChat.set(platform.sessionKey(message.user), (perChat.get(platform.sessionKey(message.user)) ?? 0) + 1);
    const stageTurns = stages ? (await deployment.close(), turnsOf([...stages.stop(), ...visible], false).filter((turn) => perChat.get(turn.sessionKey) === 1)) : undefined;
    return {
      platform: platformName, topology, rate, offered: total, answered: answeredAt.size, waits: split.all, split,
      processes: deployment.labels.map((label, index) => ({ label, loopDelayP99: reports[index]!.p99, peakRss: peakRss[index]!, endRss: endRss[index]!, ...(reports[index]!.peak ? { peakMemory: reports[index]!.peak } : {}), ...(reports[index]!.cpuMs !== undefined ? { cpuMs: reports[index]!.cpuMs } : {}) })),
      redisUsedBefore, redisUsedAfter: await redisUsedMemory(redisUrl),
      redisCommandsPerTurn: redisCommands / Math.max(1, answeredAt.size),
      requests: platform.requests(started, ended),
      seconds: (ended - started) / 1_000,
      load: [load0, loadavg()[0]!],
      ...(inFlightPeak > 0 ? { footprint: { inFlight: inFlightPeak, bytesPerTurn: footprintRss / inFlightPeak } } : {}),
      llm: await llmStats(),
      ...(stageTurns ? {
        stages: `${stageTable(`${platformName}, ${topology}, ${rate}/s: where the answered messages' time went`, stageTurns.filter((turn) => turn.at.has("sending")), [50, 90, 99])}\n\n${tailTable(`${platformName}, ${topology}, ${rate}/s: the slowest messages`, stageTurns.filter((turn) => turn.at.has("sending")))}\n\nThe last point each message reached (sending: handed to the platform): ${JSON.stringify(furthestPoints(stageTurns))}`,
      } : {}),
    };
  } finally {
    await deployment.close();
    await platform.close();
  }
}

const MB = 1024 * 1024;

export function report(plan: LoadPlan, results: readonly RunResult[]): string {
  const rows = results.map((result) => {
    const waits = [...result.waits].sort((a, b) => a - b);
    const sorted = (values: readonly number[]) => [...values].sort((a, b) => a - b);
    const seconds = (values: readonly number[], p: number) => (values.length === 0 ? "–" : (percentile(values, p) / 1_000).toFixed(2));
    const own = sorted(result.split.own);
    const idle = sorted(result.split.idleChat);
    const behind = sorted(result.split.behindChat);
    const perSecond = result.requests.perSecond;
    const mean = perSecond.reduce((sum, value) => sum + value, 0) / Math.max(1, perSecond.length);
    return [
      result.platform, result.topology === "all" ? "one process (npm start)" : "gateway + 2 workers", result.rate,
      `${result.answered} / ${result.offered} (${((100 * result.answered) / result.offered).toFixed(1)}%)`,
      `${(percentile(waits, 50) / 1_000).toFixed(2)} / ${(percentile(waits, 99) / 1_000).toFixed(2)}`,
      `${seconds(own, 50)} / ${seconds(own, 99)} (idle chats ${seconds(idle, 99)})`,
      `${behind.length}: ${seconds(behind, 50)} / ${seconds(behind, 99)}${result.split.batched > 0 ? `, ${result.split.batched} batched` : ""}`,
      result.processes.map((process) => `${process.label} ${process.loopDelayP99.toFixed(0)}`).join(", "),
      result.processes.map((process) => `${process.label} ${(process.peakRss / MB).toFixed(0)}`).join(", "),
      `${(result.redisUsedBefore / MB).toFixed(1)} → ${(result.redisUsedAfter / MB).toFixed(1)}`,
      `${mean.toFixed(1)} / ${Math.max(0, ...perSecond)} / ${result.requests.busiestLimitedSecond}`,
      result.requests.busiestChatSecond,
      result.requests.refused,
      result.redisCommandsPerTurn.toFixed(0),
      result.footprint ? `${result.footprint.inFlight}, ${(result.footprint.bytesPerTurn / 1024).toFixed(0)} KB` : "",
      `${result.load[0].toFixed(1)} → ${result.load[1].toFixed(1)}`,
    ];
  });
  const memory = (result: RunResult) => result.processes.filter((process) => process.peakMemory).map((process) => {
    const peak = process.peakMemory!;
    return `${process.label} RSS ${(peak.rss / MB).toFixed(0)} = heap ${(peak.heapUsed / MB).toFixed(0)} used of ${(peak.heapTotal / MB).toFixed(0)}, external ${(peak.external / MB).toFixed(0)} (array buffers ${(peak.arrayBuffers / MB).toFixed(0)}), the rest code, stacks and the allocator's`;
  }).join("; ");
  const detail = results.map((result) => `- ${result.platform}, ${result.topology}, ${result.rate}/s: requests by method ${JSON.stringify(result.requests.byMethod)}${result.requests.refused > 0 ? `, answered 429 ${JSON.stringify(result.requests.refusedByMethod)}` : ""}; model calls ${JSON.stringify(result.llm)} (cumulative over the bench); memory at each process's highest RSS (MB): ${memory(result)}; CPU ms per answered message: ${result.processes.map((process) => `${process.label} ${((process.cpuMs ?? Number.NaN) / Math.max(1, result.answered)).toFixed(1)}`).join(", ")}`);
  const stages = results.flatMap((result) => (result.stages ? ["", result.stages] : []));
  return [
    `Open loop, ${plan.seconds} s per run, ${plan.users} users; model: first token ${plan.ttftMs} ms, ${plan.tokensPerSecond} tokens/s, ${plan.answerTokens}-token answers (${(modelTimeMs(plan, 0) / 1_000).toFixed(1)} s), ${Math.round(plan.toolShare * 100)}% with 1–2 tool steps (+1 s each), ${Math.round(plan.longShare * 100)}% from ${LONG_USERS} long sessions (12K window: they compact); ${plan.patient ? "patient users (none writes again before their last message was answered)" : "users drawn at random, so a user may write again before their last answer (a follow-up)"}; answers awaited ${plan.drainSeconds} s after the last message. Own wait: the wait above the model less the time a follow-up spent behind its chat's earlier answer (the session's order and the platform's per-chat limit, the chat's own) — what longhaul's queues, the send budget and the machine added.`,
    "",
    table(["platform", "longhaul", "offered /s", "answered", "wait above model p50 / p99 s", "own wait p50 / p99 s (p99 of messages to idle chats)", "follow-ups: n, behind their chat p50 / p99 s", "event-loop delay p99 ms", "peak RSS MB", "Redis used MB", "platform req/s mean / busiest second / busiest second of those the global limit counts", "busiest chat, req in one second", "refused (429)", "Redis commands / turn", "turns in flight (peak), RSS per turn", "load average"], rows),
    "",
    ...detail,
    ...stages,
  ].join("\n");
}

export function parsePlan(args: readonly string[]): LoadPlan {
  const flags = new Map(args.filter((arg) => arg.startsWith("--")).map((arg) => {
    const at = arg.indexOf("=");
    return at < 0 ? [arg.slice(2), ""] as const : [arg.slice(2, at), arg.slice(at + 1)] as const;
  }));
  const list = <T extends string>(name: string, fallback: string, allowed: readonly T[]): T[] => (flags.get(name) ?? fallback).split(",").map((value) => {
    if (!allowed.includes(value as T)) throw new Error(`--${name}: ${value} is not one of ${allowed.join(", ")}`);
    return value as T;
  });
  return {
    platforms: list("platforms", "telegram,discord", ["telegram", "discord"] as const),
    topologies: list("topologies", "all,split", ["all", "split"] as const),
    rates: (flags.get("rates") ?? "25").split(",").map(Number).filter((rate) => rate > 0),
    seconds: Number(flags.get("seconds") ?? 60),
    users: Number(flags.get("users") ?? 1_000),
    toolShare: Number(flags.get("tool-share") ?? 0.2),
    longShare: Number(flags.get("long-share") ?? 0.05),
    drainSeconds: Number(flags.get("drain") ?? 120),
    stages: flags.has("stages"),
    patient: flags.has("patient"),
    ttftMs: Number(flags.get("ttft-ms") ?? 1_000),
    tokensPerSecond: Number(flags.get("tokens-per-second") ?? 30),
    answerTokens: Number(flags.get("answer-tokens") ?? 90),
  };
}

/** LONGHAUL_TEST_BUILD_DIR naming a build (`tsc -p tsconfig.build.json --outDir <dir>`): used as it is and kept. */
export function reuseOrBuild(): { remove(): void } {
  const kept = process.env.LONGHAUL_TEST_BUILD_DIR;
  if (kept && existsSync(`${kept}/src/main.js`)) return { remove: () => undefined };
  const started = Date.now();
  const build = buildForChildProcesses();
  progress(`built in ${((Date.now() - started) / 1_000).toFixed(0)} s`);
  return build;
}

export const progress = (text: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${text}\n`);

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const plan = parsePlan(args);
  const build = reuseOrBuild();
  const redis = await startRedisServer();
  const llm = await startPacedLlm(plan);
  const results: RunResult[] = [];
  try {
    for (const platform of plan.platforms) {
      for (const topology of plan.topologies) {
        for (const rate of plan.rates) {
          const result = await runOnce(plan, platform, topology, rate, redis.url, llm.url, llm.stats);
          results.push(result);
          console.error(report(plan, [result]).split("\n").slice(2, 5).join("\n"));
        }
      }
    }
    const output = report(plan, results);
    console.log(output);
    return output;
  } finally {
    await llm.close();
    await redis.dispose();
    build.remove();
  }
}

if (isMain(import.meta.url)) await main();
