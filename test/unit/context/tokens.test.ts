import { describe, expect, it } from "vitest";
import type { ChatMessage, ToolDefinition } from "../../../src/core/messages.js";
import {
  APPROXIMATE_ENCODING,
  MESSAGE_OVERHEAD_TOKENS,
  REPLY_PRIMING_TOKENS,
  buildTokenCounter,
  createTokenCounter,
  encodingForModel,
  getTokenCounter,
} from "../../../src/context/tokens.js";
import {
  MAX_CALIBRATION_RATIO,
  MIN_CALIBRATION_RATIO,
  calibratedCount,
  initialCalibration,
  updateCalibration,
} from "../../../src/context/calibration.js";

describe("encodingForModel", () => {
  it.each([
    ["gpt-4o-mini", "o200k_base"],
    ["gpt-4.1", "o200k_base"],
    ["gpt-5", "o200k_base"],
    ["o3-mini", "o200k_base"],
    ["openai/gpt-4o", "o200k_base"],
    ["anthropic/claude-sonnet-4", "o200k_base"],
    ["llama3.1:8b", "o200k_base"],
    ["gpt-4", "cl100k_base"],
    ["gpt-4-turbo", "cl100k_base"],
    ["gpt-4-0613", "cl100k_base"],
    ["gpt-3.5-turbo", "cl100k_base"],
    ["openai/gpt-3.5-turbo-16k", "cl100k_base"],
    ["text-embedding-3-small", "cl100k_base"],
  ])("%s → %s", (model, encoding) => {
    expect(encodingForModel(model)).toBe(encoding);
  });
});

describe("the js-tiktoken counter", () => {
  const counter = getTokenCounter("gpt-4o-mini");

  it("is one counter per encoding per process", () => {
    expect(getTokenCounter("gpt-4o")).toBe(counter);
    expect(counter.encoding).toBe("o200k_base");
  });

  it("counts like the o200k tokenizer", () => {
    expect(counter.countText("hello world")).toBe(2);
    expect(counter.countText("")).toBe(0);
  });

  it("counts special tokens in user text as ordinary text instead of throwing", () => {
    const text = "please ignore <|endoftext|> and <|im_start|>system";
    expect(() => counter.countText(text)).not.toThrow();
    // As ordinary text, "<|endoftext|>" is several tokens, not the one special token.
    expect(counter.countText("<|endoftext|>")).toBeGreaterThan(1);
    const message: ChatMessage = { id: "m1", role: "user", content: text };
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + counter.countText(text));
  });

  it("counts cl100k for GPT-4 with different figures for the same text", () => {
    const cl100k = getTokenCounter("gpt-4");
    expect(cl100k.encoding).toBe("cl100k_base");
    const text = "Compactación de contexto: 日本語のテキスト and some code `const x = 1;`";
    expect(cl100k.countText(text)).not.toBe(counter.countText(text));
  });

  it("falls back to chars/4 only when the encoder cannot be built", () => {
    const fallback = buildTokenCounter("o200k_base", () => {
      throw new Error("rank file missing");
    });
    expect(fallback.encoding).toBe(APPROXIMATE_ENCODING);
    expect(fallback.countText("12345678")).toBe(2);
    expect(fallback.countText("123456789")).toBe(3);
  });
});

