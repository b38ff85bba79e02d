import { describe, expect, it } from "vitest";
import { COMPACTION_NOTE } from "../../../src/context/assemble.js";
import { compact, FALLBACK_DIGEST_SHARE, type CompactInput } from "../../../src/context/compact.js";
import { thresholdTokens } from "../../../src/context/decisions.js";
import { FALLBACK_DIGEST_HEADER } from "../../../src/context/fallback-digest.js";
import type { ChatMessage, ToolCall, ToolDefinition } from "../../../src/core/messages.js";
import { extractRecallId } from "../../../src/context/prune.js";
import { SummarizerFailedError, SummarizerTimeoutError } from "../../../src/context/summarize.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../../../src/context/summarizer.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));

class ScriptedSummarizer implements Summarizer {
  calls = 0;
  constructor(
    readonly model: string,
    private readonly script: (call: number, request: SummaryRequest) => Promise<SummaryResponse>,
    readonly contextWindow = 128_000,
  ) {}
  summarize(request: SummaryRequest): Promise<SummaryResponse> {
    this.calls += 1;
    return this.script(this.calls, request);
  }
}

const succeeding = (model = "aux") => new ScriptedSummarizer(model, async () => ({ text: "## Goal\nkeep going" }));
const failing = (model = "aux") => new ScriptedSummarizer(model, async () => Promise.reject(new Error("502 bad gateway")));

function session(turns: number, outputChars = 4_000, replyChars = 0) {
  let seq = 0;
  let callSeq = 0;
  const newId = () => `m${++seq}`;
  const messages: ChatMessage[] = [
    { id: newId(), role: "system", content: "You are longhaul." },
    { id: newId(), role: "user", content: "Help me refactor the billing module." },
    { id: newId(), role: "assistant", content: "Sure, let's start." },
  ];
  for (let turn = 0; turn < turns; turn += 1) {
    messages.push({ id: newId(), role: "user", content: `Step ${turn}: read invoice_${turn}.ts` });
    const call: ToolCall = { id: `call_${++callSeq}`, type: "function", function: { name: "read_file", arguments: `{"path":"invoice_${turn}.ts"}` } };
    messages.push({ id: newId(), role: "assistant", content: null, tool_calls: [call] });
    messages.push({ id: newId(), role: "tool", tool_call_id: call.id, content: `// invoice_${turn}.ts\n${"export const x = 1;\n".repeat(outputChars / 20)}` });
    messages.push({ id: newId(), role: "assistant", content: `invoice_${turn}.ts looks fine.${" Details follow.".repeat(replyChars / 16)}` });
  }
  return { messages, newId };
}

const settings = { contextWindow: 16_000, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 };
const quickRetry = { attempts: 3, baseDelayMs: 0, timeoutMs: 1_000 };
const withoutCounts = (messages: readonly ChatMessage[]) => messages.map(({ tokens: _count, ...rest }) => rest);

function baseInput(overrides: Partial<CompactInput> = {}): CompactInput {
  const { messages, newId } = session(12);
  return { messages, settings, reason: "in-loop", summarizer: succeeding(), counter, newId, retry: quickRetry, ...overrides };
}

