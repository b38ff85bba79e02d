/**
 * The compaction threshold counted on the window the fixed overhead leaves (issue #31,
 * docs/decisions.md 2026-12-07): tools, the system block and the system prompt open every request
 * (the provider's cached prefix), so COMPACTION_THRESHOLD is a share of what they leave, and the
 * budgets derived from it (tail, summary) follow. compact() is checked through what a caller sees:
 * the record's threshold, the messages kept, the length the summarizer is asked for.
 */
import { describe, expect, it } from "vitest";
import { findBoundaries } from "../../../src/context/boundaries.js";
import { compact, fixedOverheadTokens, type CompactInput } from "../../../src/context/compact.js";
import { defaultHardLimit } from "../../../src/context/decisions.js";
import type { ChatMessage, ToolDefinition } from "../../../src/core/messages.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../../../src/context/summarizer.js";
import { MAX_SUMMARY_SHARE_OF_HEADROOM, MIN_SUMMARY_ROOM_SHARE, summaryBudget } from "../../../src/context/summary-prompt.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

// One token per character: the arithmetic stays readable.
const counter = createTokenCounter("test-chars", (text) => text.length);
const WINDOW = 32_000;
const settings = { contextWindow: WINDOW, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 4 };

class Recording implements Summarizer {
  readonly model = "aux";
  readonly contextWindow = 200_000;
  readonly requests: SummaryRequest[] = [];
  async summarize(request: SummaryRequest): Promise<SummaryResponse> {
    this.requests.push(request);
    return { text: "## Goal\nkeep going" };
  }
}

const toolsOf = (descriptionChars: number): ToolDefinition[] => [
  { type: "function", function: { name: "reference", description: "d".repeat(descriptionChars), parameters: { type: "object" } } },
];

/** A system prompt of `systemChars`, then `turns` plain exchanges of 400 + 400 characters. */
function session(systemChars: number, turns: number) {
  let seq = 0;
  const newId = () => `m${++seq}`;
  const messages: ChatMessage[] = [{ id: newId(), role: "system", content: "s".repeat(systemChars) }];
  for (let turn = 0; turn < turns; turn += 1) {
    messages.push({ id: newId(), role: "user", content: `ask ${turn} ${"u".repeat(400)}` }, { id: newId(), role: "assistant", content: `reply ${turn} ${"a".repeat(400)}` });
  }
  return { messages, newId };
}

const run = (overrides: Partial<CompactInput> & Pick<CompactInput, "messages" | "newId">) => {
  const summarizer = new Recording();
  const input: CompactInput = { settings, reason: "in-loop", summarizer, counter, retry: { attempts: 1, baseDelayMs: 0 }, ...overrides };
  return { summarizer, result: compact(input) };
};

describe("fixedOverheadTokens", () => {
  it("is tools + system block + the system prompt, in the provider's tokens", () => {
    const tools = toolsOf(8_000);
    const { messages } = session(2_000, 3);
    const tools_ = counter.countTools(tools);
    const system = counter.countMessage(messages[0]!);
    expect(fixedOverheadTokens({ messages, tools, extraTokens: 300, counter })).toBe(tools_ + 300 + system);
    // Scaled up to the provider's count, rounded up; a negative block counts as none.
    expect(fixedOverheadTokens({ messages, tools, extraTokens: -50, counter, tokenRatio: 1.5 })).toBe(Math.ceil((tools_ + system) * 1.5));
    // A context that does not open with a system prompt has none to count.
    expect(fixedOverheadTokens({ messages: messages.slice(1), tools, counter })).toBe(tools_);
    expect(fixedOverheadTokens({ messages: [], counter })).toBe(0);
  });
});

