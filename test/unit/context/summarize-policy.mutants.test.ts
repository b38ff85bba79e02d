/**
 * The summarizer's call policy and chunk plan (summarize.ts), against the mutants StrykerJS left
 * alive (docs/benchmarks.md, "Mutation testing"): attempts and backoff, the timeout and the
 * caller's abort, errors that end the attempts, empty and cut summaries, the usage it adds up,
 * the fallback's failure report, and the plan's target, max_tokens and chunk sizes.
 */
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/messages.js";
import {
  backoffDelay,
  MAX_OUTPUT_SHARE_OF_SUMMARIZER_WINDOW,
  MAX_SUMMARY_SHARE_OF_SUMMARIZER_WINDOW,
  planChunks,
  REASONING_ALLOWANCE_TOKENS,
  SUMMARIZER_WINDOW_SAFETY,
  SummarizerFailedError,
  SummarizerTimeoutError,
  SummarizerWindowError,
  summarizeWithFallback,
  type SummarizeInput,
  type SummarizeStats,
} from "../../../src/context/summarize.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../../../src/context/summarizer.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

const counter = createTokenCounter("test-chars", (text) => text.length);

class Scripted implements Summarizer {
  readonly requests: SummaryRequest[] = [];
  constructor(readonly model: string, private readonly answer: (call: number, request: SummaryRequest) => Promise<SummaryResponse>, readonly contextWindow = 100_000) {}
  summarize(request: SummaryRequest): Promise<SummaryResponse> {
    this.requests.push(request);
    return this.answer(this.requests.length, request);
  }
}

const middle: ChatMessage[] = [
  { id: "m1", role: "user", content: "please plan the release" },
  { id: "m2", role: "assistant", content: "planned: ship on Friday" },
];
const input = (overrides: Partial<SummarizeInput> = {}): SummarizeInput => ({
  middle, budgetTokens: 500, counter, toolNames: new Map(), retry: { attempts: 3, baseDelayMs: 0, timeoutMs: 5_000 }, ...overrides,
});
const stats = (): SummarizeStats => ({ calls: 0, promptTokens: 0, completionTokens: 0 });
const usage = (promptTokens: number, completionTokens: number) => ({ promptTokens, completionTokens, cachedTokens: 0 });