describe("a successful compaction", () => {
  it("lands under the threshold and records what it did", async () => {
    let clock = 1_000;
    const tools: ToolDefinition[] = [{ type: "function", function: { name: "recall", description: "Fetch a message by id", parameters: {} } }];
    const input = baseInput({ tools, now: () => (clock += 5) });
    const before = structuredClone(withoutCounts(input.messages));
    const result = await compact(input);
    expect(result.status).toBe("compacted");
    expect(result.error).toBeUndefined();
    const { record } = result;
    expect(record).toMatchObject({ reason: "in-loop", status: "compacted", summarizerCalls: 1, summarizerModel: "aux", chunks: 1, droppedMessages: 0, messagesBefore: input.messages.length, messagesAfter: result.messages.length });
    expect(record.tokensBefore).toBe(counter.countMessages(input.messages) + counter.countTools(tools));
    expect(record.tokensAfter).toBe(counter.countMessages(result.messages) + counter.countTools(tools));
    expect(record.tokensBefore).toBeGreaterThanOrEqual(8_000);
    expect(record.tokensAfter).toBeLessThan(8_000 * 0.6);
    expect(record.prunedMessages).toBeGreaterThan(0);
    expect(record.prunedTokens).toBeGreaterThan(0);
    expect(record.summaryTokens).toBeGreaterThan(0);
    expect(record.durationMs).toBeGreaterThan(0);
    // Never mutated: same content, same array.
    expect(withoutCounts(input.messages)).toEqual(before);
    // Head: system prompt with the note once, and the first exchange untouched.
    expect(result.messages[0]!.content).toBe(`You are longhaul.\n\n${COMPACTION_NOTE}`);
    expect(result.messages[1]).toBe(input.messages[1]);
    expect(result.messages[2]).toBe(input.messages[2]);
    expect(result.messages[3]).toMatchObject({ kind: "summary", role: "user" });
    expect(result.messages.at(-1)).toBe(input.messages.at(-1));
  });

  it("appends the system note only on the first compaction", async () => {
    const { messages, newId } = session(12);
    const first = await compact(baseInput({ messages, newId }));
    const grown = [...first.messages];
    for (let turn = 0; turn < 12; turn += 1) {
      grown.push({ id: newId(), role: "user", content: `More work ${turn}: ${"details ".repeat(200)}` });
      grown.push({ id: newId(), role: "assistant", content: `Done ${turn}: ${"notes ".repeat(200)}` });
    }
    const second = await compact(baseInput({ messages: grown, newId }));
    expect(second.status).toBe("compacted");
    expect((second.messages[0]!.content ?? "").split(COMPACTION_NOTE)).toHaveLength(2);
    expect(second.messages[0]).toBe(grown[0]);
    expect(second.messages.filter((message) => message.kind === "summary")).toHaveLength(1);
  });

  it("is skipped when there is nothing to fold or prune", async () => {
    const { messages, newId } = session(1, 100);
    const summarizer = succeeding();
    const result = await compact(baseInput({ messages, newId, summarizer }));
    expect(result.status).toBe("skipped");
    expect(result.messages).toEqual(messages);
    expect(summarizer.calls).toBe(0);
  });

  it("cuts a newest tool result that alone would overflow, keeping its id for recall", async () => {
    const { messages, newId } = session(6);
    const call: ToolCall = { id: "call_big", type: "function", function: { name: "run_tests", arguments: "{}" } };
    messages.push({ id: "m900", role: "user", content: "run the tests" });
    messages.push({ id: "m901", role: "assistant", content: null, tool_calls: [call] });
    messages.push({ id: "m902", role: "tool", tool_call_id: "call_big", content: "FAIL test/billing.test.ts\n".repeat(3_000) });
    const result = await compact(baseInput({ messages, newId }));
    expect(result.status).toBe("compacted");
    const cut = result.messages.at(-1)!;
    expect(cut).toMatchObject({ id: "m902", kind: "truncated", originalId: "m902", role: "tool", tool_call_id: "call_big" });
    expect(extractRecallId(cut.content ?? "")).toBe("m902");
    expect(counter.countMessage(cut)).toBeLessThanOrEqual(1.5 * 0.2 * 8_000);
    expect(result.record.tokensAfter).toBeLessThan(8_000);
  });
});

