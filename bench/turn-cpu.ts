/**
 * `npx tsx bench/turn-cpu.ts [turns=300] [runs=5]`: CPU time of the engine's work per turn, in
 * isolation from Redis commits, queues and HTTP: `runTurnSegments` of a TurnEngine wired as
 * workers/worker-role.ts wires it (the context manager with the memory hooks, the built-in
 * tools, the media engine's vision gate around the client, message time stamps), answered by
 * an in-process LlmClient that costs nothing, followed by the idle-compaction decision a commit
 * makes (`shouldScheduleIdleCompaction`). The memory and schedule services sit on a private
 * redis-server; a text turn does not call them once the memory snapshot is taken. No budgets.
 *
 * Two sessions: a new one (the system prompt and a few exchanges) and a four-week one whose
 * live context is at the size compaction keeps it (~240,000 characters, ~60,000 tokens; past
 * the idle mark). Every turn starts from the state as the worker loads it (parsed from JSON,
 * token counts cached on the messages), adds one ~160-character message and gets a
 * 600-character answer in one step. CPU is this process's user + system time
 * (process.cpuUsage) around each turn; the table gives the median turn of each run, and the
 * median and range of those over the runs.
 *
 * The engine runs from the compiled build (tsc, as the worker processes run it; compiled into
 * .tmp/ first), not through tsx, whose helpers wrap every closure the engine creates.
 */
import { spawnSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type { TurnEngine } from "../src/agent/index.js";
import type { ChatRequest, ChatResult, LlmClient } from "../src/core/llm.js";
import type { ChatMessage } from "../src/core/messages.js";
import type { SessionState } from "../src/session/state.js";
import type { InboxEntry } from "../src/session/store.js";
import { isMain, median, table } from "./stats.js";
import { withPrivateRedis, words } from "./store-session.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** Compiles src/, workers/ and config/ as the worker processes run them, into a directory of this run's own. */
function build(): { dir: string; remove(): void } {
  const dir = `${ROOT}.tmp/turn-cpu-${process.pid}`;
  rmSync(dir, { recursive: true, force: true });
  // The nearest node_modules up from here (a copy of an older tree under .tmp/ has none of its own).
  let tsc = `${ROOT}node_modules/typescript/bin/tsc`;
  for (let up = ROOT; !existsSync(tsc) && up !== "/"; up = dirname(up)) tsc = `${dirname(up)}/node_modules/typescript/bin/tsc`;
  const result = spawnSync(process.execPath, [tsc, "-p", `${ROOT}tsconfig.build.json`, "--outDir", dir], { cwd: ROOT, encoding: "utf8" });
  if (!existsSync(`${dir}/src/agent/index.js`)) throw new Error(`build failed:\n${result.stdout}${result.stderr}`);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The engine's modules, from the build. */
async function modules(dir: string) {
  const load = <T>(path: string): Promise<T> => import(`${dir}/${path}`) as Promise<T>;
  return {
    agent: await load<typeof import("../src/agent/index.js")>("src/agent/index.js"),
    idle: await load<typeof import("../src/agent/idle-compaction.js")>("src/agent/idle-compaction.js"),
    hooks: await load<typeof import("../src/memory/context-hooks.js")>("src/memory/context-hooks.js"),
    sessionContext: await load<typeof import("../src/session-context/session-context.js")>("src/session-context/session-context.js"),
    config: await load<typeof import("../config/index.js")>("config/index.js"),
    logger: await load<typeof import("../src/logger.js")>("src/logger.js"),
    media: await load<typeof import("../src/media/index.js")>("src/media/index.js"),
    memory: await load<typeof import("../src/memory/index.js")>("src/memory/index.js"),
    queue: await load<typeof import("../src/queue/index.js")>("src/queue/index.js"),
    schedule: await load<typeof import("../src/schedule/index.js")>("src/schedule/index.js"),
    state: await load<typeof import("../src/session/state.js")>("src/session/state.js"),
    tools: await load<typeof import("../src/tools/index.js")>("src/tools/index.js"),
  };
}

const DAY = 86_400_000;
const SESSION_KEY = "tg:1000000001";

/** Answers at once with a fixed text; reports prompt_tokens as the session's provider would (set per session). */
function instantLlm(model: string, contextWindow: number): LlmClient & { promptTokens: number; calls: number } {
  const answer = words(7, 600);
  return {
    model,
    contextWindow,
    promptTokens: 0,
    calls: 0,
    async complete(_request: ChatRequest): Promise<ChatResult> {
      this.calls++;
      return { content: answer, toolCalls: [], finishReason: "stop", model, usage: { promptTokens: this.promptTokens, completionTokens: 150, cachedTokens: 0 } };
    },
  };
}

/**
 * A live context of `pairs` exchanges (a ~200-character message, a 600-character answer) spread
 * over four weeks.
 */
function liveContext(systemPrompt: string, pairs: number, startAt: number): ChatMessage[] {
  const live: ChatMessage[] = [{ id: "m1", at: startAt, role: "system", content: systemPrompt }];
  let seq = 1;
  const step = (28 * DAY) / pairs;
  for (let index = 0; index < pairs; index++) {
    const at = startAt + Math.floor(index * step);
    live.push(
      { id: `m${++seq}`, at, role: "user", content: `[Tue 2026-12-01 10:44 UTC] ${words(seq, 200)}` },
      { id: `m${++seq}`, at: at + 5_000, role: "assistant", content: words(seq, 600) },
    );
  }
  return live;
}

/**
 * Exchanges in the four-week session: ~52,000 tokens of ours, ~57,000 of the provider's (× 1.1),
 * between the idle mark (0.7 × the threshold, 44,800 of a 128K window) and the in-loop threshold
 * (64,000), where compaction keeps a long session. These words take ~3.1 characters a token, so
 * that is ~165,000 characters.
 */
const FOUR_WEEK_PAIRS = 150;

export async function main(args: string[] = []): Promise<string> {
  const turns = Number(args[0] ?? 300);
  const runs = Number(args[1] ?? 5);
  const built = build();
  try {
    return await measure(await modules(built.dir), turns, runs);
  } finally {
    built.remove();
  }
}

async function measure(m: Awaited<ReturnType<typeof modules>>, turns: number, runs: number): Promise<string> {
  const { runTurnSegments } = m.agent;
  const { shouldScheduleIdleCompaction } = m.idle;
  const { createMemoryHooks } = m.hooks;
  const { createContextManager } = m.sessionContext;
  const { silentLogger } = m.logger;
  const { createMediaEngine, redisVisionMemory } = m.media;
  const { createMemoryTool, MemoryService, MemoryStore } = m.memory;
  const { createFiringQueue } = m.queue;
  const { createScheduleTool, scheduleSettingsFrom, ScheduleService, ScheduleStore } = m.schedule;
  const { newSessionState } = m.state;
  const { createRecallTool, currentTimeTool, ToolCatalog } = m.tools;
  const config = m.config.loadConfig({ LLM_BASE_URL: "http://127.0.0.1:9/v1", LLM_API_KEY: "bench", LOG_LEVEL: "silent" });
  return withPrivateRedis({}, async (redis) => {
    const prefix = "turncpu";
    const llm = instantLlm(config.LLM_MODEL, 128_000);
    const memory = new MemoryService(new MemoryStore(redis, prefix), {
      userMaxChars: config.MEMORY_USER_MAX_CHARS, chatMaxChars: config.MEMORY_CHAT_MAX_CHARS, pinsMaxChars: config.MEMORY_PINS_MAX_CHARS,
    });
    const firingQueue = createFiringQueue(redis, prefix);
    const schedule = new ScheduleService({ store: new ScheduleStore(redis, prefix), alarms: firingQueue, settings: scheduleSettingsFrom(config) });
    const tools = new ToolCatalog({ builtins: [currentTimeTool, createRecallTool(), createScheduleTool(schedule), createMemoryTool(memory)], logger: silentLogger });
    const media = createMediaEngine({
      sources: {},
      limits: { maxAudioBytes: 1, maxFileBytes: 1, timeoutMs: 1_000, maxMessageChars: config.MAX_MESSAGE_CHARS, extract: { memoryMb: 1, timeoutMs: 1, maxPages: 1, maxChars: 1 } },
      vision: { mode: config.LLM_VISION, detail: config.VISION_DETAIL, model: config.LLM_MODEL, memory: redisVisionMemory(redis, prefix) },
      log: silentLogger,
    });
    const unusedSummarizer = { model: llm.model, contextWindow: llm.contextWindow, summarize: () => Promise.reject(new Error("the bench never compacts")) };
    const context = createContextManager({
      llm,
      summarizer: unusedSummarizer,
      settings: {
        hygieneThreshold: config.HYGIENE_THRESHOLD, compactionThreshold: config.COMPACTION_THRESHOLD, targetRatio: config.COMPACTION_TARGET_RATIO,
        protectLastN: config.PROTECT_LAST_N, replyTokens: config.LLM_MAX_OUTPUT_TOKENS,
      },
      tools: () => tools.builtinDefinitions(),
      hooks: createMemoryHooks({ service: memory, llm, flushMaxTokens: config.MEMORY_FLUSH_MAX_TOKENS, now: () => Date.now() }),
    });
    context.warmUp();
    const engine: TurnEngine = {
      llm: media.vision.wrap(llm),
      media,
      tools,
      context,
      memory,
      schedule,
      systemPrompt: config.SYSTEM_PROMPT,
      maxSteps: config.AGENT_MAX_STEPS,
      maxOutputTokens: config.LLM_MAX_OUTPUT_TOKENS,
      toolOutputMaxChars: config.TOOL_OUTPUT_MAX_CHARS,
      toolOutputs: { save: async () => undefined, read: async () => undefined },
      approval: { timeoutMs: config.APPROVAL_TIMEOUT_S * 1_000, admins: {} },
      prices: { input: 0, cachedInput: 0, output: 0 },
      idleResetMs: config.IDLE_RESET_HOURS * 3_600_000,
      messageTimeStamps: config.MESSAGE_TIMESTAMPS,
      transcriptReader: () => ({ get: async () => undefined, search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }) }),
      transcriptLength: async () => 0,
      now: () => Date.now(),
      timeZone: "Europe/Berlin",
    };
    const idle = { cacheTtlMs: config.CACHE_TTL_S * 1_000, mark: config.IDLE_COMPACTION_MARK };
    const target = { platform: "telegram" as const, chatId: SESSION_KEY.slice(3) };

    /** The session as the worker loads it: the state's JSON after one turn has set its caches. */
    const stored = async (pairs: number): Promise<string> => {
      const now = Date.now();
      const state = newSessionState(now - 28 * DAY, 1);
      state.live = liveContext(config.SYSTEM_PROMPT, pairs, now - 28 * DAY);
      state.nextSeq = state.live.length + 1;
      state.engine.systemPromptBase = config.SYSTEM_PROMPT;
      const first = await runTurnSegments(engine, { sessionKey: SESSION_KEY, state, batch: [entry(0)], target, signal: new AbortController().signal, log: silentLogger });
      const settled = first.state;
      // The provider's count of the request, as the next turn's real prompt_tokens: our estimate × 1.1.
      llm.promptTokens = Math.ceil(context.countContext(settled, settled.live) * 1.1);
      return JSON.stringify(settled);
    };
    const entry = (index: number): InboxEntry => ({
      platform: "telegram", sessionKey: SESSION_KEY, chatId: target.chatId, messageId: String(1_000 + index), userId: "7", userName: "Ada",
      chatType: "private", text: words(index, 160), sentAt: Date.now(), receivedAt: Date.now(),
    });

    const rows: Array<Array<string | number>> = [];
    for (const [label, pairs] of [["new session", 2], ["four weeks (~57,000 tokens)", FOUR_WEEK_PAIRS]] as const) {
      const json = await stored(pairs);
      const messages = (JSON.parse(json) as SessionState).live.length;
      const perRun: number[] = [];
      let scheduled = 0;
      for (let run = 0; run < runs; run++) {
        const samples: number[] = [];
        for (let turn = 0; turn < turns; turn++) {
          const state = JSON.parse(json) as SessionState;
          const batch = [entry(turn)];
          const signal = new AbortController().signal;
          const before = process.cpuUsage();
          const result = await runTurnSegments(engine, { sessionKey: SESSION_KEY, state, batch, target, signal, log: silentLogger });
          if (await shouldScheduleIdleCompaction(engine, idle, SESSION_KEY, result.state, silentLogger)) scheduled++;
          const used = process.cpuUsage(before);
          samples.push(used.user + used.system);
          if (result.replies.length !== 1) throw new Error(`turn ${turn}: ${result.replies.length} replies`);
        }
        perRun.push(median(samples));
      }
      const sorted = [...perRun].sort((a, b) => a - b);
      rows.push([label, messages, median(perRun), `${sorted[0]!.toFixed(0)}–${sorted.at(-1)!.toFixed(0)}`, scheduled > 0 ? "yes" : "no"]);
    }
    await firingQueue.close();
    const output = `Engine CPU per text turn (µs, process.cpuUsage; median turn of ${turns}, median and range over ${runs} runs)\n\n` +
      table(["session", "live messages", "µs CPU / turn", "range", "idle job scheduled"], rows);
    console.log(output);
    return output;
  });
}

if (isMain(import.meta.url)) await main(process.argv.slice(2));
