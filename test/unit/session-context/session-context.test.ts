/**
 * Issue #11, one token unit: the session's context engine with a "provider" whose token counts
 * differ from ours (its own tokenizer, cl100k, × a ratio). Every decision (threshold, anti-thrash,
 * hard limit, the `dropped` fallback) must hold in the provider's tokens, so the engine
 * behaves at ratio 1.3 as it does at 1.0, and never sends a request over the real window.
 */
import { countTokens as providerCount } from "gpt-tokenizer/encoding/cl100k_base";
import { describe, expect, it } from "vitest";
import { createContextManager } from "../../../src/session-context/session-context.js";
import { renderPins, renderSnapshot } from "../../../src/memory/index.js";
import type { ChatMessage, Summarizer, ToolDefinition } from "../../../src/context/index.js";
import type { Logger } from "../../../src/logger.js";
import { messageIdAllocator, newSessionState, type SessionState } from "../../../src/session/state.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

const WINDOW = 32_000;

/** The provider's prompt tokens: its own tokenizer, its own framing, × ratio. Never the engine's counter. */
function providerTokens(messages: readonly ChatMessage[], tools: readonly ToolDefinition[], ratio: number): number {
  const text = (value: string) => providerCount(value, { disallowedSpecial: new Set() });
  let tokens = 3 + (tools.length > 0 ? text(JSON.stringify(tools)) : 0);
  for (const message of messages) {
    tokens += 4 + text(message.content ?? "");
    if (message.role === "assistant" && message.tool_calls) tokens += text(JSON.stringify(message.tool_calls));
  }
  return Math.ceil(tokens * ratio);
}

const words = (count: number, seed: number) => Array.from({ length: count }, (_, index) => `w${(index * 7919 + seed) % 9973}`).join(" ");

function summarizers(dead: boolean) {
  const calls = { count: 0 };
  const make = (model: string): Summarizer => ({
    model,
    contextWindow: WINDOW,
    async summarize(request) {
      calls.count += 1;
      if (dead) throw Object.assign(new Error("summarizer down"), { status: 503 });
      // Follows the length the prompt asks for ("about N tokens"); a word here is about two tokens.
      const prompt = request.messages.map((message) => (typeof message.content === "string" ? message.content : "")).join("\n");
      const target = Number(/about (\d+) tokens/.exec(prompt)?.[1] ?? request.maxTokens / 2);
      return { text: `## Goal\n${words(Math.floor(target / 2), calls.count)}` };
    },
  });
  return { calls, summarizer: make("sum-a"), fallback: make("sum-b") };
}

function silentLogger(records: unknown[]): Logger {
  const logger = {
    info: (object: { compaction?: unknown }) => void (object?.compaction && records.push(object.compaction)),
    warn: () => undefined,
    debug: () => undefined,
    error: () => undefined,
    child: () => logger,
  };
  return logger as unknown as Logger;
}

interface Simulation {
  ratio: number;
  dead: boolean;
  turns: number;
  /** Tool steps per turn, each returning an output of `outputWords` words. */
  toolSteps: number;
  outputWords: number;
  userWords: number;
  /** A memory snapshot of this many facts and as many pins, appended to the system prompt of every request. */
  memoryFacts?: number;
}

/** The provider's count of what is actually sent (the wire messages `prepareRequest` builds, system block included). */
function wireTokens(messages: ReadonlyArray<{ role: string; content?: unknown; tool_calls?: unknown }>, tools: readonly ToolDefinition[], ratio: number): number {
  const text = (value: string) => providerCount(value, { disallowedSpecial: new Set() });
  const textOf = (content: unknown): string =>
    typeof content === "string" ? content : Array.isArray(content) ? content.map((part: { text?: unknown }) => (typeof part?.text === "string" ? part.text : "")).join("") : "";
  let tokens = 3 + (tools.length > 0 ? text(JSON.stringify(tools)) : 0);
  for (const message of messages) {
    tokens += 4 + text(textOf(message.content));
    if (message.role === "assistant" && Array.isArray(message.tool_calls) && message.tool_calls.length > 0) tokens += text(JSON.stringify(message.tool_calls));
  }
  return Math.ceil(tokens * ratio);
}

function memoryBlock(facts: number): string {
  if (facts === 0) return "";
  const doc = { facts: Array.from({ length: facts }, (_, index) => ({ id: `u${index + 1}`, text: `fact ${index}: ${words(40, index + 7)}`, at: 0 })), nextId: facts + 1 };
  const snapshot = renderSnapshot({ user: { name: "Ana", doc } });
  const pins = renderPins(Array.from({ length: facts }, (_, index) => ({ id: `p${index + 1}`, text: `pin ${index}: ${words(30, index + 11)}`, at: 0 })));
  return `${snapshot}\n\n${pins}`;
}

