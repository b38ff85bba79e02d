/**
 * Property-based tests of the compressor over random sessions (SPEC §3 invariants). Each run
 * simulates a session growing step by step, compacting in the loop whenever the context reaches
 * the threshold (as the agent does), several times in a row, and checks after each compaction:
 * valid role order, head and tail byte-identical, the result under the threshold with a margin
 * or anti-thrash engaged (the threshold after the fixed overhead: tools and system prompt, up to
 * half the threshold), and every message in the new context recoverable from the transcript.
 *
 * Sessions are large, so a failure is reported unshrunk (`endOnFailure`); replay it with the
 * printed seed and path (`fc.assert(..., { seed, path })`).
 */
import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { COMPACTION_NOTE } from "../../../src/context/assemble.js";
import { findBoundaries } from "../../../src/context/boundaries.js";
import { compact, fixedOverheadTokens, tailBudgetTokens, type CompactResult } from "../../../src/context/compact.js";
import {
  autoCompactionAllowed,
  initialAntiThrash,
  needsCompaction,
  recordCompactionOutcome,
  thresholdTokens,
  type AntiThrashState,
} from "../../../src/context/decisions.js";
import type { ChatMessage, ToolCall, ToolDefinition } from "../../../src/core/messages.js";
import { extractRecallId } from "../../../src/context/prune.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../../../src/context/summarizer.js";
import { createTokenCounter, getTokenCounter, type TokenCounter } from "../../../src/context/tokens.js";
import { propertyRuns } from "../../helpers/property-runs.js";
import { expectToolPairs } from "../../helpers/tool-pairs.js";

const MARGIN = 0.9;

interface TurnSpec {
  userChars: number;
  steps: number[][]; // per step, the output size of each parallel tool call
  replyChars: number | null; // null: the turn ends inside its tool loop
}

interface SessionSpec {
  contextWindow: number;
  compactionThreshold: number;
  targetRatio: number;
  protectLastN: number;
  summaryChars: number;
  summarizerFails: boolean;
  /** Tool definitions and system text sent with every request, as a share of the threshold (issue #31: up to half). */
  fixedShare: number;
  /** The part of that overhead in the system prompt (the rest in tool definitions). */
  systemShare: number;
  turns: TurnSpec[];
}

const outputSize = fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 5, max: 200 }) }, { weight: 2, arbitrary: fc.integer({ min: 201, max: 30_000 }) });
const turnSpec: fc.Arbitrary<TurnSpec> = fc.record({
  userChars: fc.integer({ min: 1, max: 1_500 }),
  steps: fc.array(fc.array(outputSize, { minLength: 1, maxLength: 4 }), { maxLength: 4 }),
  replyChars: fc.option(fc.integer({ min: 1, max: 2_000 }), { freq: 6 }),
});
const sessionSpec: fc.Arbitrary<SessionSpec> = fc.record({
  contextWindow: fc.constantFrom(8_192, 16_384, 32_768),
  compactionThreshold: fc.constantFrom(0.5, 0.6),
  targetRatio: fc.constantFrom(0.1, 0.2, 0.3),
  protectLastN: fc.constantFrom(4, 20),
  summaryChars: fc.integer({ min: 20, max: 2_400 }),
  summarizerFails: fc.integer({ min: 0, max: 3 }).map((draw) => draw === 0), // one session in four
  fixedShare: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 0.5, noNaN: true })),
  systemShare: fc.oneof(fc.constant(0), fc.double({ min: 0, max: 1, noNaN: true })),
  turns: fc.array(turnSpec, { minLength: 8, maxLength: 40 }),
});

/** Filler with some variety so a real tokenizer sees realistic text. */
const text = (label: string, chars: number) => {
  const words = `${label} lorem ipsum path/to/file_${chars}.ts 42 résumé ¿qué? `;
  return words.repeat(Math.ceil(chars / words.length)).slice(0, chars);
};

class FakeSummarizer implements Summarizer {
  readonly model = "fake-aux";
  readonly contextWindow = 200_000;
  readonly requests: SummaryRequest[] = [];
  constructor(private readonly summaryChars: number, private readonly fails: boolean) {}
  async summarize(request: SummaryRequest): Promise<SummaryResponse> {
    this.requests.push(request);
    if (this.fails) throw new Error("summarizer down");
    return { text: `## Goal\n${text(`summary ${this.requests.length}`, this.summaryChars)}` };
  }
}

/*
 * The checks below run for every message of every context of every run, so they call `expect`
 * only when a check fails (with the same matcher, for its message): vitest's bookkeeping per
 * `expect` call was a quarter of this file's CPU time. `isDeepStrictEqual` is stricter than
 * `toEqual`, so a pass here is a pass there.
 */
const expectSame = (actual: unknown, expected: unknown): void => {
  if (actual !== expected) expect(actual).toBe(expected);
};
const expectEqual = (actual: unknown, expected: unknown): void => {
  if (!isDeepStrictEqual(actual, expected)) expect(actual).toEqual(expected);
};

