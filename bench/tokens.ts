/**
 * Token counting: js-tiktoken (the engine's tokenizer, issue #27) beside gpt-tokenizer (its
 * tokenizer from issue #10 to #27, same counts expected) on a deterministic 1 MiB corpus of mixed
 * prose and code from node_modules, the pathological inputs of issue #10 (CPU ms per message:
 * plain js-tiktoken, the engine's bounded counter on gpt-tokenizer and on js-tiktoken),
 * and the per-turn cost of the hygiene check on a 5,000-message session with and without the
 * per-message count cache.
 *
 *   npx tsx bench/tokens.ts
 *   npx tsx bench/tokens.ts --engine-only    # the engine counters only (plain js-tiktoken takes minutes on these inputs)
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { calibratedCount, initialCalibration } from "../src/context/calibration.js";
import { needsHygiene } from "../src/context/decisions.js";
import type { ChatMessage, ToolDefinition } from "../src/core/messages.js";
import { createRequire } from "node:module";
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import { buildTokenCounter, createTokenCounter, type EncodingName } from "../src/context/tokens.js";

const requireHere = createRequire(import.meta.url);
/** Plain js-tiktoken, as the engine used it before issue #10. */
function jsTiktoken(encoding: EncodingName): (text: string) => number {
  const ranks = requireHere(`js-tiktoken/ranks/${encoding}`) as TiktokenBPE;
  const tiktoken = new Tiktoken(ranks);
  return (text) => tiktoken.encode(text, [], []).length;
}
import { isMain, median, percentile, table } from "./stats.js";

const MiB = 1024 * 1024;
const PROSE_ROOTS = ["bullmq", "discord.js", "grammy", "ioredis", "luxon", "undici", "pino", "prom-client", "semver", "yaml", "zod"];
const CODE_ROOTS = ["bullmq/dist/esm", "grammy/out", "ioredis/built", "pino/lib", "yaml/dist", "zod/v4/core"];

function filesUnder(directory: string, extensions: readonly string[]): string[] {
  let entries: string[];
  try {
    entries = readdirSync(directory).sort();
  } catch {
    return [];
  }
  return entries.flatMap((entry) => {
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) return entry === "node_modules" ? [] : filesUnder(path, extensions);
    return extensions.some((extension) => entry.endsWith(extension)) ? [path] : [];
  });
}

function collect(roots: readonly string[], extensions: readonly string[], bytes: number): string {
  let text = "";
  for (const root of roots) {
    for (const file of filesUnder(join("node_modules", root), extensions)) {
      text += `${readFileSync(file, "utf8")}\n`;
      if (Buffer.byteLength(text) >= bytes) return text;
    }
  }
  return text;
}

/** Half README prose, half JS/TS code, interleaved in 4 KiB pieces, cut to 1 MiB of UTF-16 code units. */
export function buildCorpus(): { text: string; sha256: string; bytes: number } {
  const prose = collect(PROSE_ROOTS, [".md"], MiB / 2 + 4096);
  const code = collect(CODE_ROOTS, [".js", ".ts", ".mjs"], MiB / 2 + 4096);
  let text = "";
  for (let offset = 0; text.length < MiB; offset += 4096) {
    text += prose.slice(offset, offset + 4096) + code.slice(offset, offset + 4096);
    if (offset > prose.length && offset > code.length) break;
  }
  text = text.slice(0, MiB);
  return { text, sha256: createHash("sha256").update(text).digest("hex"), bytes: Buffer.byteLength(text) };
}

const p95 = (values: readonly number[]) => percentile([...values].sort((a, b) => a - b), 95);

const time = (run: () => void): number => {
  const started = performance.now();
  run();
  return performance.now() - started;
};

