/**
 * compact() against the mutants StrykerJS left alive in compact.ts (docs/benchmarks.md,
 * "Mutation testing"): the record it returns (pruning, duration, summary size, error), the one
 * token unit (tools, the memory block and the provider ratio in every measure), the tail and
 * cut budgets in the counter's units, the hard limit's edge, the dropping fallback, and what the
 * summarizer is given (the previous summary once, a budget that grows with it, one call chain
 * when the fallback is the summarizer itself).
 */
import { describe, expect, it } from "vitest";
import { compact, DROP_TARGET_RATIO, FALLBACK_DIGEST_SHARE, foldsMessages, tailBudgetTokens, targetRatioForTail, type CompactInput } from "../../../src/context/compact.js";
import { FALLBACK_DIGEST_HEADER } from "../../../src/context/fallback-digest.js";
import { COMPACTION_NOTE, extractSummaryText } from "../../../src/context/assemble.js";
import { findBoundaries } from "../../../src/context/boundaries.js";
import { formatStamp } from "../../../src/core/time-stamp.js";
import { thresholdTokens } from "../../../src/context/decisions.js";
import type { ChatMessage, ToolCall, ToolDefinition } from "../../../src/core/messages.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../../../src/context/summarizer.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

// One token per character: the arithmetic stays readable.
const counter = createTokenCounter("test-chars", (text) => text.length);
const settings = { contextWindow: 20_000, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 4 };
const retry = { attempts: 2, baseDelayMs: 0, timeoutMs: 1_000 };
/**
 * A hard limit the sessions below exceed, so a dead summarizer drops turns. It is the threshold
 * itself (half the 20K window): the threshold never exceeds the hard limit, so a lower one would
 * lower the drop target with it.
 */
const HARD_LIMIT = 10_000;

class Recording implements Summarizer {
  readonly requests: SummaryRequest[] = [];
  constructor(readonly model: string, private readonly answer: (request: SummaryRequest) => Promise<SummaryResponse>, readonly contextWindow = 200_000) {}
  summarize(request: SummaryRequest): Promise<SummaryResponse> {
    this.requests.push(request);
    return this.answer(request);
  }
}
const working = () => new Recording("aux", async () => ({ text: "## Goal\nkeep going" }));
const dead = () => new Recording("aux", async () => Promise.reject(new Error("502 bad gateway")));
const promptOf = (request: SummaryRequest) => request.messages.map((message) => message.content ?? "").join("\n");

/** system, then `turns` turns of: user ask, a tool call, its `outputChars` result, a reply. */
function session(turns: number, outputChars: number, options: { summary?: string } = {}) {
  let seq = 0;
  const newId = () => `m${++seq}`;
  const messages: ChatMessage[] = [{ id: newId(), role: "system", content: "You are longhaul." }];
  if (options.summary !== undefined) messages.push({ id: newId(), role: "user", kind: "summary", content: options.summary });
  for (let turn = 0; turn < turns; turn += 1) {
    const call: ToolCall = { id: `call_${turn}`, type: "function", function: { name: "read_file", arguments: `{"n":${turn}}` } };
    messages.push(
      { id: newId(), role: "user", content: `ask ${turn} ${"u".repeat(200)}` },
      { id: newId(), role: "assistant", content: null, tool_calls: [call] },
      { id: newId(), role: "tool", tool_call_id: call.id, content: `result ${turn} ${"r".repeat(outputChars)}` },
      { id: newId(), role: "assistant", content: `reply ${turn} ${"a".repeat(200)}` },
    );
  }
  return { messages, newId };
}

const input = (overrides: Partial<CompactInput> & Pick<CompactInput, "messages" | "newId">): CompactInput =>
  ({ settings, reason: "in-loop", summarizer: working(), counter, retry, ...overrides });