describe("the call policy", () => {
  it("backs off doubling from the base delay, and waits it between failed attempts", async () => {
    expect([1, 2, 3].map((retry) => backoffDelay(retry, 1_000))).toEqual([1_000, 2_000, 4_000]);
    const at: number[] = [];
    const summarizer = new Scripted("aux", async (call) => (at.push(Date.now()), call < 3 ? Promise.reject(new Error("502")) : { text: "## Goal\nok" }));
    await summarizeWithFallback(input({ retry: { attempts: 3, baseDelayMs: 40, timeoutMs: 5_000 } }), [summarizer], stats());
    expect(at).toHaveLength(3);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(35);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(75);
  });

  it("gives up a call that does not answer in time, aborting it, and counts it as a failed attempt", async () => {
    const signals: AbortSignal[] = [];
    const summarizer = new Scripted("slow", (_call, request) => (signals.push(request.signal!), new Promise(() => {})));
    const error = await summarizeWithFallback(input({ retry: { attempts: 2, baseDelayMs: 0, timeoutMs: 20 } }), [summarizer], stats()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SummarizerFailedError);
    const cause = (error as SummarizerFailedError).failures[0]!.error;
    expect(cause).toBeInstanceOf(SummarizerTimeoutError);
    expect(cause).toMatchObject({ model: "slow", timeoutMs: 20 });
    expect(summarizer.requests).toHaveLength(2);
    expect(signals.every((signal) => signal.aborted)).toBe(true);
  });

  it("stops at once when the caller aborts, and tries no fallback", async () => {
    const controller = new AbortController();
    const first = new Scripted("aux", () => (setTimeout(() => controller.abort(new Error("turn cancelled")), 5), new Promise(() => {})));
    const fallback = new Scripted("main", async () => ({ text: "## Goal\nfallback" }));
    await expect(summarizeWithFallback(input({ signal: controller.signal }), [first, fallback], stats())).rejects.toThrow("turn cancelled");
    expect(first.requests).toHaveLength(1);
    expect(fallback.requests).toHaveLength(0);
  });

  it("an error marked final ends this summarizer's attempts; the fallback still runs", async () => {
    const budget = new Scripted("aux", async () => Promise.reject(Object.assign(new Error("budget used up"), { final: true })));
    const fallback = new Scripted("main", async () => ({ text: "## Goal\nfrom the main model" }));
    const outcome = await summarizeWithFallback(input(), [budget, fallback], stats());
    expect(budget.requests).toHaveLength(1);
    expect(outcome).toEqual({ text: "## Goal\nfrom the main model", model: "main", chunks: 1 });
  });

  it("an empty summary is a failed attempt; only empty ones fail the summarizer", async () => {
    const onceEmpty = new Scripted("aux", async (call) => ({ text: call === 1 ? "  \n " : "## Goal\nsecond try" }));
    expect((await summarizeWithFallback(input(), [onceEmpty], stats())).text).toBe("## Goal\nsecond try");
    const alwaysEmpty = new Scripted("aux", async () => ({ text: "" }));
    const error = (await summarizeWithFallback(input(), [alwaysEmpty], stats()).catch((caught: unknown) => caught)) as SummarizerFailedError;
    expect(alwaysEmpty.requests).toHaveLength(3);
    expect(String((error.failures[0]!.error as Error).message)).toContain("empty summary");
  });

  it("a cut summary is asked again once, in the same room, for half the length, without using up an attempt; usage adds up over every call", async () => {
    const summarizer = new Scripted("aux", async (call, request) =>
      call === 1 ? { text: "## Goal\ncut mid-", finishReason: "length", usage: usage(100, request.maxTokens) } : { text: "## Goal\nwhole", finishReason: "stop", usage: usage(110, 20) });
    const totals = stats();
    const outcome = await summarizeWithFallback(input({ retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 5_000 } }), [summarizer], totals);
    expect(outcome.text).toBe("## Goal\nwhole");
    expect(summarizer.requests[1]!.maxTokens).toBe(summarizer.requests[0]!.maxTokens);
    const target = /about (\d+) tokens/.exec(String(summarizer.requests[0]!.messages[0]!.content))![1]!;
    expect(String(summarizer.requests[1]!.messages[0]!.content)).toContain(`about ${Math.floor(Number(target) / 2)} tokens`);
    expect(String(summarizer.requests[1]!.messages.at(-1)!.content)).toContain("Your previous answer ran past its length limit");
    expect(totals).toEqual({ calls: 2, promptTokens: 210, completionTokens: summarizer.requests[0]!.maxTokens + 20 });
  });

  it("leaves no listener on the caller's signal once its calls (failed, timed out, answered) and the waits between them are over", async () => {
    const controller = new AbortController();
    const { signal } = controller;
    const summarizer = new Scripted("aux", (call) =>
      call === 1 ? Promise.reject(new Error("502")) : call === 2 ? new Promise(() => {}) : Promise.resolve({ text: "## Goal\nthird time" }));
    const outcome = await summarizeWithFallback(input({ signal, retry: { attempts: 3, baseDelayMs: 5, timeoutMs: 30 } }), [summarizer], stats());
    expect(outcome.text).toBe("## Goal\nthird time");
    expect(summarizer.requests).toHaveLength(3);
    // The signal's own listener list (not a wrapper, which cannot see a removal under the wrong event type).
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });

  it("an abort during the wait before a retry ends the wait with the caller's reason, and no further call is made", async () => {
    const controller = new AbortController();
    const summarizer = new Scripted("aux", async () => (setTimeout(() => controller.abort(new Error("turn cancelled")), 10), Promise.reject(new Error("502"))));
    // A ten-minute backoff: only the abort can end the wait.
    const pending = summarizeWithFallback(input({ signal: controller.signal, retry: { attempts: 3, baseDelayMs: 600_000, timeoutMs: 5_000 } }), [summarizer], stats());
    await expect(pending).rejects.toThrow("turn cancelled");
    expect(summarizer.requests).toHaveLength(1);
    // Aborted after an (empty) answer came back, before the wait began: the wait does not start.
    const late = new AbortController();
    const emptyThenCancelled = new Scripted("aux", async () => ({
      get text() {
        late.abort(new Error("cancelled while reading"));
        return "";
      },
    }));
    await expect(summarizeWithFallback(input({ signal: late.signal, retry: { attempts: 3, baseDelayMs: 600_000, timeoutMs: 5_000 } }), [emptyThenCancelled], stats())).rejects.toThrow("cancelled while reading");
    expect(emptyThenCancelled.requests).toHaveLength(1);
    // Already aborted before the first call: no call at all.
    const early = new Scripted("aux", async () => ({ text: "## Goal\nnever" }));
    await expect(summarizeWithFallback(input({ signal: AbortSignal.abort(new Error("gone")) }), [early], stats())).rejects.toThrow("gone");
    expect(early.requests).toHaveLength(0);
  });

  it("reports every summarizer's failure, in order, and keeps the last as the cause", async () => {
    const a = new Scripted("aux", async () => Promise.reject(new Error("a down")));
    const b = new Scripted("main", async () => Promise.reject(new Error("b down")));
    const error = (await summarizeWithFallback(input({ retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 5_000 } }), [a, b], stats()).catch((caught: unknown) => caught)) as SummarizerFailedError;
    expect(error.failures.map((failure) => [failure.model, (failure.error as Error).message])).toEqual([["aux", "a down"], ["main", "b down"]]);
    expect(error.message).toBe("summary failed (aux, main)");
    expect((error.cause as Error).message).toBe("b down");
  });
});