async function throughput(corpus: string) {
  const messages = Array.from({ length: Math.floor(corpus.length / 200) }, (_, index) => corpus.slice(index * 200, index * 200 + 200));
  const messageBytes = messages.reduce((sum, message) => sum + Buffer.byteLength(message), 0);
  const bytes = Buffer.byteLength(corpus);
  const rows: Array<Array<string | number>> = [];
  const counts = new Map<string, number>();
  // Init = loading the rank data and building the encoder (gpt-tokenizer does both at import).
  const libraries: Array<{ name: string; encoding: EncodingName; build: () => Promise<(text: string) => number> }> = [
    { name: "js-tiktoken/lite", encoding: "o200k_base", build: async () => jsTiktoken("o200k_base") },
    {
      name: "gpt-tokenizer",
      encoding: "o200k_base",
      build: async () => {
        const { countTokens } = await import("gpt-tokenizer/encoding/o200k_base");
        return (text) => countTokens(text, { disallowedSpecial: new Set() });
      },
    },
    { name: "js-tiktoken/lite", encoding: "cl100k_base", build: async () => jsTiktoken("cl100k_base") },
    {
      name: "gpt-tokenizer",
      encoding: "cl100k_base",
      build: async () => {
        const { countTokens } = await import("gpt-tokenizer/encoding/cl100k_base");
        return (text) => countTokens(text, { disallowedSpecial: new Set() });
      },
    },
  ];
  for (const library of libraries) {
    const started = performance.now();
    const count = await library.build();
    count("warm up");
    const initMs = performance.now() - started;
    let tokens = 0;
    count(corpus);
    const runs = Array.from({ length: 5 }, () => time(() => (tokens = count(corpus))));
    const perMessage = Array.from({ length: 3 }, () => time(() => messages.forEach((message) => count(message))));
    counts.set(`${library.name} ${library.encoding}`, tokens);
    const ms = median(runs);
    rows.push([
      `${library.name} (${library.encoding})`,
      Math.round(initMs),
      Math.round(ms),
      (bytes / 1e6 / (ms / 1000)).toFixed(2),
      Math.round(tokens / (ms / 1000)),
      tokens,
      (messageBytes / 1e6 / (median(perMessage) / 1000)).toFixed(2),
    ]);
  }
  return { rows, counts, messageCount: messages.length };
}

const tools: ToolDefinition[] = [
  { type: "function", function: { name: "recall", description: "Search the transcript or fetch an original message by id.", parameters: { type: "object", properties: { id: { type: "string" }, query: { type: "string" } } } } },
  { type: "function", function: { name: "current_time", description: "The current date and time.", parameters: { type: "object", properties: {} } } },
];

/** A long session made of corpus slices: user asks, tool calls with outputs, replies. */
export function syntheticSession(corpus: string, messageCount: number, sizes = { user: 300, output: 2_400, reply: 700 }): ChatMessage[] {
  const messages: ChatMessage[] = [{ id: "m0", role: "system", content: "You are longhaul, a helpful assistant in a long-running chat." }];
  let offset = 0;
  const slice = (length: number) => {
    if (offset + length > corpus.length) offset = (offset * 7 + 13) % (corpus.length - length);
    const text = corpus.slice(offset, offset + length);
    offset += length;
    return text;
  };
  let seq = 1;
  while (messages.length < messageCount) {
    messages.push({ id: `m${seq++}`, role: "user", content: slice(sizes.user) });
    const callId = `call_${seq}`;
    messages.push({ id: `m${seq++}`, role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: `src/file_${seq}.ts` }) } }] });
    messages.push({ id: `m${seq++}`, role: "tool", tool_call_id: callId, content: slice(sizes.output) });
    messages.push({ id: `m${seq++}`, role: "assistant", content: slice(sizes.reply) });
  }
  return messages.slice(0, messageCount);
}

