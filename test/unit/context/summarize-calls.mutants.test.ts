/**
 * When the summarizer's calls wait and when they do not (summarize.ts, `callWithRetry`,
 * `callOnce`), against the mutants StrykerJS left alive (docs/benchmarks.md, "Mutation
 * testing"). The backoff and the timeout here are ten minutes: a call that waits for either
 * never ends within the test, so what must happen at once is seen without timing anything.
 */
import { describe, expect, it, vi } from "vitest";
import type { ChatMessage } from "../../../src/core/messages.js";
import {
  SummarizerFailedError,
  SummarizerTimeoutError,
  SummarizerWindowError,
  summarizeWithFallback,
  SummaryTooLongError,
  SummaryTruncatedError,
  type SummarizeInput,
  type SummarizeStats,
} from "../../../src/context/summarize.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../../../src/context/summarizer.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

const counter = createTokenCounter("test-chars", (text) => text.length);
const TEN_MINUTES = 600_000;

class Scripted implements Summarizer {
  readonly requests: SummaryRequest[] = [];
  readonly contextWindow: number = 100_000;
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

  it("a summarizer that throws at once, or rejects with nothing, still gets its retries; the failure report keeps what it threw", async () => {
    const thrown = new Error("bad request shape");
    const throwing: Summarizer = { model: "aux", contextWindow: 100_000, summarize: () => { throw thrown; } };
    const error = (await summarizeWithFallback(input({ retry: { attempts: 2, baseDelayMs: 0, timeoutMs: TEN_MINUTES } }), [throwing], stats()).catch((caught: unknown) => caught)) as SummarizerFailedError;
    expect(error.failures[0]!.error).toBe(thrown);
    expect(error.cause).toBe(thrown);
    const nothing = new Scripted("aux", async (call) => (call === 1 ? Promise.reject(null) : { text: "## Goal\nsecond try", finishReason: "stop" }));
    expect((await summarizeWithFallback(input({ retry: { attempts: 2, baseDelayMs: 0, timeoutMs: TEN_MINUTES } }), [nothing], stats())).text).toBe("## Goal\nsecond try");
  });

  it("the failure report says why: the timeout, the length stop, the over-long summary", async () => {
    const reasons = async (answer: () => Promise<SummaryResponse>, timeoutMs = TEN_MINUTES) => {
      const error = (await summarizeWithFallback(input({ retry: { attempts: 1, baseDelayMs: 0, timeoutMs } }), [new Scripted("aux", answer)], stats()).catch((caught: unknown) => caught)) as SummarizerFailedError;
      return (error.failures[0]!.error as Error).message;
    };
    expect(await reasons(() => new Promise(() => {}), 20)).toBe("summarizer aux did not answer within 20 ms");
    expect(await reasons(async () => ({ text: "## Goal\ncut", finishReason: "length" }))).toMatch(/^summarizer aux stopped at max_tokens \(\d+\) before finishing the summary$/);
    expect(await reasons(async () => ({ text: "x".repeat(2 * BUDGET), finishReason: "stop" }))).toBe(`summarizer aux wrote more than 1.5 × the ${BUDGET} tokens asked for`);
  });

  it("passes who pays on to every call", async () => {
    const budget = { chargeTo: "chat:1" } as unknown as NonNullable<SummarizeInput["budget"]>;
    const summarizer = new Scripted("aux", async () => ({ text: "## Goal\nok", finishReason: "stop" }));
    await summarizeWithFallback(input({ budget }), [summarizer], stats());
    expect(summarizer.requests[0]!.budget).toBe(budget);
  });

  it("an empty middle makes no call and gives back the previous summary, or nothing", async () => {
    const idle = new Scripted("aux", async () => ({ text: "## Goal\nnever", finishReason: "stop" }));
    expect(await summarizeWithFallback(input({ middle: [] }), [idle], stats())).toEqual({ text: "", model: "aux", chunks: 0 });
    expect((await summarizeWithFallback(input({ middle: [], previousSummary: "## Goal\nkept" }), [idle], stats())).text).toBe("## Goal\nkept");
    expect(idle.requests).toHaveLength(0);
  });
});

describe("the shorter ask in a fold of several chunks", () => {
  it("keeps the chunk's part, the running summary and the focus, and adds its note once to the last message", async () => {
    // A 16K summarizer window and 1,500-character turns: several chunks.
    const many: ChatMessage[] = Array.from({ length: 12 }, (_, index) => ({ id: `m${index}`, role: "user", content: `${index} ${"w".repeat(1_500)}` }));
    const summarizer = new (class extends Scripted {
      override readonly contextWindow = 16_000;
    })("aux", async (call) => (call === 2 ? { text: "## Goal\ncut mid-", finishReason: "length" } : { text: `## Goal\nafter call ${call}`, finishReason: "stop" }));
    const outcome = await summarizeWithFallback(input({ middle: many, focus: "the ledger" }), [summarizer], stats());
    expect(outcome.chunks).toBeGreaterThan(1);
    const [, cut, shorter] = summarizer.requests;
    const userOf = (request: SummaryRequest) => String(request.messages[1]!.content);
    expect(userOf(cut!)).toContain(`<turns part="2 of ${outcome.chunks}">`);
    expect(shorter!.messages).toHaveLength(2);
    for (const expected of [`<turns part="2 of ${outcome.chunks}">`, "<previous-summary>\n## Goal\nafter call 1\n</previous-summary>", 'focus the summary on "the ledger"', "Your previous answer ran past its length limit"]) {
      expect(userOf(shorter!), expected).toContain(expected);
    }
  });
});

describe("what a logged summarizer error says it is", () => {
  it.each([
    ["SummarizerTimeoutError", new SummarizerTimeoutError("aux", 1_000)],
    ["SummaryTruncatedError", new SummaryTruncatedError("aux", 800)],
    ["SummaryTooLongError", new SummaryTooLongError("aux", 500)],
    ["SummarizerWindowError", new SummarizerWindowError("the window of aux leaves 10 tokens per chunk")],
    ["SummarizerFailedError", new SummarizerFailedError([{ model: "aux", error: new Error("502") }])],
  ])("%s: its stack (what the logs print) and its text start with its name", (name, error) => {
    expect(error.stack!.split("\n")[0]).toBe(`${name}: ${error.message}`);
    expect(String(error)).toBe(`${name}: ${error.message}`);
  });
});
