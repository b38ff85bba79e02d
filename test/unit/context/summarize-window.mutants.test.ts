/**
 * Every request the summarizer gets fits its window (summarize.ts, `planChunks`): the prompt
 * frame, the running summary at the longest length accepted (1.5 × the target), a chunk filled
 * to the last token, and max_tokens. Written against the mutants StrykerJS left alive in the
 * chunk plan's sizes (docs/benchmarks.md, "Mutation testing"): a frame counted too small, a
 * summary reserve that ignores the running summary, a chunk closed one turn early. The counter
 * counts characters, so a turn's size is exact; the largest turn a chunk holds is found from
 * the plan itself (the biggest one it sends without cutting), not from the formula.
 */
import { describe, expect, it } from "vitest";
import type { ApiMessage, ChatMessage } from "../../../src/core/messages.js";
import { MAX_SUMMARY_OVER_TARGET, MIN_CHUNK_TOKENS, planChunks, summarizeWithFallback, type SummarizeInput } from "../../../src/context/summarize.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../../../src/context/summarizer.js";
import { createTokenCounter, MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS } from "../../../src/context/tokens.js";

const counter = createTokenCounter("test-chars", (text) => text.length);
const promptTokens = (messages: readonly ApiMessage[]) =>
  REPLY_PRIMING_TOKENS + messages.reduce((sum, message) => sum + MESSAGE_OVERHEAD_TOKENS + counter.countText(String(message.content ?? "")), 0);

const WINDOW = 16_000;
const USABLE = Math.floor(WINDOW * 0.85);
const BUDGET = 500;
/** The longest summary accepted: anything longer is asked again, shorter. */
const LONGEST = MAX_SUMMARY_OVER_TARGET * BUDGET;

/** Answers every chunk with a summary of exactly the longest accepted length, and keeps each request. */
class Longest implements Summarizer {
  readonly model = "aux";
  readonly requests: SummaryRequest[] = [];
  constructor(readonly contextWindow: number) {}
  async summarize(request: SummaryRequest): Promise<SummaryResponse> {
    this.requests.push(request);
    return { text: `## Goal\n${"s".repeat(LONGEST - 8)}`, finishReason: "stop" };
  }
}

const input = (middle: ChatMessage[], extra: Partial<SummarizeInput> = {}): SummarizeInput => ({
  middle, budgetTokens: BUDGET, counter, toolNames: new Map(), retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 5_000 }, ...extra,
});
const turn = (id: string, chars: number): ChatMessage => ({ id, role: "user", content: `${id} `.padEnd(chars, "w") });

/** The most characters one user turn may have and still go whole into a chunk, for these settings. */
function largestWholeTurn(extra: Partial<SummarizeInput>): number {
  const summarizer = new Longest(WINDOW);
  const whole = (chars: number) => !planChunks(input([turn("m1", chars)], extra), summarizer).chunks[0]!.includes("cut to fit the summarizer");
  let low = 10;
  let high = 12_000;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (whole(middle)) low = middle;
    else high = middle;
  }
  return low;
}

async function requestsFor(middle: ChatMessage[], extra: Partial<SummarizeInput>): Promise<SummaryRequest[]> {
  const summarizer = new Longest(WINDOW);
  await summarizeWithFallback(input(middle, extra), [summarizer], { calls: 0, promptTokens: 0, completionTokens: 0 });
  return summarizer.requests;
}

describe("every summarizer request fits the summarizer's window", () => {
  it("chunks filled to the last token, after a running summary of the longest accepted length, with a focus", async () => {
    const extra = { focus: "the ledger totals for region 7" };
    const largest = largestWholeTurn(extra);
    const requests = await requestsFor([turn("m1", largest), turn("m2", largest), turn("m3", 40)], extra);
    expect(requests).toHaveLength(3);
    for (const request of requests) expect(promptTokens(request.messages) + request.maxTokens).toBeLessThanOrEqual(USABLE);
    // The second request carries the first chunk's summary and a full chunk: it is the tight one.
    expect(String(requests[1]!.messages[1]!.content)).toContain("s".repeat(LONGEST - 8));
    expect(promptTokens(requests[1]!.messages) + requests[1]!.maxTokens).toBeGreaterThan(USABLE - 40);
  });

  it("a previous summary longer than the running one gets its whole room in the first request", async () => {
    const previousSummary = `## Goal\n${"p".repeat(3_000)}`;
    const largest = largestWholeTurn({ previousSummary });
    const [first] = await requestsFor([turn("m1", largest)], { previousSummary });
    expect(String(first!.messages[1]!.content)).toContain(previousSummary);
    expect(promptTokens(first!.messages) + first!.maxTokens).toBeLessThanOrEqual(USABLE);
    // Without the previous summary the same plan holds a turn that much bigger.
    expect(largestWholeTurn({}) - largest).toBeGreaterThan(3_000 - LONGEST - 100);
  });

  it("turns that fill a chunk exactly share it; one character more and the second opens the next", () => {
    const largest = largestWholeTurn({});
    const summarizer = new Longest(WINDOW);
    // A whole turn's entry is as big as a chunk: two entries fill one when their sizes add up to it
    // (each entry counts one token for the line break that joins it).
    const entryOf = (chars: number) => chars + "[m1] user: ".length + 1;
    const first = 1_000;
    const second = entryOf(largest) - entryOf(first) - "[m2] user: ".length - 1;
    const exact = planChunks(input([turn("m1", first), turn("m2", second)]), summarizer);
    expect(exact.chunks).toHaveLength(1);
    const over = planChunks(input([turn("m1", first), turn("m2", second + 1)]), summarizer);
    expect(over.chunks).toHaveLength(2);
  });

  it("every chunk is turns only, each starting at a turn's label", () => {
    const largest = largestWholeTurn({});
    const plan = planChunks(input([turn("m1", largest), turn("m2", 100), turn("m3", 200)]), new Longest(WINDOW));
    expect(plan.chunks).toHaveLength(2);
    expect(plan.chunks.map((chunk) => chunk.split("\n").map((line) => line.slice(0, 4)))).toEqual([["[m1]"], ["[m2]", "[m3]"]]);
  });
});