describe("message counts", () => {
  const spyCounter = () => {
    const calls: string[] = [];
    const counter = createTokenCounter("spy", (text) => {
      calls.push(text);
      return Math.ceil(text.length / 4);
    });
    return { counter, calls };
  };

  it("are cached on the message and never re-encoded", () => {
    const { counter, calls } = spyCounter();
    const message: ChatMessage = { id: "m1", role: "user", content: "x".repeat(40) };
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + 10);
    expect(calls).toHaveLength(1);
    expect(message.tokens).toEqual({ encoding: "spy", count: MESSAGE_OVERHEAD_TOKENS + 10 });
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + 10);
    expect(counter.countMessages([message, message])).toBe(REPLY_PRIMING_TOKENS + 2 * (MESSAGE_OVERHEAD_TOKENS + 10));
    expect(calls).toHaveLength(1);
  });

  it("are recounted when cached under another encoding", () => {
    const { counter, calls } = spyCounter();
    const message: ChatMessage = { id: "m1", role: "user", content: "abcd", tokens: { encoding: "cl100k_base", count: 99 } };
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + 1);
    expect(calls).toEqual(["abcd"]);
    expect(message.tokens).toEqual({ encoding: "spy", count: MESSAGE_OVERHEAD_TOKENS + 1 });
  });

  it("include the tool-call JSON of assistant messages", () => {
    const { counter, calls } = spyCounter();
    const toolCalls = [{ id: "call_1", type: "function" as const, function: { name: "read_file", arguments: '{"path":"src/a.ts"}' } }];
    const message: ChatMessage = { id: "m2", role: "assistant", content: null, tool_calls: toolCalls };
    const json = JSON.stringify(toolCalls);
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + Math.ceil(json.length / 4));
    expect(calls).toEqual([json]);
  });

  it("count tool definitions", () => {
    const { counter } = spyCounter();
    const tools: ToolDefinition[] = [
      { type: "function", function: { name: "recall", description: "Fetch an original message by id", parameters: { type: "object" } } },
    ];
    expect(counter.countTools([])).toBe(0);
    expect(counter.countTools(tools)).toBe(Math.ceil(JSON.stringify(tools).length / 4));
  });
});

describe("calibration", () => {
  it("takes the first sample as the ratio, then moves 30% towards each new one", () => {
    const first = updateCalibration(initialCalibration(), { estimatedTokens: 1_000, reportedPromptTokens: 1_200 });
    expect(first.state).toEqual({ ratio: 1.2, samples: 1 });
    expect(first.observedRatio).toBeCloseTo(1.2);
    expect(first.suspectedTruncation).toBe(false);

    const second = updateCalibration(first.state, { estimatedTokens: 1_000, reportedPromptTokens: 1_000 });
    expect(second.state.ratio).toBeCloseTo(1.2 + 0.3 * (1.0 - 1.2));
    expect(second.state.samples).toBe(2);
    expect(calibratedCount(second.state, 10_000)).toBe(Math.ceil(10_000 * second.state.ratio));
  });

  it("clamps the ratio to [0.5, 2]", () => {
    const high = updateCalibration(initialCalibration(), { estimatedTokens: 1_000, reportedPromptTokens: 5_000 });
    expect(high.state.ratio).toBe(MAX_CALIBRATION_RATIO);
    expect(high.observedRatio).toBe(5);
    let state = initialCalibration();
    for (let round = 0; round < 20; round += 1) {
      state = updateCalibration(state, { estimatedTokens: 1_000, reportedPromptTokens: 610 }).state;
    }
    expect(state.ratio).toBeGreaterThanOrEqual(MIN_CALIBRATION_RATIO);
    expect(state.ratio).toBeCloseTo(0.61, 2);
  });

  it("flags a report far below the estimate as possible silent truncation and does not learn from it", () => {
    const state = { ratio: 1.1, samples: 4 };
    const update = updateCalibration(state, { estimatedTokens: 10_000, reportedPromptTokens: 2_048 });
    expect(update.suspectedTruncation).toBe(true);
    expect(update.state).toBe(state);
  });

  it("ignores unusable samples", () => {
    const state = initialCalibration();
    expect(updateCalibration(state, { estimatedTokens: 1_000, reportedPromptTokens: 0 }).state).toBe(state);
    expect(updateCalibration(state, { estimatedTokens: 10, reportedPromptTokens: 30 }).state).toBe(state);
    expect(calibratedCount(state, 1_234)).toBe(1_234);
  });
});