function hygieneCost(corpus: string) {
  const encoder = buildTokenCounter("o200k_base");
  const session = syntheticSession(corpus, 5_000);
  const counter = createTokenCounter("o200k_base", encoder.countText);
  const calibration = { ...initialCalibration(), ratio: 1.07, samples: 5 };
  const check = (messages: readonly ChatMessage[], measureWith = counter) =>
    needsHygiene({
      messageCount: messages.length,
      tokens: calibratedCount(calibration, measureWith.countMessages(messages) + measureWith.countTools(tools)),
      contextWindow: 128_000,
      threshold: 0.85,
    });

  // Cached: every message was counted when it arrived; a turn adds one message and re-checks.
  const live = session.slice(0, 4_800);
  check(live);
  const cachedTurns: number[] = [];
  const newMessageCounts: number[] = [];
  for (const message of session.slice(4_800)) {
    const next = { ...message };
    delete next.tokens;
    live.push(next);
    newMessageCounts.push(time(() => counter.countMessage(next)));
    cachedTurns.push(time(() => check(live)));
  }

  // Uncached: a fresh encoding name makes every cached count miss, as with counts that are never stored.
  const uncachedTurns = Array.from({ length: 3 }, (_, run) => {
    const cold = createTokenCounter(`o200k_base-cold-${run}`, encoder.countText);
    return time(() => check(session, cold));
  });
  const tokens = counter.countMessages(session) + counter.countTools(tools);
  return { cachedTurns, newMessageCounts, uncachedTurns, tokens, chars: session.reduce((sum, message) => sum + (message.content ?? "").length, 0) };
}

/** Issue #10's inputs plus text whose every pre-token is new (the CPU budget's case). */
function pathologicalInputs(): Array<[string, string]> {
  let state = 7;
  const random = (length: number, alphabet: readonly string[]) => {
    let text = "";
    while (text.length < length) {
      state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
      text += alphabet[(state >> 8) % alphabet.length];
    }
    return text;
  };
  return [
    ['"a" × 16,000', "a".repeat(16_000)],
    ["16,000 spaces", " ".repeat(16_000)],
    ["4,096 emoji", "😀".repeat(4_096)],
    ["4,096 Cyrillic letters, no spaces", "ж".repeat(4_096)],
    ['"x" + 15,998 spaces + "y"', `x${" ".repeat(15_998)}y`],
    ["16,000 random letters, no spaces", random(16_000, [..."abcdefghijklmnopqrstuvwxyz"])],
    ["16,000 random CJK characters", random(16_000, [..."日本語のテキスト中文字漢"])],
  ];
}

/** CPU ms (user + system) of one run: the machine is shared, wall time would count the others. */
const cpuTime = (run: () => void): number => {
  const started = process.cpuUsage();
  run();
  const used = process.cpuUsage(started);
  return (used.user + used.system) / 1000;
};

/** The engine's bounded counter over gpt-tokenizer: what the engine used from issue #10 to #27. */
async function gptTokenizerEngine(): Promise<(text: string) => number> {
  const { countTokens } = await import("gpt-tokenizer/encoding/o200k_base");
  return buildTokenCounter("o200k_base", () => (piece) => countTokens(piece, { disallowedSpecial: new Set() })).countText;
}

export async function pathological(withPlain = true): Promise<Array<Array<string | number>>> {
  const before = jsTiktoken("o200k_base");
  const gptEngine = await gptTokenizerEngine();
  const engine = buildTokenCounter("o200k_base").countText;
  before("warm up");
  gptEngine("warm up");
  engine("warm up");
  const rows: Array<Array<string | number>> = [];
  for (const [name, text] of pathologicalInputs()) {
    // One run of the plain encoder (seconds each); the median of 5 for the engine counters, each on a fresh copy.
    const beforeMs = withPlain ? cpuTime(() => before(`0${text}`)) : Number.NaN;
    const gptMs = median(Array.from({ length: 5 }, (_, run) => cpuTime(() => gptEngine(`${run}${text}`))));
    const engineMs = median(Array.from({ length: 5 }, (_, run) => cpuTime(() => engine(`${run}${text}`))));
    rows.push([name, withPlain ? Math.round(beforeMs) : "not run", gptMs.toFixed(1), engineMs.toFixed(1), `${withPlain ? before(text) : "–"} / ${gptEngine(text)} / ${engine(text)}`]);
  }
  return rows;
}