describe("the compaction record", () => {
  it("counts pruned results and the tokens they freed when pruning alone helps, and times the run", async () => {
    // The previous summary and nothing new before the running turn: nothing to fold, but the
    // turn's older tool results (before the protected tail) are pruned.
    const { messages, newId } = session(0, 0, { summary: "## Goal\nearlier work" });
    for (let step = 0; step < 6; step += 1) {
      const call: ToolCall = { id: `loop_${step}`, type: "function", function: { name: "read_file", arguments: "{}" } };
      messages.push({ id: newId(), role: "assistant", content: null, tool_calls: [call] }, { id: newId(), role: "tool", tool_call_id: call.id, content: `out ${step} ${"o".repeat(3_000)}` });
    }
    messages.splice(2, 0, { id: newId(), role: "user", content: "run the whole migration" });
    let clock = 1_000;
    const summarizer = working();
    const result = await compact(input({ messages, newId, summarizer, now: () => (clock += 250) }));
    expect(result.status).toBe("compacted");
    expect(summarizer.requests).toHaveLength(0);
    const pruned = result.messages.filter((message) => message.kind === "pruned" || message.kind === "truncated");
    expect(pruned.length).toBeGreaterThan(0);
    expect(result.record.prunedMessages).toBe(pruned.length);
    expect(result.record.prunedTokens).toBe(counter.countMessages(messages) - counter.countMessages(result.messages));
    expect(result.record.durationMs).toBe(250);
    expect(result).not.toHaveProperty("error");
  });

  it("reports no pruning for a failed compaction, which changes nothing", async () => {
    const { messages, newId } = session(8, 3_000);
    const result = await compact(input({ messages, newId, summarizer: dead(), settings: { ...settings, hardLimitTokens: 1_000_000 } }));
    expect(result.status).toBe("failed");
    expect(result.messages).toEqual(messages);
    expect(result.record).toMatchObject({ prunedMessages: 0, prunedTokens: 0, droppedMessages: 0 });
    expect(result.error).toBeDefined();
  });

  it("records the size of the summary it wrote", async () => {
    const { messages, newId } = session(8, 3_000);
    const result = await compact(input({ messages, newId }));
    const summary = result.messages.find((message) => message.kind === "summary")!;
    expect(result.record.summaryTokens).toBe(counter.countMessage(summary));
    expect(result.record.summaryTokens).not.toBe(counter.countMessage(result.messages[0]!));
  });
});

describe("one unit: tools, the memory block and the provider's ratio in every measure", () => {
  const tools: ToolDefinition[] = [{ type: "function", function: { name: "read_file", description: "Read a file", parameters: { type: "object" } } }];

  it("tokensBefore is (messages + tools + extra) × ratio, and a negative extra counts as none", async () => {
    const { messages, newId } = session(8, 3_000);
    const raw = counter.countMessages(messages) + counter.countTools(tools);
    const at = async (extraTokens: number, tokenRatio: number) =>
      (await compact(input({ messages, newId, tools, extraTokens, settings: { ...settings, tokenRatio }, summarizer: dead() }))).record.tokensBefore;
    expect(await at(500, 1.3)).toBe(Math.ceil((raw + 500) * 1.3));
    expect(await at(-500, 1)).toBe(raw);
  });

  it("a higher ratio leaves a smaller tail in the counter's units", async () => {
    const kept = async (tokenRatio: number) => {
      const { messages, newId } = session(10, 600);
      const result = await compact(input({ messages, newId, settings: { ...settings, tokenRatio } }));
      const summaryAt = result.messages.findIndex((message) => message.kind === "summary");
      return result.messages.length - summaryAt - 1;
    };
    expect(await kept(2)).toBeLessThan(await kept(1));
  });

  it("the newest group alone over 1.5 × the tail budget is cut to fit it, and the cut is recorded", async () => {
    const { messages, newId } = session(6, 300);
    const call: ToolCall = { id: "huge", type: "function", function: { name: "read_file", arguments: "{}" } };
    messages.push({ id: newId(), role: "user", content: "read the dump" }, { id: newId(), role: "assistant", content: null, tool_calls: [call] }, { id: newId(), role: "tool", tool_call_id: "huge", content: "d".repeat(12_000) });
    const result = await compact(input({ messages, newId }));
    const tailBudget = Math.floor(thresholdTokens(settings.contextWindow, settings.compactionThreshold) * settings.targetRatio);
    const cut = result.messages.at(-1)!;
    expect(cut).toMatchObject({ role: "tool", tool_call_id: "huge", kind: "truncated" });
    const group = result.messages.slice(-2);
    expect(counter.countMessages(group)).toBeLessThanOrEqual(1.5 * tailBudget);
    expect(counter.countMessages(group)).toBeGreaterThan(0.5 * tailBudget);
    expect(result.record.prunedTokens).toBeGreaterThanOrEqual(counter.countMessage(messages.at(-1)!) - counter.countMessage(cut));
  });
});