function assertValidRoleOrder(messages: readonly ChatMessage[]): void {
  messages.forEach((message, index) => {
    if (message.role === "system" && index !== 0) expect(index).toBe(0);
  });
  expectToolPairs(messages);
}

const withoutCounts = (message: ChatMessage) => {
  const { tokens: _count, ...rest } = message;
  return rest;
};

interface Check {
  before: readonly ChatMessage[];
  snapshot: unknown;
  result: CompactResult;
  transcript: Map<string, ChatMessage>;
  spec: SessionSpec;
  counter: TokenCounter;
  antiThrash: AntiThrashState;
  toolTokens: number;
}

function checkCompaction({ before, snapshot, result, transcript, spec, counter, antiThrash, toolTokens }: Check): void {
  const after = result.messages;
  // The threshold counts on the window the fixed overhead (tools + system prompt) leaves.
  const fixed = toolTokens + counter.countMessage(before[0]!);
  const threshold = thresholdTokens(spec.contextWindow, spec.compactionThreshold, { fixedTokens: fixed });
  expectSame(result.record.thresholdTokens, threshold);
  // The input is never mutated.
  expectEqual(before.map(withoutCounts), snapshot);
  assertValidRoleOrder(after);

  const boundaries = findBoundaries(before, { counter, tailBudgetTokens: tailBudgetTokens(threshold, spec.targetRatio, fixed), protectLastN: spec.protectLastN });
  if (result.status === "failed" || result.status === "skipped") {
    after.forEach((message, index) => expectSame(message, before[index]));
    expect(after).toHaveLength(before.length);
  } else {
    // Head byte-identical: the system prompt gains the note once, the rest is untouched.
    const system = before[0]!.content!.includes(COMPACTION_NOTE) ? before[0]!.content : `${before[0]!.content}\n\n${COMPACTION_NOTE}`;
    if (result.record.summarizerModel !== null || result.status === "dropped") expect(after[0]!.content).toBe(system);
    else expect(after[0]).toBe(before[0]); // pruning alone adds no note
    for (let index = 1; index < boundaries.headEnd; index += 1) expectSame(after[index], before[index]);

    // Tail byte-identical: the protected tail ends the new context unchanged, but for the newest
    // group's tool results cut to fit (same id, call id, a recall note).
    const tail = before.slice(boundaries.protectedStart);
    const newTail = after.slice(after.length - tail.length);
    tail.forEach((message, index) => {
      const now = newTail[index]!;
      if (now === message) return;
      expect(now).toMatchObject({ id: message.id, role: "tool", kind: "truncated", originalId: message.id });
      expect(extractRecallId(now.content ?? "")).toBe(message.id);
    });
    // Between the latest user message and the protected tail: same messages, tool results maybe pruned.
    const kept = before.slice(boundaries.keptStart, boundaries.protectedStart);
    const newKept = after.slice(after.length - tail.length - kept.length, after.length - tail.length);
    kept.forEach((message, index) => {
      const now = newKept[index]!;
      if (now === message) return;
      expect(now).toMatchObject({ id: message.id, role: "tool", kind: "pruned" });
    });
  }

  // Recoverable: every message is an original in the transcript (pruned and cut ones point to it by
  // id), or the one new summary, which the transcript stores from now on.
  const summaries = after.filter((message) => message.kind === "summary");
  expect(summaries.length).toBeLessThanOrEqual(1);
  for (const message of after) {
    if (message.kind === "summary" && !transcript.has(message.id)) {
      transcript.set(message.id, structuredClone(message));
      continue;
    }
    const original = transcript.get(message.id);
    if (original === undefined) expect(original, `unknown id ${message.id}`).toBeDefined();
    if (message.kind === "pruned" || message.kind === "truncated") {
      expect(extractRecallId(message.content ?? "")).toBe(message.id);
      expect(original!.role).toBe("tool");
    } else if (message.id !== after[0]!.id) {
      expectEqual(withoutCounts(message), withoutCounts(original!));
    }
  }

  // Under the threshold with a margin, or anti-thrash engaged.
  const state = recordCompactionOutcome(antiThrash, { tokensAfter: result.record.tokensAfter, thresholdTokens: threshold });
  if (result.record.tokensAfter > MARGIN * threshold) expect(state.ineffective).toBeGreaterThan(0);
  expect(result.record.tokensAfter).toBe(counter.countMessages(after) + toolTokens);
}

/**
 * A system prompt and tool definitions that together take about `fixedShare` of the threshold
 * (`systemShare` of it in the system prompt): the fixed overhead of every request.
 */
function fixedOverhead(spec: SessionSpec, counter: TokenCounter): { systemPrompt: string; tools: ToolDefinition[] } {
  const target = Math.floor(spec.fixedShare * thresholdTokens(spec.contextWindow, spec.compactionThreshold));
  let systemPrompt = "You are longhaul, a helpful assistant.";
  const systemTarget = Math.floor(target * spec.systemShare);
  if (counter.countText(systemPrompt) < systemTarget) {
    const chars = Math.ceil((systemPrompt.length * systemTarget) / counter.countText(systemPrompt));
    systemPrompt = `${systemPrompt} ${text("rules", chars)}`;
  }
  const tools: ToolDefinition[] = [];
  for (let index = 0; counter.countTools(tools) + counter.countText(systemPrompt) < target - 200; index++) {
    tools.push({ type: "function", function: { name: `tool_${index}`, description: text(`describes tool ${index}`, 600), parameters: { type: "object", properties: {} } } });
  }
  return { systemPrompt, tools };
}