describe("the chunk plan", () => {
  it("asks for the budget, capped by the summarizer's window, with room for a longer answer and reasoning", () => {
    const roomy = new Scripted("aux", async () => ({ text: "" }), 100_000);
    const window = Math.floor(100_000 * SUMMARIZER_WINDOW_SAFETY);
    expect(planChunks(input({ budgetTokens: 500 }), roomy)).toMatchObject({ targetTokens: 500, maxTokens: 2 * 500 + REASONING_ALLOWANCE_TOKENS, usableWindow: window });
    const capped = planChunks(input({ budgetTokens: 50_000 }), roomy);
    expect(capped.targetTokens).toBe(Math.floor(window * MAX_SUMMARY_SHARE_OF_SUMMARIZER_WINDOW));
    expect(capped.maxTokens).toBe(Math.floor(window * MAX_OUTPUT_SHARE_OF_SUMMARIZER_WINDOW));
  });

  it("refuses a window too small for any chunk, naming the model", () => {
    const tiny = new Scripted("tiny-model", async () => ({ text: "" }), 4_000);
    expect(() => planChunks(input(), tiny)).toThrow(SummarizerWindowError);
    expect(() => planChunks(input(), tiny)).toThrow(/tiny-model \(4000 tokens\)/);
  });

  it("splits the turns into chunks that each fit, every message once, and cuts a single message bigger than a chunk", () => {
    const summarizer = new Scripted("aux", async () => ({ text: "" }), 16_000);
    const many: ChatMessage[] = Array.from({ length: 12 }, (_, index) => ({ id: `m${index}`, role: "user", content: `${index} ${"w".repeat(1_500)}` }));
    const plan = planChunks(input({ middle: many }), summarizer);
    expect(plan.chunks.length).toBeGreaterThan(1);
    expect(plan.chunks.join("\n").match(/\[m\d+\]/g)).toEqual(many.map((message) => `[${message.id}]`));
    // A user message keeps up to 12,000 characters in the transcript: more than this window's chunk.
    const huge: ChatMessage[] = [{ id: "big", role: "user", content: "z".repeat(40_000) }];
    const cut = planChunks(input({ middle: huge }), summarizer);
    expect(cut.chunks).toHaveLength(1);
    expect(cut.chunks[0]).toContain("cut to fit the summarizer");
    expect(cut.chunks[0]!.length).toBeLessThan(16_000);
  });
});