describe("the failure policy's edges", () => {
  it("exactly at the hard limit the context is left alone; one token over, old turns are dropped", async () => {
    const { messages, newId } = session(8, 3_000);
    const tokens = counter.countMessages(messages);
    expect((await compact(input({ messages, newId, summarizer: dead(), settings: { ...settings, hardLimitTokens: tokens } }))).status).toBe("failed");
    expect((await compact(input({ messages, newId, summarizer: dead(), settings: { ...settings, hardLimitTokens: tokens - 1 } }))).status).toBe("dropped");
  });

  it("dropping removes the oldest turns until under the target less the digest's room, no more, and keeps the previous summary with the digest", async () => {
    const { messages, newId } = session(12, 1_500, { summary: "## Goal\nthe earlier summary" });
    const tools: ToolDefinition[] = [{ type: "function", function: { name: "read_file", description: "x".repeat(400), parameters: { type: "object" } } }];
    const result = await compact(input({ messages, newId, tools, extraTokens: 300, summarizer: dead(), settings: { ...settings, hardLimitTokens: HARD_LIMIT } }));
    expect(result.status).toBe("dropped");
    const summaries = result.messages.filter((message) => message.kind === "summary");
    expect(summaries).toHaveLength(1);
    expect(summaries[0]!.content).toContain("## Goal\nthe earlier summary\n\n" + FALLBACK_DIGEST_HEADER);
    const threshold = thresholdTokens(settings.contextWindow, settings.compactionThreshold);
    const target = Math.floor(threshold * DROP_TARGET_RATIO);
    const digestRoom = Math.floor(threshold * FALLBACK_DIGEST_SHARE);
    const fixed = counter.countTools(tools) + 300;
    const after = counter.countMessages(result.messages) + fixed;
    expect(after).toBeLessThan(target);
    // The oldest turns went first, and one turn fewer would not have been enough.
    const kept = new Set(result.messages.map((message) => message.id));
    const droppedIds = messages.filter((message) => !kept.has(message.id) && message.kind !== "summary").map((message) => message.id);
    expect(droppedIds).toEqual(messages.slice(2, 2 + droppedIds.length).map((message) => message.id));
    expect(result.record.droppedMessages).toBe(droppedIds.length);
    const lastTurn = messages.slice(2 + droppedIds.length - 4, 2 + droppedIds.length);
    const previousSummary = messages.find((message) => message.kind === "summary")!;
    const beforeDigest = after - counter.countMessage(summaries[0]!) + counter.countMessage(previousSummary);
    expect(beforeDigest + counter.countMessages(lastTurn)).toBeGreaterThanOrEqual(target - digestRoom);
  });
});

