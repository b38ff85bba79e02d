/**
 * Long-session cost: one scripted multi-day conversation (default 500 turns; each turn the model
 * calls 0–3 tools whose outputs are 500–12,000 characters; deterministic, fixed seed) run
 * through the real worker (in-process gateway + worker, BullMQ on a private redis-server, the
 * fake LLM over HTTP) twice:
 *
 *   longhaul        default thresholds (hygiene 85 %, in-loop compaction 50 % of a 128K window);
 *   (a) no compaction  COMPACTION_THRESHOLD=1, HYGIENE_THRESHOLD=1, a 10M window: nothing
 *                   triggers; the bench notes the turn whose request first exceeds 128K;
 *
 * and, without a worker, over the request sequence of run (a):
 *
 *   (b) per-turn pruning  before every request, each tool result older than the last K turns
 *                   (the current one included, K=3) becomes a one-line placeholder.
 *
 * The fake LLM bills like a prefix-caching provider: prompt_tokens = the request's tokens
 * (o200k, as `requestTokens` counts them), cached_tokens = the tokens of the longest common
 * prefix (tools, then whole messages compared by JSON) with the session's previous main-model
 * request, rounded down to a multiple of 128 and 0 under 1,024 (OpenAI's rule);
 * completion_tokens = reply chars / 4. Summarizer requests are billed apart, by the same rule
 * against the previous summarizer request. In the longhaul run the fake refuses a request over
 * 128K with OpenAI's context_length_exceeded error, as the real provider would.
 *
 * The longhaul run is made once per `--ratio` (default 1.0 and 1.3, side by side): at 1.0 the
 * "provider" counts with the engine's own tokenizer (o200k), at any other ratio with a second one
 * (cl100k) × the ratio, in prompt_tokens, cached_tokens and the window check (prompt + max_tokens).
 * The summarizer follows the length its prompt asks for and stops at max_tokens; AGENT_MAX_STEPS=3
 * makes every turn with three scripted calls answer at the max-steps limit. The issue's targets
 * (no request over the window, ≥ 90 % cached, ≤ 1.5 summarizer calls per compaction) are
 * checked and printed for every ratio.
 *
 *   npx tsx bench/long-session.ts [turns=500] [--ratio=1.0,1.3] [--seed=N] [--keep-turns=3]
 *       [--price-input=2.5] [--price-cached=1.25] [--price-output=10]
 *       [--summary-price-input=…] [--summary-price-cached=…] [--summary-price-output=…]
 *
 * Prices are USD per million tokens; the same keys work as environment variables
 * (BENCH_PRICE_INPUT, BENCH_PRICE_CACHED, BENCH_PRICE_OUTPUT, BENCH_SUMMARY_PRICE_INPUT, …);
 * flags win. The summarizer defaults to the main model's prices.
 */
import { randomBytes } from "node:crypto";
import { loadConfig } from "../config/index.js";
import type { Tool } from "../src/tools/index.js";
import { shortenArguments } from "../src/context/prune.js";
import { getTokenCounter, MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS, type TokenCounter } from "../src/context/tokens.js";
import { createRedis } from "../src/queue/index.js";
import { SessionStore } from "../src/session/store.js";
import { countTokens as cl100kCount } from "gpt-tokenizer/encoding/cl100k_base";
import { overflow, startFakeLlm, textOf, type FakeChatMessage, type FakeLlm, type FakeResponse, type RecordedRequest } from "../test/fakes/fake-llm.js";
import { SummaryModel } from "../test/fakes/fake-summarizer.js";
import { isFlushRequest, isSummarizerRequest, requestTokens } from "../test/helpers/agent-fixtures.js";
import { captureLogs, startPipeline } from "../test/helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../test/helpers/recording-adapter.js";
import { startRedisServer, type RedisServerHandle } from "../test/helpers/redis-server.js";
import { isMain, median, table } from "./stats.js";

const WINDOW = 128_000;
const MODEL = "gpt-4o-mini";
const SESSION_KEY = "console:bench-long-session";
const CACHE_MIN_TOKENS = 1_024;
const CACHE_INCREMENT = 128;

// ---------------------------------------------------------------------------------------------
// Options

interface Prices {
  input: number;
  cached: number;
  output: number;
}

interface Options {
  /** Provider-to-engine token ratios, one longhaul run each. */
  ratios: number[];
  turns: number;
  seed: number;
  keepTurns: number;
  main: Prices;
  summarizer: Prices;
}