/** The engine counters on ordinary text: the corpus in 3,000-character messages and in 50,000-character tool outputs, CPU ms per message (median). */
export async function ordinary(corpus: string): Promise<Array<Array<string | number>>> {
  const gptEngine = await gptTokenizerEngine();
  const engine = buildTokenCounter("o200k_base").countText;
  const rows: Array<Array<string | number>> = [];
  for (const size of [3_000, 50_000]) {
    const messages = Array.from({ length: Math.min(40, Math.floor(corpus.length / size)) }, (_, index) => corpus.slice(index * size, (index + 1) * size));
    const gpt = messages.map((message) => cpuTime(() => gptEngine(message)));
    const js = messages.map((message) => cpuTime(() => engine(message)));
    rows.push([`${size.toLocaleString("en-US")} chars`, messages.length, median(gpt).toFixed(2), median(js).toFixed(2), Math.max(...js).toFixed(1)]);
  }
  return rows;
}

export async function main(): Promise<void> {
  const corpus = buildCorpus();
  if (process.argv.includes("--engine-only")) {
    console.log("## Pathological inputs (issue #10), CPU ms per message\n");
    console.log(table(["input", "js-tiktoken, plain", "engine on gpt-tokenizer (before #27)", "engine on js-tiktoken (after #27)", "tokens plain / before / after"], await pathological(false)));
    console.log("\n## Ordinary text (the corpus), CPU ms per message\n");
    console.log(table(["message", "messages", "engine on gpt-tokenizer, median", "engine on js-tiktoken, median", "js-tiktoken, max"], await ordinary(corpus.text)));
    return;
  }
  console.log(`## Token counting\n\nCorpus: ${corpus.bytes.toLocaleString("en-US")} B of mixed README prose and JS/TS code from node_modules, sha256 ${corpus.sha256.slice(0, 12)}…\n`);
  const { rows, counts, messageCount } = await throughput(corpus.text);
  console.log(table(["library (encoding)", "init ms", "median ms / corpus", "MB/s", "tokens/s", "tokens", `${messageCount} × 200-char messages, MB/s`], rows));
  console.log("\n## Pathological inputs (issue #10), CPU ms per message\n");
  console.log(table(["input", "js-tiktoken, plain", "engine on gpt-tokenizer (before #27)", "engine on js-tiktoken (after #27)", "tokens plain / before / after"], await pathological()));
  const same = (encoding: string) => counts.get(`js-tiktoken/lite ${encoding}`) === counts.get(`gpt-tokenizer ${encoding}`);
  console.log(`\nSame counts: o200k_base ${same("o200k_base") ? "yes" : "NO"}, cl100k_base ${same("cl100k_base") ? "yes" : "NO"}\n`);

  const hygiene = hygieneCost(corpus.text);
  console.log(`## Hygiene check per turn, 5,000-message session (${hygiene.tokens.toLocaleString("en-US")} tokens, ${hygiene.chars.toLocaleString("en-US")} chars)\n`);
  console.log(
    table(
      ["counts", "turns measured", "median ms", "p95 ms"],
      [
        ["cached on messages: the check", hygiene.cachedTurns.length, median(hygiene.cachedTurns).toFixed(3), p95(hygiene.cachedTurns).toFixed(3)],
        ["cached on messages: counting the turn's new message (once in its life)", hygiene.newMessageCounts.length, median(hygiene.newMessageCounts).toFixed(3), p95(hygiene.newMessageCounts).toFixed(3)],
        ["not cached (every message re-encoded)", hygiene.uncachedTurns.length, Math.round(median(hygiene.uncachedTurns)), Math.round(Math.max(...hygiene.uncachedTurns))],
      ],
    ),
  );
}

if (isMain(import.meta.url)) await main();