describe("what the summarizer is given", () => {
  it("the previous summary once, as the previous summary, never again among the messages to fold", async () => {
    const { messages, newId } = session(8, 2_000, { summary: "## Goal\nPREVIOUS-SUMMARY-MARKER" });
    const summarizer = working();
    await compact(input({ messages, newId, summarizer }));
    const prompt = promptOf(summarizer.requests[0]!);
    expect(prompt.split("PREVIOUS-SUMMARY-MARKER")).toHaveLength(2);
  });

  it("a budget that grows with the previous summary's size", async () => {
    const ask = async (summary: string) => {
      const { messages, newId } = session(4, 200, { summary });
      const summarizer = working();
      // A 128K window: the budget may range from 2,000 to 6,400 tokens.
      await compact(input({ messages, newId, summarizer, settings: { ...settings, contextWindow: 128_000, targetRatio: 0.01 } }));
      return summarizer.requests[0]!.maxTokens;
    };
    expect(await ask(`## Goal\n${"a long earlier summary. ".repeat(300)}`)).toBeGreaterThan(await ask("## Goal\nshort"));
  });

  it("the same summarizer given as its own fallback is one chain of attempts, not two", async () => {
    const { messages, newId } = session(8, 3_000);
    const summarizer = dead();
    const result = await compact(input({ messages, newId, summarizer, fallbackSummarizer: summarizer, settings: { ...settings, hardLimitTokens: 1_000_000 } }));
    expect(result.status).toBe("failed");
    expect(summarizer.requests).toHaveLength(retry.attempts);
    expect(result.record.summarizerCalls).toBe(retry.attempts);
  });
});

describe("whether a compaction would fold anything (the memory flush is paid only then)", () => {
  it("yes for turns older than the tail; no when the middle holds only the previous summary, or nothing", () => {
    const long = session(8, 3_000);
    expect(foldsMessages({ messages: long.messages, settings, counter })).toBe(true);
    expect(foldsMessages({ messages: session(8, 3_000, { summary: "## Goal\nearlier work" }).messages, settings, counter })).toBe(true);
    const folded = session(0, 0, { summary: "## Goal\nearlier work" });
    folded.messages.push({ id: "m90", role: "user", content: "next question" });
    expect(foldsMessages({ messages: folded.messages, settings, counter })).toBe(false);
    expect(foldsMessages({ messages: session(1, 10).messages, settings, counter })).toBe(false);
  });
});

describe("the last resort when nothing needs dropping", () => {
  it("over a low hard limit but already under the drop target: 'dropped' with nothing dropped, every message kept once, no digest", async () => {
    // Over the hard limit as sent, under the drop target once the middle's results are pruned.
    const { messages, newId } = session(6, 3_000);
    const result = await compact(input({ messages, newId, summarizer: dead(), settings: { ...settings, hardLimitTokens: HARD_LIMIT } }));
    expect(result.status).toBe("dropped");
    expect(result.record.droppedMessages).toBe(0);
    expect(result.messages.map((message) => message.id)).toEqual(messages.map((message) => message.id));
    expect(result.messages.some((message) => (message.content ?? "").includes(FALLBACK_DIGEST_HEADER))).toBe(false);
  });
});

describe("the tail budget after fixed overhead (issue #31)", () => {
  it("is the target share of what tools and the system block leave under the threshold, never under a quarter of the usual budget", () => {
    // 10K of tools and system in a 16K threshold: 20% of the 6K left.
    expect(tailBudgetTokens(16_000, 0.2, 10_000)).toBe(1_200);
    expect(tailBudgetTokens(16_000, 0.2, 0)).toBe(3_200);
    // 15K of 16K fixed: the floor, a quarter of the threshold's 20%.
    expect(tailBudgetTokens(16_000, 0.2, 15_000)).toBe(800);
    // The floor only as far as the hard limit leaves room above the overhead (28,800 − 27,200),
    // and none when the overhead alone passes it.
    expect(tailBudgetTokens(28_800, 0.2, 27_200, 28_800)).toBe(320);
    expect(tailBudgetTokens(16_000, 0.2, 15_000, 20_000)).toBe(800);
    expect(tailBudgetTokens(14_000, 0.2, 15_000, 14_000)).toBe(0);
  });

  it("targetRatioForTail is its inverse (what /compress passes to keep a tail of its own), never under 0.001", () => {
    for (const [tail, threshold, fixed, hardLimit] of [[1_000, 16_000, 6_000, undefined], [200, 28_800, 27_200, 28_800], [2_500, 16_000, 0, undefined]] as const) {
      const ratio = targetRatioForTail(tail, threshold, fixed, hardLimit);
      expect(tailBudgetTokens(threshold, ratio, fixed, hardLimit)).toBe(tail);
    }
    expect(targetRatioForTail(1_000, 16_000, 6_000)).toBeCloseTo(0.1, 10);
    expect(targetRatioForTail(0, 16_000, 6_000)).toBe(0.001);
    // Nothing left above the overhead under the hard limit: the smallest ratio, not a division by 0.
    expect(targetRatioForTail(500, 14_000, 15_000, 14_000)).toBe(0.001);
  });
});

