/**
 * When the summarizer's calls wait and when they do not (summarize.ts, `callWithRetry`,
 * `callOnce`), against the mutants StrykerJS left alive (docs/benchmarks.md, "Mutation
 * testing"). The backoff and the timeout here are ten minutes: a call that waits for either
 * never ends within the test, so what must happen at once is seen without timing anything.
 */
import { describe, expect, it, vi } from "vitest";
import type { ChatMessage } from "../../../src/core/messages.js";
import { summarizeWithFallback, type SummarizeInput, type SummarizeStats } from "../../../src/context/summarize.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../../../src/context/summarizer.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

const counter = createTokenCounter("test-chars", (text) => text.length);
const TEN_MINUTES = 600_000;

class Scripted implements Summarizer {
  readonly requests: SummaryRequest[] = [];
  readonly contextWindow = 100_000;
  constructor(readonly model: string, private readonly answer: (call: number, request: SummaryRequest) => Promise<SummaryResponse>) {}
  summarize(request: SummaryRequest): Promise<SummaryResponse> {
    this.requests.push(request);
    return this.answer(this.requests.length, request);
  }
}

const middle: ChatMessage[] = [
  { id: "m1", role: "user", content: "please plan the release" },
  { id: "m2", role: "assistant", content: "planned: ship on Friday" },
];
const BUDGET = 500;
const input = (overrides: Partial<SummarizeInput> = {}): SummarizeInput => ({
  middle, budgetTokens: BUDGET, counter, toolNames: new Map(), retry: { attempts: 3, baseDelayMs: TEN_MINUTES, timeoutMs: TEN_MINUTES }, ...overrides,
});
const stats = (): SummarizeStats => ({ calls: 0, promptTokens: 0, completionTokens: 0 });

describe("what happens at once", () => {
  it("a caller's abort ends a call whose summarizer ignores its signal, without waiting for the timeout, and aborts the summarizer's own signal with the caller's reason", async () => {
    const controller = new AbortController();
    const reason = new Error("turn cancelled");
    const deaf = new Scripted("aux", () => (setTimeout(() => controller.abort(reason), 5), new Promise(() => {})));
    await expect(summarizeWithFallback(input({ signal: controller.signal }), [deaf], stats())).rejects.toBe(reason);
    expect(deaf.requests).toHaveLength(1);
    expect(deaf.requests[0]!.signal!.aborted).toBe(true);
    expect(deaf.requests[0]!.signal!.reason).toBe(reason);
  });

  it("the shorter ask after a length stop, or after a summary over 1.5 × its target, goes without a backoff wait, even after a failed attempt", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      for (const overLong of [{ text: "## Goal\ncut mid-", finishReason: "length" }, { text: `## Goal\n${"x".repeat(2 * BUDGET)}`, finishReason: "stop" }]) {
        const summarizer = new Scripted("aux", async (call) => (call === 1 ? Promise.reject(new Error("502")) : call === 2 ? overLong : { text: "## Goal\nwhole", finishReason: "stop" }));
        const pending = summarizeWithFallback(input({ retry: { attempts: 3, baseDelayMs: 1_000, timeoutMs: TEN_MINUTES } }), [summarizer], stats());
        // The one backoff wait (after the 502); the shorter ask that follows the over-long answer needs no timer.
        await vi.advanceTimersByTimeAsync(1_000);
        expect(summarizer.requests, overLong.finishReason).toHaveLength(3);
        expect((await pending).text).toBe("## Goal\nwhole");
      }
    } finally {
      vi.useRealTimers();
    }
  });

  it("a failure after the shorter ask waits its backoff like any other: the caller's abort is what ends it", async () => {
    const controller = new AbortController();
    const summarizer = new Scripted("aux", async (call) => {
      if (call === 1) return { text: "## Goal\ncut mid-", finishReason: "length" };
      setTimeout(() => controller.abort(new Error("gave up waiting")), 20);
      throw new Error("502 bad gateway");
    });
    await expect(summarizeWithFallback(input({ signal: controller.signal }), [summarizer], stats())).rejects.toThrow("gave up waiting");
    // Had it not waited, the third call would have come before the abort.
    expect(summarizer.requests).toHaveLength(2);
  });

  it("a second over-long answer gives up on this summarizer at once: the fallback writes the summary", async () => {
    const rambling = new Scripted("aux", async () => ({ text: "## Goal\nrambling", finishReason: "length" }));
    const fallback = new Scripted("main", async () => ({ text: "## Goal\nfrom the main model", finishReason: "stop" }));
    const outcome = await summarizeWithFallback(input(), [rambling, fallback], stats());
    expect(rambling.requests).toHaveLength(2);
    expect(outcome).toEqual({ text: "## Goal\nfrom the main model", model: "main", chunks: 1 });
  });

  it("no attempts configured still makes one call, and the summary comes back trimmed", async () => {
    const once = new Scripted("aux", async () => ({ text: "\n  ## Goal\nplanned  \n", finishReason: "stop" }));
    const outcome = await summarizeWithFallback(input({ retry: { attempts: 0, baseDelayMs: TEN_MINUTES, timeoutMs: TEN_MINUTES } }), [once], stats());
    expect(once.requests).toHaveLength(1);
    expect(outcome.text).toBe("## Goal\nplanned");
  });
});
