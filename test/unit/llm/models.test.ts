import { describe, expect, it } from "vitest";
import { DEFAULT_CONTEXT_WINDOW, lookupContextWindow, resolveContextWindow } from "../../../src/llm/index.js";

describe("context window table", () => {
  it.each([
    ["gpt-4o", 128_000],
    ["gpt-4o-mini-2024-07-18", 128_000],
    ["gpt-4.1-mini", 1_047_576],
    ["gpt-4", 8_192],
    ["gpt-4-turbo", 128_000],
    ["gpt-3.5-turbo", 16_385],
    ["o1-mini", 128_000],
    ["o3-mini", 200_000],
    ["o4-mini", 200_000],
    ["gpt-5", 400_000],
    ["gpt-5-nano", 400_000],
    ["gpt-5-chat-latest", 128_000],
    ["claude-3-5-sonnet-20241022", 200_000],
    ["anthropic/claude-sonnet-4", 200_000],
    ["anthropic/claude-3.7-sonnet", 200_000],
    ["llama3.1:8b", 131_072],
    ["meta-llama/Meta-Llama-3.1-70B-Instruct", 131_072],
    ["llama-3.3-70b-versatile", 131_072],
    ["llama3:8b", 8_192],
    ["qwen2.5:7b-instruct", 32_768],
    ["Qwen/Qwen2.5-Coder-32B-Instruct", 32_768],
    ["mistral:7b", 32_768],
    ["mistral-large-latest", 131_072],
    ["mixtral-8x7b", 32_768],
  ] as const)("%s → %i", (model, contextWindow) => {
    expect(lookupContextWindow(model)).toBe(contextWindow);
  });

  it("knows nothing of other models", () => {
    expect(lookupContextWindow("my-finetune")).toBeUndefined();
    expect(lookupContextWindow("ollama-custom")).toBeUndefined();
  });

  it("prefers the configured value, then the table, then 128000", () => {
    expect(resolveContextWindow("gpt-4", 16_000)).toBe(16_000);
    expect(resolveContextWindow("gpt-4")).toBe(8_192);
    expect(resolveContextWindow("unknown")).toBe(DEFAULT_CONTEXT_WINDOW);
    expect(resolveContextWindow("gpt-4", 0)).toBe(8_192);
  });
});
