import { describe, expect, it } from "vitest";
import { applyPromptCaching, isAnthropicFamily } from "../../../src/context/caching.js";
import type { ApiMessage } from "../../../src/core/messages.js";
import type { WireMessage } from "../../../src/core/llm.js";

const breakpoint = { type: "ephemeral" } as const;

const conversation: ApiMessage[] = [
  { role: "system", content: "You are longhaul." },
  { role: "user", content: "read a.ts" },
  { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: '{"path":"a.ts"}' } }] },
  { role: "tool", tool_call_id: "c1", content: "export const a = 1;" },
  { role: "assistant", content: "a.ts exports a." },
  { role: "user", content: "and b.ts?" },
  { role: "assistant", content: "", tool_calls: [{ id: "c2", type: "function", function: { name: "read_file", arguments: '{"path":"b.ts"}' } }] },
  { role: "tool", tool_call_id: "c2", content: "export const b = 2;" },
];

const markedIndexes = (messages: WireMessage[]) =>
  messages.flatMap((message, index) =>
    Array.isArray(message.content) && message.content.some((part) => part.cache_control !== undefined) ? [index] : [],
  );

describe("isAnthropicFamily", () => {
  it.each([
    ["anthropic/claude-sonnet-4", true],
    ["claude-3-5-haiku-latest", true],
    ["openrouter/anthropic/claude-opus-4", true],
    ["anthropic/some-future-model", true],
    ["gpt-4o-mini", false],
    ["llama3.1:8b", false],
  ])("%s → %s", (model, expected) => {
    expect(isAnthropicFamily(model)).toBe(expected);
  });
});

describe("applyPromptCaching", () => {
  it("gives OpenAI-style models the session id as prompt_cache_key and leaves messages alone", () => {
    const request = applyPromptCaching(conversation, { model: "gpt-4o-mini", sessionId: "tg:42" });
    expect(request.promptCacheKey).toBe("tg:42");
    expect(request.messages).toEqual(conversation);
    request.messages.forEach((message, index) => expect(message).toBe(conversation[index]));
  });

  it("puts system_and_3 breakpoints for Anthropic-family models, skipping tool-call-only messages", () => {
    const request = applyPromptCaching(conversation, { model: "anthropic/claude-sonnet-4", sessionId: "tg:42" });
    expect(request.promptCacheKey).toBeUndefined();
    // The last non-system messages are 7 (tool result), 6 (calls only, empty content: skipped), 5 and 4.
    expect(markedIndexes(request.messages)).toEqual([0, 4, 5, 7]);
    expect(request.messages[0]).toEqual({ role: "system", content: [{ type: "text", text: "You are longhaul.", cache_control: breakpoint }] });
    expect(request.messages[7]).toEqual({ role: "tool", tool_call_id: "c2", content: [{ type: "text", text: "export const b = 2;", cache_control: breakpoint }] });
    expect(request.messages[6]).toBe(conversation[6]);
    expect(request.messages[1]).toBe(conversation[1]);
  });

  it("keeps tool calls on an assistant message that carries a breakpoint", () => {
    const messages: ApiMessage[] = [
      { role: "user", content: "hi" },
      { role: "assistant", content: "Let me check.", tool_calls: [{ id: "c1", type: "function", function: { name: "now", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: "12:00" },
    ];
    const request = applyPromptCaching(messages, { model: "claude-3-5-haiku-latest", sessionId: "s" });
    expect(markedIndexes(request.messages)).toEqual([0, 1, 2]);
    expect(request.messages[1]).toMatchObject({ role: "assistant", tool_calls: [{ id: "c1" }] });
  });

  it("is deterministic and never mutates its input", () => {
    const before = structuredClone(conversation);
    const first = applyPromptCaching(conversation, { model: "anthropic/claude-sonnet-4", sessionId: "tg:42" });
    const second = applyPromptCaching(conversation, { model: "anthropic/claude-sonnet-4", sessionId: "tg:42" });
    expect(JSON.stringify(first)).toBe(JSON.stringify(second));
    expect(conversation).toEqual(before);
  });

  it("moves the rolling breakpoints forward as the conversation grows, keeping the system one", () => {
    const grown: ApiMessage[] = [...conversation, { role: "assistant", content: "b.ts exports b." }, { role: "user", content: "thanks" }];
    const request = applyPromptCaching(grown, { model: "anthropic/claude-sonnet-4", sessionId: "tg:42" });
    expect(markedIndexes(request.messages)).toEqual([0, 7, 8, 9]);
  });
});
