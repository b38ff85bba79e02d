/**
 * The context engine at its edges (issue #31), without a worker: the pure engine (`compact`,
 * the anti-thrash decisions) driven turn by turn as the session's context manager drives it,
 * with a summarizer that writes about the length it is asked for. Two scenarios:
 *
 *   fixed-overhead  a 32K window, 10K tokens of tool definitions + system prompt, 230 tokens a
 *                   turn (user 80, reply 150), 300 turns; and the same without the overhead.
 *   huge-paste      a 128K window, a session of 40 turns, then one user message three times
 *                   the window: what a compaction leaves, and whether the next request fits.
 *
 * The threshold is counted after the fixed overhead (`fixedOverheadTokens`, `record.thresholdTokens`,
 * fcaedc9). For a checkout older than that, copy this file as of 4704c20 (the APIs that predate
 * issue #31) into `git worktree add /tmp/old <commit>` for the before figures.
 *
 *   npx tsx bench/context-edges.ts [turns=300]
 */
import { compact, fixedOverheadTokens, type CompactInput } from "../src/context/compact.js";
import { autoCompactionAllowed, defaultHardLimit, initialAntiThrash, needsCompaction, recordCompactionOutcome } from "../src/context/decisions.js";
import type { Summarizer } from "../src/context/summarizer.js";
import { createTokenCounter } from "../src/context/tokens.js";
import type { ChatMessage, ToolDefinition } from "../src/core/messages.js";

const counter = createTokenCounter("bench-chars/4", (text) => Math.ceil(text.length / 4));
const words = (label: string, tokens: number) => `${label} ${"lorem ipsum dolor sit ".repeat(Math.ceil((tokens * 4) / 22))}`.slice(0, tokens * 4);

/** Writes about the length asked for ("about N tokens"), as a model that follows the prompt. */
function summarizer(calls: { count: number }): Summarizer {
  return {
    model: "bench-summarizer",
    contextWindow: 128_000,
    async summarize(request) {
      calls.count++;
      const prompt = request.messages.map((message) => String(message.content ?? "")).join("\n");
      const asked = Number(/about (\d+) tokens/.exec(prompt)?.[1] ?? 400);
      return { text: `## Goal\n${words("summary", Math.round(asked * 0.9))}`, finishReason: "stop" };
    },
  };
}

interface Outcome { turns: number; compactions: number; summarizerCalls: number; largest: number; totalRequest: number; lastAfterShare: number[] }

async function fixedOverhead(window: number, overheadTokens: number, turns: number): Promise<Outcome> {
  const tools: ToolDefinition[] = [];
  // System prompt 2K of the overhead, tool definitions the rest.
  const systemTokens = overheadTokens > 0 ? 2_000 : 50;
  while (counter.countTools(tools) < overheadTokens - systemTokens) {
    tools.push({ type: "function", function: { name: `tool_${tools.length}`, description: words("describes", 400), parameters: { type: "object", properties: {} } } });
  }
  let seq = 0;
  const newId = () => `m${++seq}`;
  let live: ChatMessage[] = [{ id: newId(), role: "system", content: words("system", systemTokens) }];
  let antiThrash = initialAntiThrash();
  const calls = { count: 0 };
  const settings = { contextWindow: window, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 };
  // The threshold counts on what the fixed overhead (tools + system prompt) leaves of the window.
  const fixed = () => fixedOverheadTokens({ messages: live, tools, counter });
  const outcome: Outcome = { turns, compactions: 0, summarizerCalls: 0, largest: 0, totalRequest: 0, lastAfterShare: [] };
  const size = () => counter.countMessages(live) + counter.countTools(tools);
  for (let turn = 0; turn < turns; turn++) {
    live = [...live, { id: newId(), at: turn * 60_000, role: "user", content: words(`question ${turn}`, 80) }];
    const tokens = size();
    const overHard = tokens >= defaultHardLimit(window);
    if (overHard || (needsCompaction({ tokens, contextWindow: window, threshold: 0.5, fixedTokens: fixed() }) && autoCompactionAllowed(antiThrash, tokens, window))) {
      const input: CompactInput = { messages: live, tools, settings, reason: "in-loop", summarizer: summarizer(calls), counter, newId, retry: { attempts: 1, baseDelayMs: 0 } };
      const result = await compact(input);
      live = result.messages;
      antiThrash = recordCompactionOutcome(antiThrash, { tokensAfter: result.record.tokensAfter, thresholdTokens: result.record.thresholdTokens });
      outcome.compactions++;
      outcome.lastAfterShare.push(Math.round((100 * result.record.tokensAfter) / result.record.thresholdTokens));
    }
    outcome.largest = Math.max(outcome.largest, size());
    outcome.totalRequest += size();
    live = [...live, { id: newId(), at: turn * 60_000 + 5_000, role: "assistant", content: words(`answer ${turn}`, 150) }];
  }
  outcome.summarizerCalls = calls.count;
  return outcome;
}

async function hugePaste(window: number): Promise<{ before: number; after: number; fits: boolean; summarizerCalls: number }> {
  let seq = 0;
  const newId = () => `m${++seq}`;
  const live: ChatMessage[] = [{ id: newId(), role: "system", content: words("system", 1_000) }];
  for (let turn = 0; turn < 40; turn++) {
    live.push({ id: newId(), role: "user", content: words(`question ${turn}`, 300) }, { id: newId(), role: "assistant", content: words(`answer ${turn}`, 600) });
  }
  live.push({ id: newId(), role: "user", content: words("pasted log", 3 * window) });
  const calls = { count: 0 };
  const result = await compact({
    messages: live, settings: { contextWindow: window, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 },
    reason: "hygiene", summarizer: summarizer(calls), counter, newId, retry: { attempts: 1, baseDelayMs: 0 },
  });
  return { before: result.record.tokensBefore, after: result.record.tokensAfter, fits: result.record.tokensAfter < defaultHardLimit(window), summarizerCalls: calls.count };
}

const TURNS = Number(process.argv[2] ?? 300);
const withOverhead = await fixedOverhead(32_000, 10_000, TURNS);
const without = await fixedOverhead(32_000, 0, TURNS);
const per100 = (outcome: Outcome) => (100 * outcome.compactions) / outcome.turns;
console.log(`fixed-overhead (32K window, 230 tokens a turn, ${TURNS} turns)`);
console.log("| overhead | compactions / 100 turns | summarizer calls | largest request | mean request | result % of threshold (first 6) |");
console.log("|---|---|---|---|---|---|");
for (const [label, outcome] of [["10K tools + system", withOverhead], ["none", without]] as const) {
  console.log(`| ${label} | ${per100(outcome).toFixed(1)} | ${outcome.summarizerCalls} | ${outcome.largest} | ${Math.round(outcome.totalRequest / outcome.turns)} | ${outcome.lastAfterShare.slice(0, 6).join(", ")} |`);
}
console.log(`ratio of compaction rates: ${(per100(withOverhead) / per100(without)).toFixed(2)} (target ≤ 1.5); largest request under the window: ${withOverhead.largest < 32_000}`);
const paste = await hugePaste(128_000);
console.log("\nhuge-paste (128K window, one message of 3 × the window)");
console.log(`tokens before ${paste.before}, after the compaction ${paste.after}, next request fits: ${paste.fits}, summarizer calls ${paste.summarizerCalls}`);