describe("sizes from cached counts, against what a chunk holds", () => {
  const ENCODING = counter.encoding;
  const cached = (message: ChatMessage, count: number): ChatMessage => ({ ...message, tokens: { encoding: ENCODING, count } });

  it("a cached count that looks too big is checked exactly: the largest whole turn stays whole, one character more is cut", () => {
    const largest = largestWholeTurn({});
    const summarizer = new Longest(WINDOW);
    const cutOf = (chars: number) => planChunks(input([cached(turn("m1", chars), 50_000)]), summarizer).chunks[0]!.includes("cut to fit the summarizer");
    expect(cutOf(largest)).toBe(false);
    expect(cutOf(largest + 1)).toBe(true);
  });

  it("a cached count covers the message, not its label: two turns whose counts fill a chunk only without their labels go in two", () => {
    const capacity = largestWholeTurn({}) + "[m1] user: ".length + 1;
    const summarizer = new Longest(WINDOW);
    const half = Math.floor(capacity / 2) - 5;
    const plan = planChunks(input([cached(turn("m1", 20), half), cached(turn("m2", 20), half)]), summarizer);
    expect(plan.chunks).toHaveLength(2);
    // Well under a chunk together, labels included: one.
    expect(planChunks(input([cached(turn("m1", 20), half - 20), cached(turn("m2", 20), half - 20)]), summarizer).chunks).toHaveLength(1);
  });

  it("an empty message with a cached count is counted as its entry, and the turns after it still split", () => {
    const largest = largestWholeTurn({});
    const empty: ChatMessage = cached({ id: "m2", role: "assistant", content: "" }, 4);
    const plan = planChunks(input([turn("m1", 1_000), empty, turn("m3", largest)]), new Longest(WINDOW));
    expect(plan.chunks).toHaveLength(2);
    expect(plan.chunks[1]!.startsWith("[m3]")).toBe(true);
  });

  it("a picture sent without a caption (no text, a cached count) is counted as its entry, and the turns after it still split", () => {
    const largest = largestWholeTurn({});
    const photo: ChatMessage = cached({ id: "m2", role: "user", content: "" }, 765);
    const plan = planChunks(input([turn("m1", 1_000), photo, turn("m3", largest)]), new Longest(WINDOW));
    expect(plan.chunks).toHaveLength(2);
    expect(plan.chunks[0]!.split("\n").map((line) => line.slice(0, 4))).toEqual(["[m1]", "[m2]"]);
    expect(plan.chunks[1]!.startsWith("[m3]")).toBe(true);
  });

  it("an assistant message with text and calls scales its cached count by the share of both the transcript shows", () => {
    // 10,000 characters of text (6,000 shown) and a call of ~3,000 characters (1,000 shown): the
    // entry shows about half of the source, so about half the cached count; two share a 40K window's chunk.
    const speaking = (id: string): ChatMessage => cached({
      id, role: "assistant", content: `${id} `.padEnd(10_000, "a"),
      tool_calls: [{ id: `c-${id}`, type: "function", function: { name: "write_file", arguments: JSON.stringify({ text: "t".repeat(3_000) }) } }],
    }, 20_000);
    const plan = planChunks(input([speaking("m1"), speaking("m2")]), new Longest(40_000));
    expect(plan.chunks).toHaveLength(1);
    expect(plan.chunks[0]).not.toContain("cut to fit the summarizer");
  });

  it("the smallest window accepted leaves exactly the minimum chunk; one that leaves less is refused, naming what it leaves", () => {
    const leaves = (contextWindow: number): number | undefined => {
      try {
        planChunks(input([turn("m1", 10)]), new Longest(contextWindow));
        return undefined;
      } catch (error) {
        return Number(/leaves (-?\d+) tokens per chunk/.exec((error as Error).message)![1]);
      }
    };
    let window = 4_000;
    while (leaves(window) !== undefined) window += 1;
    expect(leaves(window - 1)).toBe(MIN_CHUNK_TOKENS - 1);
  });
});