describe("the tail budget in the counter's units with a provider ratio and fixed overhead", () => {
  it("scales the fixed overhead up to the provider's tokens before taking it from the threshold", async () => {
    // 3.1K of tools counted at 2 provider tokens per counter token: 6.2K of the 10K threshold
    // are fixed, so the tail is 20% of the 3.8K left, 379 counter tokens after the ratio.
    const tools: ToolDefinition[] = [{ type: "function", function: { name: "read_file", description: "d".repeat(3_000), parameters: { type: "object" } } }];
    const tokenRatio = 2;
    const { messages, newId } = session(10, 50);
    const threshold = thresholdTokens(settings.contextWindow, settings.compactionThreshold);
    const boundariesAt = (fixed: number) =>
      findBoundaries(messages, { counter, tailBudgetTokens: Math.floor(tailBudgetTokens(threshold, settings.targetRatio, fixed) / tokenRatio), protectLastN: settings.protectLastN });
    const { keptStart } = boundariesAt(Math.ceil(counter.countTools(tools) * tokenRatio));
    // The overhead scaled the wrong way (divided by the ratio) would keep a longer tail here.
    expect(boundariesAt(counter.countTools(tools) / tokenRatio).keptStart).toBeLessThan(keptStart);

    const result = await compact(input({ messages, newId, tools, settings: { ...settings, tokenRatio } }));
    expect(result.status).toBe("compacted");
    const summaryAt = result.messages.findIndex((message) => message.kind === "summary");
    expect(result.messages.slice(summaryAt + 1).map((message) => message.id)).toEqual(messages.slice(keptStart).map((message) => message.id));
  });
});

describe("the last resort's target, exactly", () => {
  it("a context exactly at the drop target is not under it: one more turn goes", async () => {
    // Results under PRUNE_MIN_CHARS: nothing is pruned, every count below is the context's.
    const { messages, newId } = session(12, 50, { summary: "## Goal\nthe earlier summary" });
    const threshold = thresholdTokens(settings.contextWindow, settings.compactionThreshold);
    const target = Math.floor(threshold * DROP_TARGET_RATIO) - Math.floor(threshold * FALLBACK_DIGEST_SHARE);
    // Extra tokens chosen so that dropping the eight oldest turns lands exactly on the target
    // (eight: fewer would leave the context under the hard limit, where nothing is dropped).
    const eightTurns = messages.slice(2, 34);
    const extraTokens = target - (counter.countMessages(messages) - eightTurns.reduce((sum, message) => sum + counter.countMessage(message), 0));
    expect(extraTokens).toBeGreaterThan(0);
    expect(counter.countMessages(messages) + extraTokens).toBeGreaterThan(HARD_LIMIT);
    const result = await compact(input({ messages, newId, extraTokens, summarizer: dead(), settings: { ...settings, hardLimitTokens: HARD_LIMIT } }));
    expect(result.status).toBe("dropped");
    expect(result.record.prunedMessages).toBe(0);
    const kept = new Set(result.messages.map((message) => message.id));
    const droppedIds = messages.filter((message) => !kept.has(message.id) && message.kind !== "summary").map((message) => message.id);
    expect(droppedIds).toEqual(messages.slice(2, 38).map((message) => message.id));
    expect(result.record.droppedMessages).toBe(36);
  });
});

