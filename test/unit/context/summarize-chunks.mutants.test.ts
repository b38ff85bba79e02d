/**
 * How the chunk plan (summarize.ts, `planChunks`) sizes each entry: from the message's cached
 * token count when it has one of the counter's encoding (scaled to the share of the message the
 * transcript shows), never re-encoding it; exactly when the count is missing, of another
 * encoding, covers a placeholder instead of the pruned original (`foldText`), or makes the entry
 * look bigger than a chunk. Written against the mutants StrykerJS left alive in
 * `estimateEntryTokens` (docs/benchmarks.md, "Mutation testing"). The counter here counts
 * characters, and the cached counts are deliberately far from the text's real size, so each
 * test sees which of the two sized the entry by how the turns were split.
 */
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/messages.js";
import { planChunks, type SummarizeInput } from "../../../src/context/summarize.js";
import type { Summarizer, SummaryResponse } from "../../../src/context/summarizer.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

const ENCODING = "test-chars";

/** Counts characters, and records every text it was asked to count. */
function countingCounter() {
  const counted: string[] = [];
  const counter = createTokenCounter(ENCODING, (text) => (counted.push(text), text.length));
  return { counter, counted };
}

const summarizer = (contextWindow: number): Summarizer => ({
  model: "aux",
  contextWindow,
  summarize: async (): Promise<SummaryResponse> => ({ text: "" }),
});

const input = (middle: ChatMessage[], counter: SummarizeInput["counter"]): SummarizeInput => ({
  middle, budgetTokens: 500, counter, toolNames: new Map([["c1", "read_file"]]), retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 1_000 },
});

/** A 16K summarizer window leaves chunks of a few thousand tokens here (the same plan as summarize-policy's). */
const WINDOW = 16_000;

const chunkIds = (chunks: readonly string[]) => chunks.map((chunk) => [...chunk.matchAll(/^\[(m\d+)\]/gm)].map((match) => match[1]));

describe("the chunk plan sizes entries", () => {
  it("from a cached count of the counter's encoding, without encoding the message again", () => {
    const { counter, counted } = countingCounter();
    // 100 characters each, but a cached count of 4,000 tokens: two do not fit one chunk together.
    const middle: ChatMessage[] = Array.from({ length: 4 }, (_, index) => ({
      id: `m${index + 1}`, role: "user", content: `question ${index + 1} `.padEnd(100, "q"), tokens: { encoding: ENCODING, count: 4_000 },
    }));
    const plan = planChunks(input(middle, counter), summarizer(WINDOW));
    expect(chunkIds(plan.chunks)).toEqual([["m1"], ["m2"], ["m3"], ["m4"]]);
    expect(counted.some((text) => text.includes("question 1"))).toBe(false);
  });

  it("exactly when the cached count is of another encoding", () => {
    const { counter, counted } = countingCounter();
    const middle: ChatMessage[] = Array.from({ length: 4 }, (_, index) => ({
      id: `m${index + 1}`, role: "user", content: `question ${index + 1} `.padEnd(100, "q"), tokens: { encoding: "o200k_base", count: 4_000 },
    }));
    const plan = planChunks(input(middle, counter), summarizer(WINDOW));
    expect(chunkIds(plan.chunks)).toEqual([["m1", "m2", "m3", "m4"]]);
    expect(counted.filter((text) => text.includes("question ")).length).toBe(4);
  });

  it("exactly for a pruned tool result, whose cached count covers only its placeholder", () => {
    const { counter } = countingCounter();
    // Each shows its kept original (2,500 characters) to the summarizer: two per chunk at most.
    const middle: ChatMessage[] = Array.from({ length: 4 }, (_, index) => ({
      id: `m${index + 1}`, role: "tool", tool_call_id: "c1", content: "[tool output pruned]", foldText: `rows ${index + 1} `.padEnd(2_500, "r"),
      tokens: { encoding: ENCODING, count: 10 },
    }));
    const plan = planChunks(input(middle, counter), summarizer(WINDOW));
    expect(plan.chunks.length).toBeGreaterThanOrEqual(2);
    expect(chunkIds(plan.chunks).flat()).toEqual(["m1", "m2", "m3", "m4"]);
    expect(plan.chunks.join("\n")).not.toContain("cut to fit the summarizer");
  });

  it("scaled to the part the transcript shows of a long message, not its whole cached count", () => {
    const { counter } = countingCounter();
    // 40,000 characters with a cached count of 20,000, of which the transcript shows 6,000
    // characters (an assistant message's clip): sized by that share (~3,000) the two share a
    // chunk of a 40K summarizer window; sized by the whole count (20,000) they would not.
    const middle: ChatMessage[] = ["m1", "m2"].map((id) => ({ id, role: "assistant", content: `${id} `.padEnd(40_000, "a"), tokens: { encoding: ENCODING, count: 20_000 } }));
    const plan = planChunks(input(middle, counter), summarizer(40_000));
    expect(chunkIds(plan.chunks)).toEqual([["m1", "m2"]]);
    expect(plan.chunks[0]).not.toContain("cut to fit the summarizer");
  });

  it("counts the calls of an assistant message with no text as its source", () => {
    const { counter } = countingCounter();
    // No content, 6,000 cached tokens for the calls alone (the entry shows about half of their
    // JSON): sized from the cache, one per chunk; counted exactly, all three would share one.
    const middle: ChatMessage[] = Array.from({ length: 3 }, (_, index) => ({
      id: `m${index + 1}`, role: "assistant", content: null,
      tool_calls: [{ id: `c${index + 1}`, type: "function", function: { name: "read_file", arguments: JSON.stringify({ path: `src/file${index + 1}.ts` }) } }],
      tokens: { encoding: ENCODING, count: 6_000 },
    }));
    const plan = planChunks(input(middle, counter), summarizer(WINDOW));
    expect(chunkIds(plan.chunks)).toEqual([["m1"], ["m2"], ["m3"]]);
  });

  it("exactly, and whole, when a cached count says the entry alone is bigger than a chunk", () => {
    const { counter } = countingCounter();
    const middle: ChatMessage[] = [
      { id: "m1", role: "user", content: "a short question about the ledger", tokens: { encoding: ENCODING, count: 50_000 } },
      { id: "m2", role: "assistant", content: "a short answer", tokens: { encoding: ENCODING, count: 10 } },
    ];
    const plan = planChunks(input(middle, counter), summarizer(WINDOW));
    expect(chunkIds(plan.chunks)).toEqual([["m1", "m2"]]);
    expect(plan.chunks[0]).toContain("a short question about the ledger");
    expect(plan.chunks[0]).not.toContain("cut to fit the summarizer");
  });
});