function parseOptions(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Options {
  const flags = new Map<string, string>();
  const positional: string[] = [];
  for (const arg of args) {
    const match = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (match) flags.set(match[1]!, match[2]!);
    else positional.push(arg);
  }
  const number = (flag: string, fallback: number): number => {
    const raw = flags.get(flag) ?? env[`BENCH_${flag.toUpperCase().replaceAll("-", "_")}`];
    if (raw === undefined || raw === "") return fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0) throw new Error(`--${flag}: not a number ≥ 0: ${raw}`);
    return value;
  };
  const turns = Number(positional[0] ?? flags.get("turns") ?? 500);
  if (!Number.isInteger(turns) || turns < 1) throw new Error(`turns: a positive integer, got ${positional[0]}`);
  const main = { input: number("price-input", 2.5), cached: number("price-cached", 1.25), output: number("price-output", 10) };
  const ratios = (flags.get("ratio") ?? env.BENCH_RATIO ?? "1.0,1.3").split(",").map((raw) => {
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0.5 || value > 2) throw new Error(`--ratio: numbers between 0.5 and 2, got ${raw}`);
    return value;
  });
  return {
    ratios,
    turns,
    seed: number("seed", 20240501),
    keepTurns: Math.max(1, Math.floor(number("keep-turns", 3))),
    main,
    summarizer: {
      input: number("summary-price-input", main.input),
      cached: number("summary-price-cached", main.cached),
      output: number("summary-price-output", main.output),
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The scripted conversation

/** mulberry32: small, fast, deterministic. */
function random(seed: number): () => number {
  let state = seed | 0;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type Rand = () => number;
const int = (rand: Rand, lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = <T>(rand: Rand, items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
/** Log-uniform: many small values, a few large ones, as tool outputs and messages are. */
const logUniform = (rand: Rand, lo: number, hi: number) => Math.round(Math.exp(Math.log(lo) + rand() * (Math.log(hi) - Math.log(lo))));

const WORDS = (
  "the a of to and in is for on that with as this it be are by from at or an not have we can will " +
  "invoice customer order payment refund account balance retry queue worker session cache token request " +
  "response error timeout config deploy release branch commit review test build module function value " +
  "report summary window context limit budget latency throughput database index query migration schema " +
  "user admin service client server endpoint webhook message thread channel update state version lease " +
  "should could would because however still already again after before since until while when where " +
  "check fix add remove rename move split merge update ensure handle parse format validate compute"
).split(" ");
const AREAS = ["billing", "auth", "queue", "session", "gateway", "reports", "search", "storage", "metrics", "admin"];
const NAMES = ["invoice", "handler", "client", "store", "parser", "router", "worker", "schema", "format", "policy", "retry", "index"];
const LEVELS = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"];

function prose(rand: Rand, chars: number): string {
  const sentences: string[] = [];
  let length = 0;
  while (length < chars) {
    const words = Array.from({ length: int(rand, 6, 18) }, () => (rand() < 0.08 ? `${pick(rand, NAMES)}_${int(rand, 1, 999)}` : pick(rand, WORDS)));
    const sentence = `${words.join(" ")}.`;
    sentences.push(sentence[0]!.toUpperCase() + sentence.slice(1));
    length += sentence.length + 1;
  }
  return sentences.join(" ").slice(0, chars).trim();
}

function lines(chars: number, line: () => string): string {
  const out: string[] = [];
  let length = 0;
  while (length < chars) {
    const next = line();
    out.push(next);
    length += next.length + 1;
  }
  return out.join("\n").slice(0, chars);
}

type ToolName = "read_file" | "run_command" | "search_code" | "fetch_url";

function toolOutput(name: ToolName, chars: number, seed: number): string {
  const rand = random(seed);
  const ident = () => `${pick(rand, NAMES)}${pick(rand, AREAS)[0]!.toUpperCase()}${pick(rand, WORDS)}`;
  switch (name) {
    case "read_file": {
      let n = int(rand, 1, 400);
      return lines(chars, () => {
        const kind = rand();
        const code = kind < 0.4 ? `  const ${ident()} = await ${ident()}(${int(rand, 0, 9999)}, "${pick(rand, WORDS)}");`
          : kind < 0.6 ? `  if (${ident()}.${pick(rand, WORDS)} > ${int(rand, 0, 500)}) return ${ident()};`
          : kind < 0.8 ? `  // ${prose(rand, int(rand, 30, 90))}`
          : `export function ${ident()}(${pick(rand, WORDS)}: ${pick(rand, ["string", "number", "Order", "Session"])}): void {`;
        return `${String(n++).padStart(4)}  ${code}`;
      });
    }
    case "run_command":
      return lines(chars, () =>
        `2024-05-${String(int(rand, 1, 28)).padStart(2, "0")}T${String(int(rand, 0, 23)).padStart(2, "0")}:${String(int(rand, 0, 59)).padStart(2, "0")}:${String(int(rand, 0, 59)).padStart(2, "0")}.${int(rand, 100, 999)}Z ${pick(rand, LEVELS)} [${pick(rand, AREAS)}] ${prose(rand, int(rand, 20, 80))} id=${int(rand, 0, 2 ** 31).toString(16)} ms=${int(rand, 1, 900)}`);
    case "search_code":
      return lines(chars, () => `src/${pick(rand, AREAS)}/${pick(rand, NAMES)}.ts:${int(rand, 1, 900)}:  ${ident()}(${pick(rand, WORDS)}, ${int(rand, 0, 99)});`);
    case "fetch_url":
      return lines(chars, () => (rand() < 0.15 ? `## ${prose(rand, int(rand, 15, 40))}` : prose(rand, int(rand, 120, 480))));
  }
}

interface ScriptedCall {
  id: string;
  turn: number;
  name: ToolName;
  args: Record<string, unknown>;
  outputChars: number;
  seed: number;
}

interface ScriptedTurn {
  turn: number;
  user: string;
  calls: ScriptedCall[];
  answer: string;
}

interface Script {
  turns: ScriptedTurn[];
  /** `name:JSON(args)` → the call, for the tools to find their output. */
  byArgs: Map<string, ScriptedCall>;
  byCallId: Map<string, ScriptedCall>;
}

const argsKey = (name: string, args: unknown) => `${name}:${JSON.stringify(args)}`;

/** How a script's turns are drawn: the default is the 500-turn coding session; the edge scenarios use a lighter chat. */
interface ScriptProfile {
  /** Share of user messages that also carry a pasted log of 2–8K chars. */
  pasteRate: number;
  /** Cumulative shares of turns with at most 0, 1, 2 tool calls (the rest have 3). */
  calls: readonly [number, number, number];
  /** Tool outputs, log-uniform between these (chars). */
  outputChars: readonly [number, number];
}

const CODING_SESSION: ScriptProfile = { pasteRate: 0.04, calls: [0.25, 0.6, 0.85], outputChars: [500, 12_000] };

function buildScript(turns: number, seed: number, profile: ScriptProfile = CODING_SESSION): Script {
  const rand = random(seed);
  const byArgs = new Map<string, ScriptedCall>();
  const byCallId = new Map<string, ScriptedCall>();
  const script: ScriptedTurn[] = [];
  for (let turn = 1; turn <= turns; turn++) {
    // A chat message; now and then a pasted log.
    let user = prose(rand, logUniform(rand, 20, 600));
    if (rand() < profile.pasteRate) user += `\n\n${toolOutput("run_command", logUniform(rand, 2_000, 8_000), int(rand, 1, 2 ** 30))}`;
    const roll = rand();
    const count = roll < profile.calls[0] ? 0 : roll < profile.calls[1] ? 1 : roll < profile.calls[2] ? 2 : 3;
    const calls: ScriptedCall[] = [];
    for (let k = 0; k < count; k++) {
      const toolRoll = rand();
      const name: ToolName = toolRoll < 0.4 ? "read_file" : toolRoll < 0.65 ? "run_command" : toolRoll < 0.85 ? "search_code" : "fetch_url";
      let args: Record<string, unknown>;
      do {
        const area = pick(rand, AREAS);
        const file = pick(rand, NAMES);
        args = name === "read_file" ? { path: `src/${area}/${file}.ts`, start_line: 1 + 40 * int(rand, 0, 30) }
          : name === "run_command" ? { command: `npm test -- src/${area}/${file}.test.ts -t "${pick(rand, WORDS)} ${pick(rand, WORDS)}"` }
          : name === "search_code" ? { query: `${pick(rand, WORDS)}${pick(rand, NAMES)}`, glob: `src/${area}/**/*.ts` }
          : { url: `https://docs.example.com/${area}/${file}?page=${int(rand, 1, 60)}` };
      } while (byArgs.has(argsKey(name, args)));
      const call: ScriptedCall = { id: `call_t${turn}_${k}`, turn, name, args, outputChars: logUniform(rand, profile.outputChars[0], profile.outputChars[1]), seed: int(rand, 1, 2 ** 30) };
      calls.push(call);
      byArgs.set(argsKey(name, args), call);
      byCallId.set(call.id, call);
    }
    script.push({ turn, user, calls, answer: prose(rand, logUniform(rand, 80, 1_500)) });
  }
  return { turns: script, byArgs, byCallId };
}

const TOOL_DEFINITIONS: Record<ToolName, { description: string; properties: Record<string, unknown>; required: string[] }> = {
  read_file: { description: "Read a file of the project, from a line on.", properties: { path: { type: "string" }, start_line: { type: "integer" } }, required: ["path"] },
  run_command: { description: "Run a shell command in the project and return its output.", properties: { command: { type: "string" } }, required: ["command"] },
  search_code: { description: "Search the code base for a pattern.", properties: { query: { type: "string" }, glob: { type: "string" } }, required: ["query"] },
  fetch_url: { description: "Fetch a web page as text.", properties: { url: { type: "string" } }, required: ["url"] },
};

function scriptTools(script: Script): Tool[] {
  const outputs = new Map<string, string>();
  return (Object.keys(TOOL_DEFINITIONS) as ToolName[]).map((name) => ({
    definition: {
      type: "function",
      function: { name, description: TOOL_DEFINITIONS[name].description, parameters: { type: "object", properties: TOOL_DEFINITIONS[name].properties, required: TOOL_DEFINITIONS[name].required } },
    },
    async run(args) {
      const key = argsKey(name, args);
      const call = script.byArgs.get(key);
      if (!call) throw new Error(`unscripted call ${key}`);
      let output = outputs.get(key);
      if (output === undefined) outputs.set(key, (output = toolOutput(name, call.outputChars, call.seed)));
      return output;
    },
  }));
}

// ---------------------------------------------------------------------------------------------
// Billing as a prefix-caching provider

/** Every distinct wire message (by JSON) once, with its token count as `requestTokens` counts it (o200k) and in the second tokenizer (cl100k). */
class MessageTable {
  readonly tokens: number[] = [];
  /** The same messages in the "provider's" second tokenizer (cl100k, the same framing). */
  readonly secondTokens: number[] = [];
  /** The scripted turn of a tool result, -1 for other messages. */
  readonly toolTurn: number[] = [];
  readonly #ids = new Map<string, number>();
  readonly #placeholders = new Map<number, number>();
  readonly #toolMessages = new Map<number, FakeChatMessage>();
  readonly #toolsIds = new Map<string, { id: number; tokens: number; secondTokens: number }>();

  constructor(private readonly counter: TokenCounter, private readonly script: Script) {}

  intern(message: FakeChatMessage): number {
    const key = JSON.stringify(message);
    let id = this.#ids.get(key);
    if (id !== undefined) return id;
    id = this.tokens.length;
    this.#ids.set(key, id);
    const text = textOf(message.content);
    const calls = message.role === "assistant" && message.tool_calls && message.tool_calls.length > 0 ? JSON.stringify(message.tool_calls) : "";
    this.tokens.push(MESSAGE_OVERHEAD_TOKENS + this.counter.countText(text) + (calls === "" ? 0 : this.counter.countText(calls)));
    this.secondTokens.push(MESSAGE_OVERHEAD_TOKENS + secondCount(text) + (calls === "" ? 0 : secondCount(calls)));
    const call = message.role === "tool" ? this.script.byCallId.get(message.tool_call_id ?? "") : undefined;
    this.toolTurn.push(call ? call.turn : -1);
    if (call) this.#toolMessages.set(id, message);
    return id;
  }

  tools(tools: unknown[] | undefined): { id: number; tokens: number; secondTokens: number } {
    const key = JSON.stringify(tools ?? []);
    let entry = this.#toolsIds.get(key);
    const some = tools !== undefined && tools.length > 0;
    if (!entry) this.#toolsIds.set(key, (entry = { id: this.#toolsIds.size, tokens: some ? this.counter.countText(key) : 0, secondTokens: some ? secondCount(key) : 0 }));
    return entry;
  }

  /** The one-line placeholder per-turn pruning puts in place of a tool result (as longhaul's prune phase words it). */
  placeholder(id: number): number {
    let placeholder = this.#placeholders.get(id);
    if (placeholder !== undefined) return placeholder;
    const message = this.#toolMessages.get(id)!;
    const call = this.script.byCallId.get(message.tool_call_id!)!;
    const content = `[tool output pruned: ${call.name} ${shortenArguments(JSON.stringify(call.args))} · ${textOf(message.content).length.toLocaleString("en-US")} chars · recall("${call.id}") to fetch it]`;
    placeholder = this.intern({ role: "tool", tool_call_id: message.tool_call_id!, content });
    this.#placeholders.set(id, placeholder);
    return placeholder;
  }
}

interface Billed {
  turn: number;
  prompt: number;
  cached: number;
  completion: number;
}

interface MainRecord extends Billed {
  ids: Int32Array;
  tools: number;
  toolsTokens: number;
  /** The max_tokens the request asked for (the window must hold it too). */
  maxTokens: number;
  /** The silent memory flush before a fold. */
  flush?: boolean;
}

/** The second tokenizer: cl100k, special-token text counted as text. */
const secondCount = (text: string): number => (text === "" ? 0 : cl100kCount(text, { disallowedSpecial: new Set() }));

/**
 * How the "provider" counts: at ratio 1 with the engine's own tokenizer (o200k, exact); at any
 * other ratio with a second tokenizer (cl100k) × the ratio, as Claude, Llama or Qwen count
 * differently from o200k, and differently per kind of text.
 */
interface Provider {
  ratio: number;
  label: string;
  messageTokens: readonly number[];
  toolsTokens(tools: { tokens: number; secondTokens: number }): number;
}

function providerFor(table: MessageTable, ratio: number): Provider {
  return ratio === 1
    ? { ratio, label: "o200k (the engine's tokenizer)", messageTokens: table.tokens, toolsTokens: (tools) => tools.tokens }
    : { ratio, label: `cl100k × ${ratio}`, messageTokens: table.secondTokens, toolsTokens: (tools) => tools.secondTokens };
}

/** One session's previous request, the prefix the provider has cached. */
class PrefixCache {
  #previous?: { ids: Int32Array; tools: number };

  constructor(private readonly provider: Provider) {}

  /** The request's prompt in the provider's tokens, without billing it (a refused request caches nothing). */
  prompt(ids: Int32Array, toolsTokens: number): number {
    let raw = REPLY_PRIMING_TOKENS + toolsTokens;
    for (const id of ids) raw += this.provider.messageTokens[id]!;
    return Math.ceil(raw * this.provider.ratio);
  }

  /** `toolsTokens`: the tool definitions in the provider's own tokenizer, before the ratio. */
  bill(ids: Int32Array, tools: number, toolsTokens: number): { prompt: number; cached: number } {
    const tokens = this.provider.messageTokens;
    let prefix = 0;
    const previous = this.#previous;
    if (previous && previous.tools === tools) {
      prefix = toolsTokens;
      const common = Math.min(previous.ids.length, ids.length);
      for (let index = 0; index < common && previous.ids[index] === ids[index]; index++) prefix += tokens[ids[index]!]!;
    }
    this.#previous = { ids, tools };
    const prompt = this.prompt(ids, toolsTokens);
    const cachedPrefix = Math.floor(prefix * this.provider.ratio);
    const cached = cachedPrefix >= CACHE_MIN_TOKENS ? Math.min(prompt, Math.floor(cachedPrefix / CACHE_INCREMENT) * CACHE_INCREMENT) : 0;
    return { prompt, cached };
  }
}

const WIRE_FIELDS = new Set(["role", "content", "tool_calls", "tool_call_id"]);

/** The same JSON, checked without serializing the (large) contents: same fields in the same order, equal strings. */
function sameWireMessage(a: FakeChatMessage, b: FakeChatMessage): boolean {
  const aKeys = Object.keys(a);
  const bKeys = Object.keys(b);
  if (aKeys.length !== bKeys.length || aKeys.some((key, index) => key !== bKeys[index] || !WIRE_FIELDS.has(key))) return false;
  if (a.role !== b.role || a.tool_call_id !== b.tool_call_id) return false;
  if (!(typeof a.content === "string" || a.content === null) || a.content !== b.content) return false;
  return a.tool_calls === undefined || JSON.stringify(a.tool_calls) === JSON.stringify(b.tool_calls);
}

/**
 * Interns a chain of requests (one session's main-model requests, or its summarizer requests).
 * Consecutive requests mostly repeat the previous one's messages: those are matched by position
 * first, which spares serializing megabytes per request in the run without compaction.
 */
class RequestInterner {
  #previous?: { messages: FakeChatMessage[]; ids: Int32Array };

  constructor(private readonly table: MessageTable) {}

  ids(messages: FakeChatMessage[]): Int32Array {
    const previous = this.#previous;
    const ids = Int32Array.from(messages, (message, index) => {
      const before = previous?.messages[index];
      return before !== undefined && sameWireMessage(message, before) ? previous!.ids[index]! : this.table.intern(message);
    });
    this.#previous = { messages, ids };
    return ids;
  }
}

const completionTokens = (chars: number) => Math.max(1, Math.ceil(chars / 4));

// ---------------------------------------------------------------------------------------------
// A run through the real worker

interface CompactionLog {
  /** The turn it ran in (set from the log line's time). */
  turn: number;
  reason: string;
  status: string;
  tokensBefore: number;
  tokensAfter: number;
  summarizerCalls: number;
  chunks: number;
}

interface WorkerRun {
  label: string;
  main: MainRecord[];
  summarizer: Billed[];
  compactions: CompactionLog[];
  /** Requests the fake refused as over the window (context_length_exceeded). */
  refused: number;
  replyMismatches: number;
  notices: string[];
  /** Log lines at warn or above, by message. */
  warnings: Map<string, number>;
  stats: { compactions: number; promptTokens: number; cachedTokens: number; summarizerPromptTokens: number; summarizerCompletionTokens: number };
  seconds: number;
  tokenChecks: { checked: number; failed: number };
  /** Provider tokens per engine token (1: the engine's own tokenizer). */
  ratio: number;
  provider: string;
  /** Steps at AGENT_MAX_STEPS (tool_choice "none") the model answered. */
  maxStepsAnswers: number;
  /** Summaries cut at max_tokens (finish_reason "length"). */
  lengthStops: number;
}

interface Shared {
  redis: RedisServerHandle;
  llm: FakeLlm;
  script: Script;
  table: MessageTable;
  tools: Tool[];
}

async function runWorker(shared: Shared, label: string, overrides: Record<string, string>, enforceWindow: number | undefined, ratio = 1): Promise<WorkerRun> {
  const { llm, script, table } = shared;
  const provider = providerFor(table, ratio);
  const run: WorkerRun = {
    label, main: [], summarizer: [], compactions: [], refused: 0, replyMismatches: 0, notices: [], warnings: new Map(),
    stats: { compactions: 0, promptTokens: 0, cachedTokens: 0, summarizerPromptTokens: 0, summarizerCompletionTokens: 0 }, seconds: 0,
    tokenChecks: { checked: 0, failed: 0 }, ratio, provider: provider.label, maxStepsAnswers: 0, lengthStops: 0,
  };
  const mainCache = new PrefixCache(provider);
  const summarizerCache = new PrefixCache(provider);
  // Summaries that follow the length the prompt asks for, in the summarizer's own unit, and stop at max_tokens.
  const summaryModel = new SummaryModel();
  let currentTurn = 0;

  const mainInterner = new RequestInterner(table);
  const summarizerInterner = new RequestInterner(table);
  const intern = (request: RecordedRequest, interner: RequestInterner) => ({ ids: interner.ids(request.body.messages), tools: table.tools(request.body.tools) });
  // Spot-check that the memoized count is `requestTokens` exactly (on requests small enough to recount fast).
  const check = (request: RecordedRequest, ids: Int32Array, tools: { tokens: number }) => {
    let prompt = REPLY_PRIMING_TOKENS + tools.tokens;
    for (const id of ids) prompt += table.tokens[id]!;
    if (run.tokenChecks.checked >= 12 || prompt > 20_000) return;
    run.tokenChecks.checked++;
    if (requestTokens(request, MODEL) !== prompt) run.tokenChecks.failed++;
  };

  llm.setHandler((request): FakeResponse => {
    const { ids, tools } = intern(request, mainInterner);
    llm.requests.length = 0; // the bodies of a long run would fill the memory
    // The silent memory flush before a fold (src/memory/flush.ts): billed like any main-model
    // request (same prefix cache), answered "nothing to save".
    if (isFlushRequest(request)) {
      const billed = mainCache.bill(ids, tools.id, provider.toolsTokens(tools));
      const maxTokens = Number(request.body.max_tokens ?? request.body.max_completion_tokens ?? 0);
      const completion = Math.ceil(ratio * completionTokens("NO_REPLY".length));
      run.main.push({ turn: currentTurn, ...billed, completion, ids, tools: tools.id, toolsTokens: provider.toolsTokens(tools), maxTokens, flush: true });
      return { text: "NO_REPLY", usage: { prompt_tokens: billed.prompt, completion_tokens: completion, prompt_tokens_details: { cached_tokens: billed.cached } } };
    }
    const messages = request.body.messages;
    let lastUser = messages.length - 1;
    while (lastUser >= 0 && messages[lastUser]!.role !== "user") lastUser--;
    const step = messages.slice(lastUser + 1).filter((message) => message.role === "assistant").length;
    const scripted = script.turns[currentTurn - 1]!;
    // The last step of a turn at AGENT_MAX_STEPS (tool_choice "none") must answer.
    const lastStep = request.body.tool_choice === "none";
    if (lastStep) run.maxStepsAnswers++;
    const call = lastStep ? undefined : scripted.calls[step];
    // As OpenAI counts it: the prompt plus the max_tokens asked for must fit.
    const maxTokens = Number(request.body.max_tokens ?? request.body.max_completion_tokens ?? 0);
    const requested = mainCache.prompt(ids, provider.toolsTokens(tools)) + maxTokens;
    if (enforceWindow !== undefined && requested > enforceWindow) {
      run.refused++;
      return overflow.openai({ contextWindow: enforceWindow, requested });
    }
    const billed = mainCache.bill(ids, tools.id, provider.toolsTokens(tools));
    check(request, ids, tools);
    const toolCalls = call ? [{ id: call.id, name: call.name, arguments: call.args }] : undefined;
    const completion = Math.ceil(ratio * completionTokens(call ? JSON.stringify([{ id: call.id, type: "function", function: { name: call.name, arguments: JSON.stringify(call.args) } }]).length : scripted.answer.length));
    run.main.push({ turn: currentTurn, ...billed, completion, ids, tools: tools.id, toolsTokens: provider.toolsTokens(tools), maxTokens });
    const usage = { prompt_tokens: billed.prompt, completion_tokens: completion, prompt_tokens_details: { cached_tokens: billed.cached } };
    return toolCalls ? { text: null, toolCalls, usage } : { text: scripted.answer, usage };
  });
  const unroute = llm.route(isSummarizerRequest, (request): FakeResponse => {
    const { ids, tools } = intern(request, summarizerInterner);
    llm.requests.length = 0;
    const maxTokens = request.body.max_tokens ?? (request.body.max_completion_tokens as number | undefined);
    const requested = summarizerCache.prompt(ids, provider.toolsTokens(tools)) + (maxTokens ?? 0);
    if (enforceWindow !== undefined && requested > enforceWindow) {
      run.refused++;
      return overflow.openai({ contextWindow: enforceWindow, requested });
    }
    const billed = summarizerCache.bill(ids, tools.id, provider.toolsTokens(tools));
    check(request, ids, tools);
    // Writes about the length the prompt asks for ("about N tokens"), every heading of the template; cut at max_tokens.
    const messages = request.body.messages;
    const answer = summaryModel.answer(
      messages.filter((message) => message.role === "system").map((message) => textOf(message.content)).join("\n"),
      messages.filter((message) => message.role === "user").map((message) => textOf(message.content)).join("\n"),
      maxTokens,
    );
    if (answer.finishReason === "length") run.lengthStops++;
    const completion = Math.ceil(ratio * completionTokens(answer.content.length));
    run.summarizer.push({ turn: currentTurn, ...billed, completion });
    return { text: answer.content, finishReason: answer.finishReason, usage: { prompt_tokens: billed.prompt, completion_tokens: completion, prompt_tokens_details: { cached_tokens: billed.cached } } };
  });

  const prefix = `bench${randomBytes(4).toString("hex")}`;
  const config = loadConfig({
    REDIS_URL: shared.redis.url, REDIS_PREFIX: prefix,
    LLM_BASE_URL: llm.url, LLM_API_KEY: "sk-bench-not-a-key", LLM_MODEL: MODEL, LLM_CONTEXT_WINDOW: String(WINDOW),
    HTTP_PORT: "0", LOG_LEVEL: "silent", CONSOLE: "off", RATE_LIMIT_PER_MINUTE: "0", LLM_MAX_RETRIES: "0",
    ...overrides,
  });
  const adapter = new RecordingAdapter("console");
  const logs = captureLogs("info");
  const pipeline = await startPipeline(config, [adapter], { logs, tools: shared.tools });
  const started = performance.now();
  const turnStartedAt: number[] = [];
  try {
    for (const scripted of script.turns) {
      currentTurn = scripted.turn;
      turnStartedAt.push(Date.now());
      await adapter.submit(inbound({ text: scripted.user, messageId: `${prefix}-t${scripted.turn}`, chatId: "bench-long-session", sessionKey: SESSION_KEY }));
      await adapter.waitFor((sent) => sent.length >= scripted.turn, 300_000);
      const reply = adapter.sent[scripted.turn - 1]!.reply.text;
      // A compaction notice (COMPACTION_NOTICE) may precede the answer.
      if (reply !== scripted.answer && !reply.endsWith(`\n\n${scripted.answer}`)) {
        run.replyMismatches++;
        if (run.notices.length < 5) run.notices.push(`turn ${scripted.turn}: ${reply.slice(0, 160)}`);
      }
      if (scripted.turn % 100 === 0) process.stderr.write(`  ${label}: turn ${scripted.turn}/${script.turns.length} (${((performance.now() - started) / 1000).toFixed(0)} s)\n`);
    }
    run.seconds = (performance.now() - started) / 1000;
  } finally {
    await pipeline.close();
    unroute();
  }

  for (const chunk of logs.lines) {
    for (const line of chunk.split("\n")) {
      if (line.trim() === "") continue;
      const entry = JSON.parse(line) as { level: number; msg?: string };
      if (entry.level >= 40) run.warnings.set(entry.msg ?? "?", (run.warnings.get(entry.msg ?? "?") ?? 0) + 1);
      if (entry.msg !== "compaction-finished") continue;
      const parsed = entry as unknown as { time: number; compaction: CompactionLog };
      const turn = turnStartedAt.findLastIndex((at) => at <= parsed.time) + 1;
      run.compactions.push({ ...parsed.compaction, turn });
    }
  }
  const redis = createRedis(shared.redis.url);
  try {
    const state = await new SessionStore(redis, prefix).load(SESSION_KEY);
    run.stats = state.stats;
  } finally {
    redis.disconnect();
  }
  return run;
}

// ---------------------------------------------------------------------------------------------
// (b) Per-turn pruning, simulated over run (a)'s requests

function perTurnPruning(base: WorkerRun, table: MessageTable, keepTurns: number): WorkerRun {
  const cache = new PrefixCache(providerFor(table, base.ratio));
  const main = base.main.map((request): MainRecord => {
    const ids = request.ids.map((id) => {
      const turn = table.toolTurn[id]!;
      return turn >= 0 && turn <= request.turn - keepTurns ? table.placeholder(id) : id;
    });
    return { ...request, ...cache.bill(ids, request.tools, request.toolsTokens), ids };
  });
  return { ...base, label: `(b) per-turn pruning (K=${keepTurns})`, main, summarizer: [], compactions: [], seconds: 0 };
}

// ---------------------------------------------------------------------------------------------
// Report

interface Totals {
  input: number;
  cached: number;
  output: number;
  summarizerIn: number;
  summarizerCached: number;
  summarizerOut: number;
  largest: number;
  firstOver: number | undefined;
  medianTurnInput: number;
  medianTurnCost: number;
  costMain: number;
  costSummarizer: number;
}

const cost = (prices: Prices, input: number, cached: number, output: number) =>
  ((input - cached) * prices.input + cached * prices.cached + output * prices.output) / 1e6;

function totals(run: WorkerRun, options: Options, lastTurn: number): Totals {
  const main = run.main.filter((request) => request.turn <= lastTurn);
  const summarizer = run.summarizer.filter((request) => request.turn <= lastTurn);
  const sum = (list: readonly Billed[], field: "prompt" | "cached" | "completion") => list.reduce((total, request) => total + request[field], 0);
  const perTurnInput = new Map<number, number>();
  const perTurnCost = new Map<number, number>();
  for (const request of main) {
    perTurnInput.set(request.turn, (perTurnInput.get(request.turn) ?? 0) + request.prompt);
    perTurnCost.set(request.turn, (perTurnCost.get(request.turn) ?? 0) + cost(options.main, request.prompt, request.cached, request.completion));
  }
  for (const request of summarizer) perTurnCost.set(request.turn, (perTurnCost.get(request.turn) ?? 0) + cost(options.summarizer, request.prompt, request.cached, request.completion));
  const input = sum(main, "prompt");
  const cached = sum(main, "cached");
  const output = sum(main, "completion");
  const summarizerIn = sum(summarizer, "prompt");
  const summarizerCached = sum(summarizer, "cached");
  const summarizerOut = sum(summarizer, "completion");
  return {
    input, cached, output, summarizerIn, summarizerCached, summarizerOut,
    largest: Math.max(0, ...main.map((request) => request.prompt)),
    firstOver: main.find((request) => request.prompt > WINDOW)?.turn,
    medianTurnInput: median([...perTurnInput.values()]),
    medianTurnCost: median([...perTurnCost.values()]),
    costMain: cost(options.main, input, cached, output),
    costSummarizer: cost(options.summarizer, summarizerIn, summarizerCached, summarizerOut),
  };
}

/** Cost of each turn (main + summarizer requests made in it), turns 1…n. */
function costByTurn(run: WorkerRun, options: Options, turns: number): number[] {
  const costs = new Array<number>(turns + 1).fill(0);
  for (const request of run.main) costs[request.turn]! += cost(options.main, request.prompt, request.cached, request.completion);
  for (const request of run.summarizer) costs[request.turn]! += cost(options.summarizer, request.prompt, request.cached, request.completion);
  return costs.slice(1);
}

/** The first turn from which `other` has cost more in total than `base`, and stays so. */
function crossover(base: number[], other: number[]): number | undefined {
  let baseTotal = 0;
  let otherTotal = 0;
  let from: number | undefined;
  base.forEach((value, index) => {
    baseTotal += value;
    otherTotal += other[index]!;
    if (otherTotal > baseTotal) from ??= index + 1;
    else from = undefined;
  });
  return from;
}

const pct = (part: number, whole: number) => (whole === 0 ? "—" : `${((100 * part) / whole).toFixed(1)} %`);
const usd = (value: number) => `$${value.toFixed(value < 1 ? 3 : 2)}`;
const compactCount = (value: number) => (value >= 1e6 ? `${(value / 1e6).toFixed(2)}M` : value >= 1e4 ? `${(value / 1e3).toFixed(1)}K` : value.toLocaleString("en-US"));

const succeeded = (record: CompactionLog) => record.status === "compacted" || record.status === "dropped";

function compactionsCell(run: WorkerRun, lastTurn: number, workerRun: boolean): string {
  if (!workerRun) return "0 (prunes each turn)";
  const done = run.compactions.filter((record) => record.turn <= lastTurn && succeeded(record));
  const byReason = new Map<string, number>();
  for (const record of done) byReason.set(record.reason, (byReason.get(record.reason) ?? 0) + 1);
  return done.length === 0 ? "0" : `${done.length} (${[...byReason].map(([reason, count]) => `${count} ${reason}`).join(", ")})`;
}

function rows(runs: ReadonlyArray<{ run: WorkerRun; workerRun: boolean }>, options: Options, lastTurn: number) {
  return runs.map(({ run, workerRun }) => {
    const t = totals(run, options, lastTurn);
    const compactions = compactionsCell(run, lastTurn, workerRun);
    return [
      run.label,
      compactCount(t.input - t.cached),
      compactCount(t.cached),
      pct(t.cached, t.input),
      compactCount(t.output),
      t.summarizerIn === 0 ? "—" : `${compactCount(t.summarizerIn)} / ${compactCount(t.summarizerOut)}`,
      compactions,
      compactCount(t.largest),
      compactCount(t.medianTurnInput),
      t.firstOver === undefined ? "never" : `turn ${t.firstOver}`,
      usd(t.costMain + t.costSummarizer),
      t.costSummarizer === 0 ? "—" : usd(t.costSummarizer),
      `${(100 * t.medianTurnCost).toFixed(2)} ¢`,
    ];
  });
}

const HEADERS = [
  "strategy", "input uncached", "input cached", "cache hit", "output", "summarizer in / out", "compactions",
  "largest request", "median input / turn", "over 128K from", "cost", "of which summarizer", "median cost / turn",
];

/** AGENT_MAX_STEPS of every run: a turn with 3 scripted calls reaches it, so the max-steps path (tool_choice "none") runs. */
const MAX_STEPS = 3;

/** The issue's targets (#11): checked for every longhaul run. */
const TARGETS = { cacheShare: 0.9, summarizerCallsPerCompaction: 1.5 };

interface TargetCheck {
  largestWithReply: number;
  refused: number;
  cacheShare: number;
  compactions: number;
  summarizerCalls: number;
  callsPerCompaction: number;
  met: boolean;
}

function checkTargets(run: WorkerRun): TargetCheck {
  const input = run.main.reduce((sum, request) => sum + request.prompt, 0);
  const cached = run.main.reduce((sum, request) => sum + request.cached, 0);
  const largestWithReply = Math.max(0, ...run.main.map((request) => request.prompt + request.maxTokens));
  const compactions = run.compactions.length;
  const summarizerCalls = run.summarizer.length;
  const callsPerCompaction = compactions === 0 ? 0 : summarizerCalls / compactions;
  const cacheShare = input === 0 ? 0 : cached / input;
  const met = run.refused === 0 && largestWithReply <= WINDOW && cacheShare >= TARGETS.cacheShare && callsPerCompaction <= TARGETS.summarizerCallsPerCompaction;
  return { largestWithReply, refused: run.refused, cacheShare, compactions, summarizerCalls, callsPerCompaction, met };
}

// ---------------------------------------------------------------------------------------------
// Edge scenarios (issue #31): fixed overhead in a small window, a paste three times the window

/** The edge scenarios' window: a small local model's, where both edges are everyday. */
const EDGE_WINDOW = 32_000;
/** Tool definitions + system prompt of the fixed-overhead run, in the engine's tokens. */
const OVERHEAD_TOKENS = 10_000;
/** A chat with few, small tool calls: ~250 tokens a turn, close to the issue's probe (230). */
const LIGHT_CHAT: ScriptProfile = { pasteRate: 0, calls: [0.7, 1, 1], outputChars: [300, 2_000] };
const EDGE_SYSTEM_PROMPT = "You are longhaul, a helpful assistant in a long-running chat. Be concise and accurate. Use the recall tool to look up earlier details that were compacted away.";

/** Prose of about `tokens` tokens as the engine counts them (a few rescaling passes). */
function proseOfTokens(counter: TokenCounter, seed: number, tokens: number): string {
  let chars = tokens * 5;
  let text = "";
  for (let pass = 0; pass < 5; pass++) {
    text = prose(random(seed), chars);
    const count = counter.countText(text);
    if (Math.abs(count - tokens) <= Math.max(2, tokens * 0.002)) break;
    chars = Math.max(1, Math.round((chars * tokens) / count));
  }
  return text;
}

/** Tool definitions the model never calls, whose descriptions add about `tokens` to every request. */
function paddingTools(counter: TokenCounter, tokens: number, count = 8): Tool[] {
  return Array.from({ length: count }, (_, index): Tool => ({
    definition: {
      type: "function",
      function: {
        name: `reference_${index + 1}`,
        description: proseOfTokens(counter, 7_001 + index, Math.max(1, Math.round(tokens / count) - 30)),
        parameters: { type: "object", properties: { topic: { type: "string" } }, required: ["topic"] },
      },
    },
    async run() {
      return "unused";
    },
  }));
}

interface EdgeRun {
  run: WorkerRun;
  turns: number;
  /** Tool definitions + system message of the first request (engine tokens). */
  fixed: number;
  paste?: { turn: number; tokens: number };
}

/** The fixed part of a run's first main-model request: tool definitions and the system message. */
function fixedTokens(run: WorkerRun, table: MessageTable): number {
  const first = run.main.find((request) => request.flush !== true);
  return first ? first.toolsTokens + table.tokens[first.ids[0]!]! : 0;
}

function edgeRow(label: string, edge: EdgeRun): string[] {
  const { run, turns } = edge;
  const done = run.compactions.filter(succeeded);
  const other = run.compactions.filter((record) => !succeeded(record));
  const input = run.main.reduce((sum, request) => sum + request.prompt, 0);
  const cached = run.main.reduce((sum, request) => sum + request.cached, 0);
  const largest = Math.max(0, ...run.main.map((request) => request.prompt));
  const largestWithReply = Math.max(0, ...run.main.map((request) => request.prompt + request.maxTokens));
  const pasteTurn = edge.paste?.turn;
  const pasteAnswered = pasteTurn === undefined ? "—" : run.notices.some((notice) => notice.startsWith(`turn ${pasteTurn}:`)) || run.replyMismatches > 0 && run.notices.length >= 5 ? "no" : "yes";
  return [
    label,
    compactCount(edge.fixed),
    String(turns),
    `${done.length}${other.length > 0 ? ` (+${other.length} ${[...new Set(other.map((record) => record.status))].join("/")})` : ""}`,
    ((100 * done.length) / turns).toFixed(1),
    String(run.summarizer.length),
    String(run.main.filter((request) => request.flush === true).length),
    pct(cached, input),
    compactCount(largest),
    `${compactCount(largestWithReply)} (${((100 * largestWithReply) / EDGE_WINDOW).toFixed(0)} %)`,
    String(run.refused),
    `${turns - run.replyMismatches}/${turns}`,
    pasteAnswered,
  ];
}

const EDGE_HEADERS = [
  "run", "fixed overhead", "turns", "compactions", "per 100 turns", "summarizer calls", "memory flushes", "cached share",
  "largest prompt", "largest prompt + max_tokens", "refused", "replies as scripted", "paste answered",
];

async function edgeScenarios(which: string, options: Options, turnsGiven: boolean): Promise<string> {
  const counter = getTokenCounter(MODEL);
  const redis = await startRedisServer();
  const llm = await startFakeLlm();
  const window = { LLM_CONTEXT_WINDOW: String(EDGE_WINDOW), AGENT_MAX_STEPS: String(MAX_STEPS) };
  const out: string[] = [];
  const rows: string[][] = [];
  const notes: string[] = [];
  const describe = (label: string, edge: EdgeRun) => {
    const { run } = edge;
    const done = run.compactions.filter(succeeded);
    notes.push(`${label}: ${run.seconds.toFixed(1)} s; compactions at turns ${done.map((record) => record.turn).join(", ") || "—"}; ` +
      `results ${done.slice(0, 8).map((record) => `${compactCount(record.tokensBefore)}→${compactCount(record.tokensAfter)}`).join(", ") || "—"}${done.length > 8 ? ", …" : ""}; ` +
      `statuses ${[...new Set(run.compactions.map((record) => `${record.reason}/${record.status}`))].join(", ") || "—"}` +
      `${run.notices.length > 0 ? `; replies differing: ${run.notices.map((notice) => notice.slice(0, 100)).join(" | ")}` : ""}` +
      `${run.warnings.size > 0 ? `; warnings: ${[...run.warnings].map(([msg, count]) => `${count}× ${msg}`).join(", ")}` : ""}.`);
  };
  try {
    if (which === "fixed-overhead" || which === "edges") {
      const turns = turnsGiven ? options.turns : 300;
      const script = buildScript(turns, options.seed, LIGHT_CHAT);
      const table_ = new MessageTable(counter, script);
      const shared: Shared = { redis, llm, script, table: table_, tools: scriptTools(script) };
      process.stderr.write(`long-session fixed-overhead: ${turns} turns, ${EDGE_WINDOW}-token window\n`);
      const bare = await runWorker(shared, "no overhead", { ...window, SYSTEM_PROMPT: EDGE_SYSTEM_PROMPT }, EDGE_WINDOW);
      const bareEdge: EdgeRun = { run: bare, turns, fixed: fixedTokens(bare, table_) };
      // Pad to OVERHEAD_TOKENS: a third in the system prompt, the rest in tool definitions the model never calls.
      const missing = Math.max(0, OVERHEAD_TOKENS - bareEdge.fixed);
      const systemPad = Math.round(missing / 3);
      const heavyShared: Shared = { ...shared, tools: [...shared.tools, ...paddingTools(counter, missing - systemPad)] };
      const heavy = await runWorker(heavyShared, "10K overhead", { ...window, SYSTEM_PROMPT: `${EDGE_SYSTEM_PROMPT}\n\nReference notes:\n${proseOfTokens(counter, 6_999, systemPad)}` }, EDGE_WINDOW);
      const heavyEdge: EdgeRun = { run: heavy, turns, fixed: fixedTokens(heavy, table_) };
      rows.push(edgeRow("fixed-overhead: none", bareEdge), edgeRow("fixed-overhead: 10K", heavyEdge));
      describe("no overhead", bareEdge);
      describe("10K overhead", heavyEdge);
    }
    if (which === "huge-paste" || which === "edges") {
      const turns = 60;
      const pasteTurn = 41;
      const script = buildScript(turns, options.seed + 1, LIGHT_CHAT);
      // A log three times the window in the engine's count, as one message (a console paste).
      const target = 3 * EDGE_WINDOW;
      let chars = target * 3;
      let paste = "";
      for (let pass = 0; pass < 4; pass++) {
        paste = toolOutput("run_command", chars, 424_242);
        const count = counter.countText(paste);
        if (Math.abs(count - target) <= target * 0.005) break;
        chars = Math.round((chars * target) / count);
      }
      const pasteTokens = counter.countText(paste);
      script.turns[pasteTurn - 1]!.user = `Here is the whole log of last night's run, what went wrong?\n\n${paste}`;
      const table_ = new MessageTable(counter, script);
      const shared: Shared = { redis, llm, script, table: table_, tools: scriptTools(script) };
      process.stderr.write(`long-session huge-paste: ${turns} turns, a ${pasteTokens}-token paste at turn ${pasteTurn}, ${EDGE_WINDOW}-token window\n`);
      // MAX_MESSAGE_CHARS (16,000 by default) would truncate one long message at the gateway; raised,
      // the whole paste reaches the worker, as a paste joined from Telegram's 4,096-char parts does.
      const run = await runWorker(shared, "huge paste", { ...window, SYSTEM_PROMPT: EDGE_SYSTEM_PROMPT, MAX_MESSAGE_CHARS: String(2 * paste.length) }, EDGE_WINDOW);
      const edge: EdgeRun = { run, turns, fixed: fixedTokens(run, table_), paste: { turn: pasteTurn, tokens: pasteTokens } };
      rows.push(edgeRow(`huge-paste: ${compactCount(pasteTokens)} tokens at turn ${pasteTurn}`, edge));
      describe("huge paste", edge);
      const pasteRequests = run.main.filter((request) => request.turn === pasteTurn);
      notes.push(`huge paste turn: ${pasteRequests.length} main-model requests, largest prompt ${compactCount(Math.max(0, ...pasteRequests.map((request) => request.prompt)))}; summarizer calls in that turn ${run.summarizer.filter((request) => request.turn === pasteTurn).length}.`);
    }
  } finally {
    await llm.close();
    await redis.dispose();
  }
  if (rows.length === 0) throw new Error(`--scenario: coding, fixed-overhead, huge-paste or edges, got ${which}`);
  out.push(`Edge scenarios (issue #31) through the real worker: ${EDGE_WINDOW.toLocaleString("en-US")}-token window (enforced by the fake: prompt + max_tokens), defaults otherwise (compaction at 50 %, hygiene at 85 %), a light chat (70 % of turns without a tool call, outputs 300–2,000 chars), ratio 1.0, seed ${options.seed}.`);
  out.push(`Targets: no request over the window; the paste answered.\n`);
  out.push(table(EDGE_HEADERS, rows));
  out.push("");
  out.push(...notes);
  return out.join("\n");
}

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const scenario = args.find((arg) => arg.startsWith("--scenario="))?.slice("--scenario=".length) ?? "coding";
  if (scenario !== "coding") {
    const rest = args.filter((arg) => !arg.startsWith("--scenario="));
    return edgeScenarios(scenario, parseOptions(rest), rest.some((arg) => !arg.startsWith("--")));
  }
  const options = parseOptions(args);
  const script = buildScript(options.turns, options.seed);
  const counter = getTokenCounter(MODEL);
  const table_ = new MessageTable(counter, script);
  const redis = await startRedisServer();
  const llm = await startFakeLlm();
  const shared: Shared = { redis, llm, script, table: table_, tools: scriptTools(script) };
  const longhauls: WorkerRun[] = [];
  let noCompaction: WorkerRun;
  const base = { AGENT_MAX_STEPS: String(MAX_STEPS) };
  try {
    process.stderr.write(`long-session: ${options.turns} turns, seed ${options.seed}, ratios ${options.ratios.join(", ")}\n`);
    for (const ratio of options.ratios) longhauls.push(await runWorker(shared, `longhaul (defaults), ratio ${ratio.toFixed(1)}`, base, WINDOW, ratio));
    noCompaction = await runWorker(shared, "(a) no compaction", { ...base, COMPACTION_THRESHOLD: "1", HYGIENE_THRESHOLD: "1", LLM_CONTEXT_WINDOW: "10000000" }, undefined);
  } finally {
    await llm.close();
    await redis.dispose();
  }
  const pruning = perTurnPruning(noCompaction, table_, options.keepTurns);

  // The conversation itself.
  const calls = script.turns.flatMap((turn) => turn.calls);
  const outputChars = calls.map((call) => call.outputChars);
  const sampleText = calls.slice(0, 60).map((call) => toolOutput(call.name, call.outputChars, call.seed)).join("\n");
  const charsPerToken = sampleText.length / counter.countText(sampleText);
  const secondRatio = secondCount(sampleText) / counter.countText(sampleText);

  const runs = [
    ...longhauls.map((run) => ({ run, workerRun: true })),
    { run: noCompaction, workerRun: true },
    { run: pruning, workerRun: false },
  ];
  const aTotals = totals(noCompaction, options, options.turns);
  const lastFitting = (aTotals.firstOver ?? options.turns + 1) - 1;

  const out: string[] = [];
  out.push(`Long session: ${options.turns} turns through the real worker (fake LLM, zero latency), ${WINDOW.toLocaleString("en-US")}-token window, ${MODEL} tokenizer (o200k) in the engine, AGENT_MAX_STEPS=${MAX_STEPS}, seed ${options.seed}.`);
  out.push(`Provider counts: ${longhauls.map((run) => `ratio ${run.ratio.toFixed(1)} = ${run.provider}`).join("; ")} (cl100k is ${secondRatio.toFixed(3)} × o200k on the tool outputs); (a) and (b) at ratio 1.0.`);
  out.push(`Script: ${calls.length} tool calls (0–3 per turn, median ${median(outputChars).toLocaleString("en-US")} chars, 500–12,000, ~${charsPerToken.toFixed(1)} chars/token), ${script.turns.length + calls.length} scripted main-model requests per run (a turn's 3rd call falls to the max-steps limit).`);
  out.push(`Prices per million tokens: input $${options.main.input}, cached input $${options.main.cached}, output $${options.main.output}; summarizer $${options.summarizer.input} / $${options.summarizer.cached} / $${options.summarizer.output}.`);
  out.push(`Cache rule: cached = longest common prefix with the previous request (tools + whole messages), in 128-token steps, ≥ 1,024. Per-turn figures are medians over turns (all steps of a turn summed).`);
  out.push(`Summarizer: writes about the length the prompt asks for (0.9 × "about N tokens", 3.3 chars per token of its own), every heading of the template, cut at max_tokens (finish_reason "length").`);
  out.push("");
  out.push(`All ${options.turns} turns ((a) and (b) as if their window were unbounded):\n`);
  out.push(table(HEADERS, rows(runs, options, options.turns)));
  if (lastFitting < options.turns) {
    out.push("");
    out.push(`Turns 1–${lastFitting} only (as long as (a) still fits in ${WINDOW.toLocaleString("en-US")} tokens; at turn ${lastFitting + 1} a real provider refuses it):\n`);
    out.push(table(HEADERS, rows(runs, options, lastFitting)));
  }
  out.push("");
  const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);
  const pruningCosts = costByTurn(pruning, options, options.turns);
  const noCompactionCosts = costByTurn(noCompaction, options, options.turns);
  const tail = Math.max(1, Math.floor(options.turns / 10));
  const lastMedian = (costs: number[]) => `${(100 * median(costs.slice(-tail))).toFixed(2)} ¢`;
  const describe = (from: number | undefined) => (from === undefined ? "never in this run" : `from turn ${from} on`);
  for (const longhaul of longhauls) {
    const longhaulCosts = costByTurn(longhaul, options, options.turns);
    const done = longhaul.compactions.filter(succeeded);
    const unsuccessful = longhaul.compactions.filter((record) => record.status !== "compacted");
    out.push(`${longhaul.label}: (a) costs more ${describe(crossover(longhaulCosts, noCompactionCosts))}; (b) costs more ${describe(crossover(longhaulCosts, pruningCosts))}. ` +
      `Median cost per turn over the last ${tail} turns: longhaul ${lastMedian(longhaulCosts)}, (a) ${lastMedian(noCompactionCosts)}, (b) ${lastMedian(pruningCosts)}.`);
    out.push(`  compactions: ${compactionsCell(longhaul, options.turns, true)} at turns ${done.map((record) => record.turn).join(", ") || "—"}; ${unsuccessful.length} not "compacted" (${unsuccessful.map((record) => `${record.reason}/${record.status}`).join(", ") || "none"}); ` +
      `median ${compactCount(median(done.map((record) => record.tokensBefore)))} → ${compactCount(median(done.map((record) => record.tokensAfter)))} tokens; ` +
      `${mean(done.map((record) => record.summarizerCalls)).toFixed(2)} summarizer calls and ${mean(done.map((record) => record.chunks)).toFixed(2)} chunks per compaction; ${longhaul.lengthStops} summaries cut at max_tokens; ${longhaul.maxStepsAnswers} answers at the max-steps limit.`);
    const flushes = longhaul.main.filter((request) => request.flush === true);
    const flushPrompt = flushes.reduce((sum, request) => sum + request.prompt, 0);
    const flushCached = flushes.reduce((sum, request) => sum + request.cached, 0);
    out.push(`  memory flushes: ${flushes.length} (${compactCount(flushPrompt)} prompt tokens, ${pct(flushCached, flushPrompt)} cached) for ${longhaul.compactions.length} compactions.`);
    out.push(`  session stats (/usage): ${longhaul.stats.compactions} compactions, prompt ${compactCount(longhaul.stats.promptTokens)}, cached ${compactCount(longhaul.stats.cachedTokens)}, summarizer ${compactCount(longhaul.stats.summarizerPromptTokens)} / ${compactCount(longhaul.stats.summarizerCompletionTokens)}.`);
  }
  out.push(`(a) session stats: prompt ${compactCount(noCompaction.stats.promptTokens)}, cached ${compactCount(noCompaction.stats.cachedTokens)}.`);
  for (const run of [...longhauls, noCompaction]) {
    const problems = [
      run.refused > 0 ? `${run.refused} requests refused as over the window` : "",
      run.replyMismatches > 0 ? `${run.replyMismatches} replies differ from the script (${run.notices.join(" | ")})` : "",
      run.tokenChecks.failed > 0 ? `${run.tokenChecks.failed} of ${run.tokenChecks.checked} token counts differ from requestTokens` : "",
      run.warnings.size > 0 ? `warnings logged: ${[...run.warnings].map(([msg, count]) => `${count}× ${msg}`).join(", ")}` : "",
    ].filter(Boolean);
    out.push(`${run.label}: ${run.seconds.toFixed(1)} s, ${run.main.length} main + ${run.summarizer.length} summarizer requests; ${problems.length > 0 ? problems.join("; ") : `every reply as scripted, token counts checked on ${run.tokenChecks.checked} requests`}.`);
  }
  out.push("");
  out.push(`Targets (issue #11): no request over the window (prompt + max_tokens ≤ ${WINDOW.toLocaleString("en-US")}), ≥ ${100 * TARGETS.cacheShare} % of prompt tokens cached, ≤ ${TARGETS.summarizerCallsPerCompaction} summarizer calls per compaction:\n`);
  out.push(table(["run", "largest prompt + max_tokens", "refused", "cached share", "compactions", "summarizer calls", "calls / compaction", "targets"], longhauls.map((run) => {
    const check = checkTargets(run);
    return [run.label, compactCount(check.largestWithReply), String(check.refused), pct(check.cacheShare, 1), String(check.compactions), String(check.summarizerCalls), check.callsPerCompaction.toFixed(2), check.met ? "met" : "MISSED"];
  })));
  return out.join("\n");
}

if (isMain(import.meta.url)) console.log(await main());