describe("compact() with 10K of tools and system prompt in a 32K window", () => {
  const tools = toolsOf(8_000);
  const build = () => session(2_000, 30);

  it("works against the overhead plus half of the window it leaves (21K, not 16K), and says so in the record", async () => {
    const { messages, newId } = build();
    const fixed = fixedOverheadTokens({ messages, tools, counter });
    expect(fixed).toBeGreaterThan(10_000);
    expect(fixed).toBeLessThan(10_200);
    const { result } = run({ messages, newId, tools });
    const { record } = await result;
    expect(record.status).toBe("compacted");
    expect(record.thresholdTokens).toBe(Math.floor(fixed + 0.5 * (WINDOW - fixed)));
  });

  it("keeps a tail of the target share of what the overhead leaves under the threshold", async () => {
    const { messages, newId } = build();
    const fixed = fixedOverheadTokens({ messages, tools, counter });
    const threshold = Math.floor(fixed + 0.5 * (WINDOW - fixed));
    const keptFrom = (tailBudgetTokens: number) => findBoundaries(messages, { counter, tailBudgetTokens, protectLastN: settings.protectLastN }).keptStart;
    const expected = keptFrom(Math.floor(0.2 * (threshold - fixed)));
    // The budget before (20% of the 16K threshold less the tools) keeps fewer turns: the test tells them apart.
    expect(keptFrom(Math.floor(0.2 * (16_000 - counter.countTools(tools))))).toBeGreaterThan(expected);
    const { result } = run({ messages, newId, tools });
    const after = (await result).messages;
    const summaryAt = after.findIndex((message) => message.kind === "summary");
    expect(after.slice(summaryAt + 1).map((message) => message.id)).toEqual(messages.slice(expected).map((message) => message.id));
  });

  it("asks for a summary of 10% of the window the overhead leaves", async () => {
    const { messages, newId } = build();
    const fixed = fixedOverheadTokens({ messages, tools, counter });
    const { summarizer, result } = run({ messages, newId, tools });
    await result;
    const budget = Math.floor(0.1 * (WINDOW - fixed));
    expect(budget).toBeLessThan(2_200);
    // The length asked for; max_tokens leaves 2× that plus room for reasoning.
    expect(summarizer.requests[0]!.maxTokens).toBe(2 * budget + 2_048);
  });

  it("stops at the hard limit when the overhead takes 90% of the window, and the summary keeps a quarter window's bounds", async () => {
    const { messages, newId } = session(2_000, 30);
    const huge = toolsOf(26_800);
    const fixed = fixedOverheadTokens({ messages, tools: huge, counter });
    expect(fixed).toBeGreaterThanOrEqual(0.9 * WINDOW);
    const first = run({ messages, newId, tools: huge });
    expect((await first.result).record.thresholdTokens).toBe(defaultHardLimit(WINDOW));
    // 10% of a quarter of the window, not of the ~3K the tools leave.
    expect(first.summarizer.requests[0]!.maxTokens).toBe(2 * 800 + 2_048);
    const capped = run({ messages, newId, tools: huge, settings: { ...settings, hardLimitTokens: 25_000 } });
    expect((await capped.result).record.thresholdTokens).toBe(25_000);
  });
});

describe("summaryBudget after fixed overhead", () => {
  it("takes its bounds on the window the overhead leaves; which share applies still follows the model's window", () => {
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 32_000, fixedTokens: 10_000 })).toBe(2_200);
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 32_000 })).toBe(3_200);
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 128_000, fixedTokens: 10_000 })).toBe(5_900);
    // 70K with 10K fixed: 5% (a 70K model) of 60K, not the 10% a 60K model would get.
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 70_000, fixedTokens: 10_000 })).toBe(3_000);
    // Overhead past three quarters of the window: the bounds of a quarter window (lo falls with hi).
    expect(MIN_SUMMARY_ROOM_SHARE).toBe(0.25);
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 128_000, fixedTokens: 100_000 })).toBe(1_600);
    expect(summaryBudget({ middleTokens: 0, contextWindow: 128_000, fixedTokens: 100_000 })).toBe(1_600);
    expect(summaryBudget({ middleTokens: 0, contextWindow: 128_000, fixedTokens: 10_000 })).toBe(2_000);
  });

  it("never takes more than a fifth of what the hard limit leaves above the overhead, unless the overhead alone passes it", () => {
    // 85% of 32K fixed, hard limit 28,800: 1,600 left, 320 for the summary (not 800, a quarter window's 10%).
    expect(MAX_SUMMARY_SHARE_OF_HEADROOM).toBe(0.2);
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 32_000, fixedTokens: 27_200, hardLimitTokens: 28_800 })).toBe(320);
    expect(summaryBudget({ middleTokens: 0, contextWindow: 32_000, fixedTokens: 27_200, hardLimitTokens: 28_800 })).toBe(320);
    // Usual sessions: the window's share is the smaller bound, the budget unchanged.
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 32_000, fixedTokens: 10_000, hardLimitTokens: 28_800 })).toBe(2_200);
    // Nothing fits over the hard limit whatever the summary: the window's bounds stay.
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 32_000, fixedTokens: 29_000, hardLimitTokens: 28_800 })).toBe(800);
    // The overhead exactly at the hard limit leaves no headroom either: the window's bounds, not a budget of 0.
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 32_000, fixedTokens: 28_800, hardLimitTokens: 28_800 })).toBe(800);
  });
});