describe("failures", () => {
  it("retries with backoff and succeeds on a later attempt", async () => {
    const summarizer = new ScriptedSummarizer("aux", async (call) => (call < 3 ? Promise.reject(new Error("overloaded")) : { text: "## Goal\nok" }));
    const result = await compact(baseInput({ summarizer }));
    expect(result.status).toBe("compacted");
    expect(result.record.summarizerCalls).toBe(3);
  });

  it("leave the context unchanged when every attempt fails under the hard limit", async () => {
    const input = baseInput({ summarizer: failing() });
    const before = structuredClone(withoutCounts(input.messages));
    const result = await compact(input);
    expect(result.status).toBe("failed");
    expect(withoutCounts(result.messages)).toEqual(before);
    result.messages.forEach((message, index) => expect(message).toBe(input.messages[index]));
    expect(result.error).toBeInstanceOf(SummarizerFailedError);
    expect((result.error as SummarizerFailedError).failures.map((failure) => failure.model)).toEqual(["aux"]);
    expect(result.record).toMatchObject({ status: "failed", summarizerCalls: 3, summarizerModel: null, prunedMessages: 0, droppedMessages: 0 });
    expect(result.record.tokensAfter).toBe(result.record.tokensBefore);
  });

  it("treat an empty summary as a failure", async () => {
    const summarizer = new ScriptedSummarizer("aux", async () => ({ text: "   " }));
    const result = await compact(baseInput({ summarizer }));
    expect(result.status).toBe("failed");
  });

  it("fall back to the main model", async () => {
    const fallback = succeeding("main-model");
    const result = await compact(baseInput({ summarizer: failing("aux"), fallbackSummarizer: fallback }));
    expect(result.status).toBe("compacted");
    expect(result.record.summarizerModel).toBe("main-model");
    expect(result.record.summarizerCalls).toBe(4);
    expect(fallback.calls).toBe(1);
  });

  it("time out a summarizer that hangs, then use the fallback", async () => {
    const hanging = new ScriptedSummarizer("aux", () => new Promise<SummaryResponse>(() => undefined));
    const fallback = succeeding("main-model");
    const result = await compact(baseInput({ summarizer: hanging, fallbackSummarizer: fallback, retry: { attempts: 2, baseDelayMs: 0, timeoutMs: 20 } }));
    expect(result.status).toBe("compacted");
    expect(hanging.calls).toBe(2);
    expect(result.record.summarizerModel).toBe("main-model");
  });

  it("leave the context unchanged when timeouts and the fallback all fail", async () => {
    const hanging = new ScriptedSummarizer("aux", (_call, request) => new Promise<SummaryResponse>((_resolve, reject) => {
      request.signal?.addEventListener("abort", () => reject(request.signal?.reason));
    }));
    const input = baseInput({ summarizer: hanging, fallbackSummarizer: failing("main-model"), retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 20 } });
    const result = await compact(input);
    expect(result.status).toBe("failed");
    expect(result.messages).toEqual(input.messages);
    const failures = (result.error as SummarizerFailedError).failures;
    expect(failures.map((failure) => failure.model)).toEqual(["aux", "main-model"]);
    expect(failures[0]!.error).toBeInstanceOf(SummarizerTimeoutError);
  });

  it("over the hard limit, drop the oldest middle turns whole, keep head and tail, and report it", async () => {
    // Long replies, short tool outputs: pruning alone cannot get under the threshold.
    const { messages, newId } = session(14, 100, 3_200);
    const input = baseInput({ messages, newId, summarizer: failing(), settings: { ...settings, hardLimitTokens: 9_000 } });
    const result = await compact(input);
    expect(result.record.tokensBefore).toBeGreaterThan(9_000);
    expect(result.status).toBe("dropped");
    expect(result.error).toBeInstanceOf(SummarizerFailedError);
    expect(result.record.droppedMessages).toBeGreaterThan(0);
    expect(result.record.droppedMessages % 4).toBe(0); // whole turns of user, call, result, reply
    expect(result.record.tokensAfter).toBeLessThan(8_000);
    // One message more: the fallback digest of what was dropped (issue #31).
    expect(result.messages.length).toBe(input.messages.length - result.record.droppedMessages + 1);
    // The oldest turns went first: what survives of the middle is its most recent part.
    const survivors = result.messages.map((message) => message.id);
    const firstDropped = input.messages.findIndex((message) => !survivors.includes(message.id));
    expect(firstDropped).toBe(3);
    const lastDropped = input.messages.findLastIndex((message) => !survivors.includes(message.id));
    expect(input.messages.slice(firstDropped, lastDropped + 1).every((message) => !survivors.includes(message.id))).toBe(true);
    expect(result.messages[1]).toBe(input.messages[1]);
    expect(result.messages.at(-1)).toBe(input.messages.at(-1));
    // No summary was written, but the dropped turns leave a deterministic digest: every dropped
    // user message by id with its first line, marked as a fallback.
    const digest = result.messages.filter((message) => message.kind === "summary");
    expect(digest).toHaveLength(1);
    expect(digest[0]!.content).toContain(FALLBACK_DIGEST_HEADER);
    expect(result.messages[3]).toBe(digest[0]); // right after the head (system prompt and first exchange)
    const droppedUsers = input.messages.filter((message) => message.role === "user" && !survivors.includes(message.id));
    expect(droppedUsers.length).toBeGreaterThan(0);
    for (const user of droppedUsers) expect(digest[0]!.content).toContain(`- [${user.id}] user: ${user.content}`);
    expect(digest[0]!.content).toMatch(/→ \[m\d+\] assistant calls read_file, \[m\d+\] read_file result, \[m\d+\] assistant/);
    expect(result.record.summarizerModel).toBeNull();
    // Deterministic: the same input gives the same digest.
    const again = await compact({ ...input, newId: (() => { let seq = 900; return () => `m${++seq}`; })() });
    expect(again.messages.find((message) => message.kind === "summary")!.content).toBe(digest[0]!.content);
  });

  it("keeps the digest within its room: the newest dropped turns listed, the older named as a range", async () => {
    const { messages, newId } = session(60, 100, 800);
    const result = await compact(baseInput({ messages, newId, summarizer: failing(), settings: { ...settings, hardLimitTokens: 3_000 } }));
    expect(result.status).toBe("dropped");
    const digest = result.messages.find((message) => message.kind === "summary")!;
    expect(counter.countText(digest.content!)).toBeLessThanOrEqual(Math.floor(thresholdTokens(settings.contextWindow, settings.compactionThreshold) * FALLBACK_DIGEST_SHARE) + 80);
    expect(digest.content).toMatch(/older turns, \[m\d+\] onwards: recall by id or search/);
    expect(result.record.tokensAfter).toBeLessThan(settings.contextWindow * settings.compactionThreshold);
  });

  it("propagate an abort: the promise rejects and nothing changes", async () => {
    const controller = new AbortController();
    const summarizer = new ScriptedSummarizer("aux", (_call, request) => new Promise<SummaryResponse>((_resolve, reject) => {
      request.signal?.addEventListener("abort", () => reject(new Error("request aborted")));
      setTimeout(() => controller.abort(new Error("user sent /stop")), 5);
    }));
    const input = baseInput({ summarizer, signal: controller.signal });
    const before = structuredClone(withoutCounts(input.messages));
    await expect(compact(input)).rejects.toThrow("user sent /stop");
    expect(summarizer.calls).toBe(1);
    expect(withoutCounts(input.messages)).toEqual(before);
  });

  it("propagate an abort during the backoff", async () => {
    const controller = new AbortController();
    const summarizer = new ScriptedSummarizer("aux", async () => {
      setTimeout(() => controller.abort(new Error("shutdown")), 5);
      throw new Error("503");
    });
    await expect(compact(baseInput({ summarizer, signal: controller.signal, retry: { attempts: 3, baseDelayMs: 10_000, timeoutMs: 1_000 } }))).rejects.toThrow("shutdown");
    expect(summarizer.calls).toBe(1);
  });

  it("reject at once when already aborted", async () => {
    const summarizer = succeeding();
    await expect(compact(baseInput({ summarizer, signal: AbortSignal.abort(new Error("gone")) }))).rejects.toThrow("gone");
    expect(summarizer.calls).toBe(0);
  });
});