async function simulate(sim: Simulation) {
  const { calls, summarizer, fallback } = summarizers(sim.dead);
  const tools: ToolDefinition[] = [{ type: "function", function: { name: "read_file", description: "Read a file.", parameters: { type: "object" } } }];
  let lastRequestTokens = 0;
  const manager = createContextManager({
    llm: { model: "gpt-4o-mini", contextWindow: WINDOW, complete: () => Promise.reject(new Error("unused")) },
    summarizer,
    fallbackSummarizer: fallback,
    settings: { hygieneThreshold: 0.85, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 },
    tools: () => tools,
    retry: { attempts: 3, baseDelayMs: 0, timeoutMs: 1_000 },
    hooks: { systemBlock: () => block },
  });
  const block = memoryBlock(sim.memoryFacts ?? 0);
  const state: SessionState = newSessionState(0);
  const records: Array<{ status: string; reason: string }> = [];
  const log = silentLogger(records);
  const requests: number[] = [];
  let context: ChatMessage[] = [{ id: "m0", role: "system", content: "You are a careful assistant." }];
  for (let turn = 0; turn < sim.turns; turn += 1) {
    const newId = messageIdAllocator(state);
    const scope = { signal: new AbortController().signal, log, newId, addToTranscript: () => undefined, tools };
    context = [...context, { id: newId(), role: "user", content: `turn ${turn}: ${words(sim.userWords, turn)}` }];
    context = (await manager.hygiene(state, context, scope)).context;
    for (let step = 0; step <= sim.toolSteps; step += 1) {
      context = await manager.beforeStep(state, context, scope);
      lastRequestTokens = sim.memoryFacts ? wireTokens(manager.prepareRequest(state, context).messages, tools, sim.ratio) : providerTokens(context, tools, sim.ratio);
      requests.push(lastRequestTokens);
      const finalStep = step === sim.toolSteps;
      const callId = `call_${turn}_${step}`;
      const assistant: ChatMessage = finalStep
        ? { id: newId(), role: "assistant", content: `done with turn ${turn}: ${words(60, turn)}` }
        : { id: newId(), role: "assistant", content: null, tool_calls: [{ id: callId, type: "function", function: { name: "read_file", arguments: `{"path":"f${turn}_${step}"}` } }] };
      manager.recordStep(state, context, { content: assistant.content, toolCalls: [], finishReason: "stop", model: "gpt-4o-mini", usage: { promptTokens: lastRequestTokens, completionTokens: 10, cachedTokens: 0 } }, log, tools);
      context = [...context, assistant];
      if (!finalStep) context = [...context, { id: newId(), role: "tool", tool_call_id: callId, content: words(sim.outputWords, turn * 100 + step) }];
    }
  }
  return { records, requests, summarizerCalls: calls.count, largest: Math.max(...requests), state };
}

