/**
 * Compaction cost against session size: CPU time of phases 1 (prune), 2 (boundaries) and
 * 4 (assemble + sanitize) for sessions of 10K to 1M tokens, plus the whole `compact()` call
 * with an instant fake summarizer (its extra is phase 3's prompt: serializing the middle and
 * counting it into chunks). Token counts are cached on messages beforehand, as in production.
 * Then the seed article's reference case: a 200K-window session of ~45 messages and ~95K
 * tokens, and what it compacts to.
 *
 *   npx tsx bench/compaction.ts
 */
import { assemble, sanitizeToolPairs } from "../src/context/assemble.js";
import { findBoundaries } from "../src/context/boundaries.js";
import { compact, type CompactResult } from "../src/context/compact.js";
import { thresholdTokens } from "../src/context/decisions.js";
import type { ChatMessage, ToolCall } from "../src/core/messages.js";
import { pruneToolResults } from "../src/context/prune.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../src/context/summarizer.js";
import { getTokenCounter, type TokenCounter } from "../src/context/tokens.js";
import { isMain, median, table } from "./stats.js";
import { buildCorpus, syntheticSession } from "./tokens.js";

const SIZES = [10_000, 30_000, 100_000, 300_000, 1_000_000];

/** Answers at once with a summary that fills most of its budget (the worst case for the result's size). */
class InstantSummarizer implements Summarizer {
  readonly model = "instant-fake";
  readonly contextWindow = 1_000_000;
  constructor(private readonly textOfTokens: (tokens: number) => string) {}
  async summarize(request: SummaryRequest): Promise<SummaryResponse> {
    return { text: `## Goal\n${this.textOfTokens(Math.floor(request.maxTokens * 0.9))}` };
  }
}

/** CPU time of this process in ms (user + system): steadier than wall time on a shared machine. */
const cpuMs = (since?: NodeJS.CpuUsage): number => {
  const usage = process.cpuUsage(since);
  return (usage.user + usage.system) / 1_000;
};

const time = (run: () => void): number => {
  const started = process.cpuUsage();
  run();
  return cpuMs(started);
};

function sessionOfTokens(corpus: string, target: number, counter: TokenCounter): ChatMessage[] {
  const all = syntheticSession(corpus, Math.ceil(target / 150) + 8);
  let tokens = 0;
  let end = 0;
  while (end < all.length && tokens < target) tokens += counter.countMessage(all[end++]!);
  // End on a complete tool group: a trailing call without its result is not a real session.
  while (all[end - 1]?.role === "assistant" && (all[end - 1] as Extract<ChatMessage, { role: "assistant" }>).tool_calls) end -= 1;
  return all.slice(0, end);
}

function phaseCosts(messages: ChatMessage[], counter: TokenCounter, contextWindow: number) {
  const threshold = thresholdTokens(contextWindow, 0.5);
  let boundaries = findBoundaries(messages, { counter, tailBudgetTokens: threshold * 0.2, protectLastN: 20 });
  let pruned = pruneToolResults(messages, { from: boundaries.headEnd, to: boundaries.protectedStart }, counter);
  const phase2 = time(() => {
    boundaries = findBoundaries(messages, { counter, tailBudgetTokens: threshold * 0.2, protectLastN: 20 });
  });
  const phase1 = time(() => {
    pruned = pruneToolResults(messages, { from: boundaries.headEnd, to: boundaries.protectedStart }, counter);
  });
  let ids = 0;
  const phase4 = time(() => {
    const assembled = assemble({
      head: pruned.messages.slice(0, boundaries.headEnd),
      summary: { id: "summary", text: "## Goal\n…" },
      kept: pruned.messages.slice(boundaries.keptStart),
      addNote: true,
    });
    sanitizeToolPairs(assembled, () => `stub-${ids++}`);
  });
  return { phase1, phase2, phase4 };
}

async function scaling(corpus: string, counter: TokenCounter, textOfTokens: (tokens: number) => string) {
  const rows: Array<Array<string | number>> = [];
  for (const size of SIZES) {
    const messages = sessionOfTokens(corpus, size, counter);
    const tokens = counter.countMessages(messages);
    const contextWindow = tokens * 2; // the session sits exactly at the 50% threshold
    const runs = size >= 1_000_000 ? 9 : 21;
    const samples = Array.from({ length: runs }, () => phaseCosts(messages, counter, contextWindow));
    const phases = {
      phase1: median(samples.map((sample) => sample.phase1)),
      phase2: median(samples.map((sample) => sample.phase2)),
      phase4: median(samples.map((sample) => sample.phase4)),
    };
    const summarizer = new InstantSummarizer(textOfTokens);
    let result: CompactResult | undefined;
    const totals: number[] = [];
    for (let run = 0; run < Math.min(runs, 5); run += 1) {
      const started = process.cpuUsage();
      let id = 0;
      result = await compact({
        messages,
        settings: { contextWindow, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 },
        reason: "in-loop",
        summarizer,
        counter,
        newId: () => `new-${id++}`,
        retry: { attempts: 1, baseDelayMs: 0 },
      });
      totals.push(cpuMs(started));
    }
    const sum124 = phases.phase1 + phases.phase2 + phases.phase4;
    rows.push([
      tokens,
      messages.length,
      phases.phase1.toFixed(2),
      phases.phase2.toFixed(2),
      phases.phase4.toFixed(2),
      sum124.toFixed(2),
      ((sum124 * 1_000) / (tokens / 1_000)).toFixed(2),
      median(totals).toFixed(1),
      `${result!.record.messagesAfter} msgs / ${result!.record.tokensAfter.toLocaleString("en-US")}`,
    ]);
  }
  return rows;
}