async function simulate(spec: SessionSpec, counter: TokenCounter): Promise<{ compactions: number; summaries: number }> {
  let seq = 0;
  let callSeq = 0;
  const newId = () => `m${++seq}`;
  const transcript = new Map<string, ChatMessage>();
  let live: ChatMessage[] = [];
  const summarizer = new FakeSummarizer(spec.summaryChars, spec.summarizerFails);
  let antiThrash = initialAntiThrash();
  let compactions = 0;
  let summaries = 0;
  const settings = { contextWindow: spec.contextWindow, compactionThreshold: spec.compactionThreshold, targetRatio: spec.targetRatio, protectLastN: spec.protectLastN };
  const { systemPrompt, tools } = fixedOverhead(spec, counter);
  const toolTokens = counter.countTools(tools);

  const append = (...messages: ChatMessage[]) => {
    for (const message of messages) transcript.set(message.id, structuredClone(message));
    live = [...live, ...messages];
  };
  const maybeCompact = async () => {
    const tokens = counter.countMessages(live) + toolTokens;
    const fixedTokens = fixedOverheadTokens({ messages: live, tools, counter });
    if (!needsCompaction({ tokens, contextWindow: spec.contextWindow, threshold: spec.compactionThreshold, fixedTokens })) return;
    if (!autoCompactionAllowed(antiThrash, tokens, spec.contextWindow)) return;
    const before = live;
    const snapshot = structuredClone(before.map(withoutCounts));
    const requestsBefore = summarizer.requests.length;
    const result = await compact({ messages: before, tools, settings, reason: "in-loop", summarizer, counter, newId, retry: { attempts: 1, baseDelayMs: 0 } });
    checkCompaction({ before, snapshot, result, transcript, spec, counter, antiThrash, toolTokens });
    // A later compaction updates the previous summary instead of starting over.
    const hadSummary = before.some((message) => message.kind === "summary");
    for (const request of summarizer.requests.slice(requestsBefore, requestsBefore + 1)) {
      expect(request.messages[1]!.content!.includes("<previous-summary>")).toBe(hadSummary);
    }
    antiThrash = recordCompactionOutcome(antiThrash, { tokensAfter: result.record.tokensAfter, thresholdTokens: result.record.thresholdTokens });
    compactions += 1;
    if (result.record.summarizerModel !== null) summaries += 1;
    live = result.messages;
  };

  append({ id: newId(), role: "system", content: systemPrompt });
  for (const turn of spec.turns) {
    append({ id: newId(), role: "user", content: text("user", turn.userChars) });
    await maybeCompact();
    for (const step of turn.steps) {
      const calls: ToolCall[] = step.map((_, index) => ({
        id: `call_${++callSeq}`,
        type: "function",
        function: { name: `tool_${index}`, arguments: JSON.stringify({ query: text("q", 30 + index) }) },
      }));
      append(
        { id: newId(), role: "assistant", content: null, tool_calls: calls },
        ...step.map((size, index): ChatMessage => ({ id: newId(), role: "tool", tool_call_id: calls[index]!.id, content: text("output", size) })),
      );
      await maybeCompact();
    }
    if (turn.replyChars !== null) {
      append({ id: newId(), role: "assistant", content: text("reply", turn.replyChars) });
      await maybeCompact();
    }
  }
  return { compactions, summaries };
}

describe("compaction over random sessions", () => {
  it("keeps the invariants through several compactions in a row (chars/4 counter)", async () => {
    const counter = createTokenCounter("test-chars/4", (value) => Math.ceil(value.length / 4));
    let compactions = 0;
    let sessionsWithSeveral = 0;
    await fc.assert(
      fc.asyncProperty(sessionSpec, async (spec) => {
        const outcome = await simulate(spec, counter);
        compactions += outcome.compactions;
        if (outcome.summaries >= 2) sessionsWithSeveral += 1;
      }),
      { numRuns: propertyRuns(150), endOnFailure: true },
    );
    // The generator really exercises repeated compaction.
    expect(compactions).toBeGreaterThan(propertyRuns(150));
    expect(sessionsWithSeveral).toBeGreaterThan(propertyRuns(150) / 5);
  }, 300_000); // CPU-bound: ~35 s alone, twice that on the loaded shared machine

  it("keeps the invariants with the real o200k tokenizer", async () => {
    const counter = getTokenCounter("gpt-4o-mini");
    let compactions = 0;
    await fc.assert(
      fc.asyncProperty(sessionSpec, async (spec) => {
        compactions += (await simulate(spec, counter)).compactions;
      }),
      { numRuns: propertyRuns(8), endOnFailure: true },
    );
    expect(compactions).toBeGreaterThan(propertyRuns(8));
  }, 300_000);
});