describe("one token unit (issue #11)", () => {
  it("anti-thrash holds at ratio 1.3: one long turn in a 32K window compacts about as often as at 1.0", async () => {
    const long = { dead: false, turns: 1, toolSteps: 60, outputWords: 700, userWords: 50 };
    const even = await simulate({ ...long, ratio: 1.0 });
    const skewed = await simulate({ ...long, ratio: 1.3 });
    // Before the fix: 25 passes at 1.3 against 7 at 1.0.
    expect(even.records.length).toBeGreaterThan(0);
    expect(skewed.records.length).toBeLessThanOrEqual(Math.ceil(even.records.length * 1.5) + 1);
    expect(skewed.largest).toBeLessThanOrEqual(WINDOW);
    expect(even.largest).toBeLessThanOrEqual(WINDOW);
  });

  it("a dead summarizer over 160 turns costs a bounded number of summarizer calls, at 1.3 as at 1.0, and no request overflows", async () => {
    const chat = { dead: true, turns: 160, toolSteps: 0, outputWords: 0, userWords: 250 };
    const even = await simulate({ ...chat, ratio: 1.0 });
    const skewed = await simulate({ ...chat, ratio: 1.3 });
    // Before the fix: 660 calls at 1.3 against 54 at 1.0.
    expect(even.summarizerCalls).toBeGreaterThan(0);
    expect(skewed.summarizerCalls).toBeLessThanOrEqual(Math.ceil(even.summarizerCalls * 1.5) + 6);
    for (const run of [even, skewed]) {
      expect(run.records.some((record) => record.status === "dropped")).toBe(true);
      // The `dropped` fallback fires before the real window: every request fits, in the provider's tokens.
      expect(run.largest).toBeLessThanOrEqual(WINDOW);
    }
  });

  it("counts the memory snapshot and pins inside compaction: a big block never pushes a request over the window", async () => {
    // ~5K tokens of memory and pins on every request; the summarizer is dead, so only the
    // hard limit and the `dropped` fallback stand between the context and the window. Measured
    // without the block, compact() saw the messages under its hard limit, returned them
    // unchanged, and the next request (messages + block) went over the window.
    const chat = { dead: true, turns: 120, toolSteps: 0, outputWords: 0, userWords: 250, memoryFacts: 40 };
    for (const ratio of [1.0, 1.3]) {
      const run = await simulate({ ...chat, ratio });
      expect(run.records.some((record) => record.status === "dropped")).toBe(true);
      expect(run.largest).toBeLessThanOrEqual(WINDOW);
    }
  });

  it("counts with the last real prompt_tokens plus an estimate of what was added since", () => {
    const manager = createContextManager({
      llm: { model: "gpt-4o-mini", contextWindow: WINDOW, complete: () => Promise.reject(new Error("unused")) },
      summarizer: summarizers(false).summarizer,
      settings: { hygieneThreshold: 0.85, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 },
      tools: () => [],
    });
    const state = newSessionState(0);
    const context: ChatMessage[] = [
      { id: "m0", role: "system", content: "You are a careful assistant." },
      { id: "m1", role: "user", content: words(400, 1) },
    ];
    const estimate = manager.countContext(state, context);
    manager.recordStep(state, context, { content: "ok", toolCalls: [], finishReason: "stop", model: "gpt-4o-mini", usage: { promptTokens: 5_000, completionTokens: 1, cachedTokens: 0 } }, silentLogger([]), []);
    // The same request: exactly what the provider said.
    expect(manager.countContext(state, context)).toBe(5_000);
    // Extended: the real count plus the calibrated estimate of the addition.
    const extended: ChatMessage[] = [...context, { id: "m2", role: "assistant", content: words(100, 2) }];
    const ratio = (state.engine as { calibration: { ratio: number } }).calibration.ratio;
    const added = manager.countContext(newSessionState(0), extended) - estimate;
    expect(manager.countContext(state, extended)).toBeGreaterThanOrEqual(5_000 + Math.floor(added * ratio) - 2);
    expect(manager.countContext(state, extended)).toBeLessThanOrEqual(5_000 + Math.ceil(added * ratio) + 2);
    // Not an extension (a compaction replaced the messages): the calibrated estimate.
    const other: ChatMessage[] = [context[0]!, { id: "m9", role: "user", content: words(400, 1) }];
    expect(manager.countContext(state, other)).toBe(Math.ceil(estimate * ratio));
  });
});