describe("the user-text cut in a compaction", () => {
  it("leaves a paste inside the folded middle to the summary: the summarizer reads it whole, and nothing is counted as cut", async () => {
    // Results under PRUNE_MIN_CHARS: nothing is pruned.
    const { messages, newId } = session(8, 50);
    // A paste over the cap (25% of the 20K window) in the third turn, which is folded.
    const paste = `paste ${"p".repeat(6_000)}`;
    messages[9] = { id: messages[9]!.id, role: "user", content: paste };
    const summarizer = working();
    const result = await compact(input({ messages, newId, summarizer }));
    expect(result.status).toBe("compacted");
    expect(result.messages.some((message) => message.id === messages[9]!.id)).toBe(false);
    expect(promptOf(summarizer.requests[0]!)).toContain(paste);
    expect(result.record).toMatchObject({ prunedMessages: 0, prunedTokens: 0 });
  });
});

describe("the record, the budget and the digest on every path", () => {
  it("counts an oversized user message in the kept turn among the pruned, with the tokens its cut freed", async () => {
    // Results under PRUNE_MIN_CHARS: the user message is the only thing cut.
    const { messages, newId } = session(8, 50);
    const pasteAt = messages.length - 4;
    messages[pasteAt] = { id: messages[pasteAt]!.id, role: "user", content: `paste ${"p".repeat(8_000)}` };
    const result = await compact(input({ messages, newId }));
    expect(result.status).toBe("compacted");
    const cut = result.messages.find((message) => message.id === messages[pasteAt]!.id)!;
    expect(cut.kind).toBe("truncated");
    expect(result.record.prunedMessages).toBe(1);
    expect(result.record.prunedTokens).toBe(counter.countMessage(messages[pasteAt]!) - counter.countMessage(cut));
    expect(result.record.prunedTokens).toBeGreaterThan(0);
  });

  it("passes who pays on to the summarizer", async () => {
    const { messages, newId } = session(8, 3_000);
    const budget = { pay: <T>(_estimate: unknown, call: () => Promise<T>) => call() };
    const summarizer = working();
    await compact(input({ messages, newId, summarizer, budget }));
    expect(summarizer.requests.length).toBeGreaterThan(0);
    for (const request of summarizer.requests) expect(request.budget).toBe(budget);
  });

  it("dates the fallback digest in the chat's time zone", async () => {
    const { messages, newId } = session(12, 1_500);
    // 20:00 UTC on 1 January is 05:00 on 2 January in Tokyo.
    const at = Date.UTC(2026, 0, 1, 20, 0);
    for (const message of messages) if (message.role === "user") message.at = at;
    const result = await compact(input({ messages, newId, timeZone: "Asia/Tokyo", summarizer: dead(), settings: { ...settings, hardLimitTokens: HARD_LIMIT } }));
    expect(result.status).toBe("dropped");
    const digest = result.messages.find((message) => message.kind === "summary")!.content ?? "";
    // No summary before: the summary is the digest alone.
    expect(extractSummaryText(digest).startsWith(FALLBACK_DIGEST_HEADER)).toBe(true);
    expect(digest).toContain(formatStamp(at, "Asia/Tokyo"));
    expect(digest).not.toContain(formatStamp(at, "UTC"));
  });

  it("notes in the system prompt that turns were compacted, whether turns were dropped or not", async () => {
    const over = await compact(input({ ...session(12, 1_500), summarizer: dead(), settings: { ...settings, hardLimitTokens: HARD_LIMIT } }));
    expect(over.record.droppedMessages).toBeGreaterThan(0);
    const under = await compact(input({ ...session(6, 3_000), summarizer: dead(), settings: { ...settings, hardLimitTokens: HARD_LIMIT } }));
    expect(under).toMatchObject({ status: "dropped", record: { droppedMessages: 0 } });
    for (const result of [over, under]) {
      expect(result.messages[0]).toMatchObject({ role: "system" });
      expect(result.messages[0]!.content).toContain(COMPACTION_NOTE);
    }
  });
});