/**
 * The seed's reference case (Hermes: "45 messages and ~95K tokens → 25 messages and ~45K"): a
 * debugging session on a 200K window where tool results are ~80% of the tokens (the article's
 * figure): per step a grep (~2,800 tokens), a file read (~4,200) and a test run (~3,500), and a
 * long findings reply.
 */
function seedSession(textOfTokens: (tokens: number) => string): ChatMessage[] {
  let seq = 0;
  const id = () => `m${++seq}`;
  const messages: ChatMessage[] = [
    { id: id(), role: "system", content: `You are a coding agent. ${textOfTokens(1_500)}` },
    { id: id(), role: "user", content: "The checkout tests fail since yesterday's merge. Find out why and fix it; don't touch the public API." },
    { id: id(), role: "assistant", content: `I'll start from the failing tests. ${textOfTokens(150)}` },
  ];
  for (let turn = 0; turn < 7; turn += 1) {
    messages.push({ id: id(), role: "user", content: `Step ${turn + 1}: ${textOfTokens(250)}` });
    const calls: ToolCall[] = [
      { id: `call_${turn}_grep`, type: "function", function: { name: "grep", arguments: JSON.stringify({ pattern: `applyDiscount${turn}`, path: "src/" }) } },
      { id: `call_${turn}_read`, type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: `src/checkout/step_${turn}.ts` }) } },
      { id: `call_${turn}_test`, type: "function", function: { name: "run_tests", arguments: JSON.stringify({ filter: "checkout" }) } },
    ];
    messages.push({ id: id(), role: "assistant", content: null, tool_calls: calls });
    messages.push({ id: id(), role: "tool", tool_call_id: calls[0]!.id, content: textOfTokens(3_000) });
    messages.push({ id: id(), role: "tool", tool_call_id: calls[1]!.id, content: textOfTokens(4_500) });
    messages.push({ id: id(), role: "tool", tool_call_id: calls[2]!.id, content: textOfTokens(3_800) });
    messages.push({ id: id(), role: "assistant", content: `Findings for step ${turn + 1}: ${textOfTokens(2_600)}` });
  }
  return messages;
}

async function seedCase(counter: TokenCounter, textOfTokens: (tokens: number) => string) {
  const messages = seedSession(textOfTokens);
  let id = 1_000;
  const result = await compact({
    messages,
    settings: { contextWindow: 200_000, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 },
    reason: "manual",
    summarizer: new InstantSummarizer(textOfTokens),
    counter,
    newId: () => `m${id++}`,
  });
  const toolTokens = messages.filter((message) => message.role === "tool").reduce((sum, message) => sum + counter.countMessage(message), 0);
  const summary = result.messages.find((message) => message.kind === "summary");
  const summaryIndex = summary ? result.messages.indexOf(summary) : 0;
  const { record } = result;
  return {
    toolShare: toolTokens / record.tokensBefore,
    rows: [
      ["before", record.messagesBefore, record.tokensBefore, "—"],
      [
        "after",
        record.messagesAfter,
        record.tokensAfter,
        `head ${summaryIndex} msgs · summary ${record.summaryTokens.toLocaleString("en-US")} tokens · tail ${record.messagesAfter - summaryIndex - 1} msgs (${record.prunedMessages} tool results pruned outside the protected tail)`,
      ],
    ],
  };
}

export async function main(): Promise<void> {
  const corpus = buildCorpus().text;
  const counter = getTokenCounter("gpt-4o-mini");
  let offset = 0;
  const textOfTokens = (tokens: number) => {
    // ~3.75 chars per o200k token on this corpus; rotate through it so texts differ.
    const chars = Math.round(tokens * 3.75);
    if (offset + chars > corpus.length) offset = 0;
    const text = corpus.slice(offset, offset + chars);
    offset += chars;
    return text;
  };

  console.log("## Compaction CPU time by session size (median CPU ms; o200k counts cached; window = 2 × session, so it sits at the 50% threshold; whole compact() = all phases with an instant fake summarizer)\n");
  console.log(
    table(
      ["tokens", "messages", "phase 1 ms", "phase 2 ms", "phase 4 ms", "1+2+4 ms", "µs per 1K tokens", "whole compact() ms", "result"],
      await scaling(corpus, counter, textOfTokens),
    ),
  );

  const seed = await seedCase(counter, textOfTokens);
  console.log(`\n## Seed reference case: 200K window, tool results ${(seed.toolShare * 100).toFixed(0)}% of the tokens\n`);
  console.log(table(["", "messages", "tokens", "composition"], seed.rows));
}

if (isMain(import.meta.url)) await main();