describe("the compaction threshold after the fixed overhead (issue #31)", () => {
  // One token per character: tools 8K, system prompt 2K, in a 32K window at COMPACTION_THRESHOLD 0.5.
  const counter = createTokenCounter("test-chars", (text) => text.length);
  const tools: ToolDefinition[] = [{ type: "function", function: { name: "reference", description: "d".repeat(7_950), parameters: { type: "object" } } }];

  function setup(options: { replyTokens?: number; protectLastN?: number } = {}) {
    const { calls, summarizer } = summarizers(false);
    const manager = createContextManager({
      llm: { model: "gpt-4o-mini", contextWindow: WINDOW, complete: () => Promise.reject(new Error("unused")) },
      summarizer,
      settings: { hygieneThreshold: 0.85, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 4, ...options },
      tools: () => tools,
      counter,
      retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 1_000 },
    });
    const state = newSessionState(0);
    const records: Array<{ thresholdTokens: number; tokensAfter: number }> = [];
    const scope = { signal: new AbortController().signal, log: silentLogger(records), newId: messageIdAllocator(state), addToTranscript: () => undefined, tools };
    return { manager, state, scope, calls, records };
  }

  /** The system prompt and plain exchanges of 500 + 500 tokens (or `messageChars` + framing) until the context reaches `tokens`. */
  function contextOf(manager: ReturnType<typeof setup>["manager"], state: SessionState, tokens: number, messageChars = 495): ChatMessage[] {
    const context: ChatMessage[] = [{ id: "s0", role: "system", content: "s".repeat(1_990) }];
    for (let turn = 0; manager.countContext(state, context, tools) < tokens; turn++) {
      context.push(turn % 2 === 0 ? { id: `u${turn}`, role: "user", content: "u".repeat(messageChars) } : { id: `a${turn}`, role: "assistant", content: "a".repeat(messageChars) });
    }
    return context;
  }

  it("does not compact at 16.5K with 10K fixed, and does at the overhead plus half of the window it leaves", async () => {
    const { manager, state, scope, calls, records } = setup();
    const below = contextOf(manager, state, 16_500);
    expect(manager.countContext(state, below, tools)).toBeLessThan(17_000);
    expect(await manager.beforeStep(state, below, scope)).toBe(below);
    expect(calls.count).toBe(0);

    const fixed = counter.countTools(tools) + counter.countMessage(below[0]!);
    expect(fixed).toBeGreaterThanOrEqual(9_950);
    const threshold = Math.floor(fixed + 0.5 * (WINDOW - fixed));
    const justUnder = contextOf(manager, state, threshold - 600);
    expect(manager.countContext(state, justUnder, tools)).toBeLessThan(threshold);
    expect(await manager.beforeStep(state, justUnder, scope)).toBe(justUnder);

    const at = contextOf(manager, state, threshold);
    const after = await manager.beforeStep(state, at, scope);
    expect(after).not.toBe(at);
    expect(calls.count).toBeGreaterThan(0);
    expect(records).toHaveLength(1);
    expect(records[0]!.thresholdTokens).toBe(threshold);
    // Judged against that threshold, the compaction was effective: anti-thrash stays clear.
    expect(records[0]!.tokensAfter).toBeLessThan(0.85 * threshold);
    expect((state.engine as { antiThrash?: unknown }).antiThrash).toEqual({ ineffective: 0 });
  });

  it("a large max_tokens caps the raised threshold at the hard limit", async () => {
    // 32,000 − 14,000 reply − 5% margin = 16,400: under the 21K the overhead would allow.
    const { manager, state, scope, records } = setup({ replyTokens: 14_000 });
    const context = contextOf(manager, state, 16_400);
    await manager.beforeStep(state, context, scope);
    expect(records[0]!.thresholdTokens).toBe(16_400);
  });

  describe("/compress keeps the tail the automatic compaction's rule gives", () => {
    /** What a /compress of a context of `tokens` keeps after the summary, in tokens. */
    async function manualTail(tokens: number) {
      // protectLastN 1: the tail is the budget alone, which is what is compared.
      const { manager, state, scope } = setup({ protectLastN: 1 });
      const context = contextOf(manager, state, tokens, 95);
      const fixed = counter.countTools(tools) + counter.countMessage(context[0]!);
      const conversation = manager.countContext(state, context, tools) - fixed;
      const threshold = Math.floor(fixed + 0.5 * (WINDOW - fixed));
      const { context: after, summary } = await manager.compactNow(state, context, undefined, scope);
      expect(summary).toMatch(/^Compacted/);
      const summaryAt = after.findIndex((message) => message.kind === "summary");
      expect(summaryAt).toBeGreaterThan(0);
      const kept = after.slice(summaryAt + 1).reduce((sum, message) => sum + counter.countMessage(message), 0);
      return { kept, conversation, usualTail: 0.2 * (threshold - fixed), message: counter.countMessage(context.at(-1)!) };
    }

    it("a short conversation beside 10K of fixed overhead: the most recent quarter of the conversation", async () => {
      // 4K of conversation: a quarter is 1K, under the usual tail (20% of the 11K the overhead
      // leaves under the threshold). Before, the quarter was taken of the threshold's share and
      // scaled by (threshold − fixed) / threshold: 1.8K.
      const { kept, conversation, usualTail, message } = await manualTail(14_000);
      expect(conversation * 0.25).toBeLessThan(usualTail);
      expect(kept).toBeLessThanOrEqual(conversation * 0.25);
      expect(kept).toBeGreaterThan(conversation * 0.25 - 2 * message);
    });

    it("a long conversation: at most the usual tail, as an automatic compaction keeps", async () => {
      const { kept, conversation, usualTail, message } = await manualTail(20_500);
      expect(conversation * 0.25).toBeGreaterThan(usualTail);
      expect(kept).toBeLessThanOrEqual(usualTail);
      expect(kept).toBeGreaterThan(usualTail - 2 * message);
    });

    it("a conversation smaller than the usual tail still has a middle to fold", async () => {
      // 2K of conversation beside 10K of overhead: a quarter of the whole context (3K) would keep all of it.
      const { kept, conversation, message } = await manualTail(12_000);
      expect(kept).toBeLessThanOrEqual(conversation * 0.25);
      expect(kept).toBeGreaterThan(conversation * 0.25 - 2 * message);
    });
  });
});
