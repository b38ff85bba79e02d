/**
 * Issue #31 item 3: a cache-friendly flush. The memory flush before a fold is a full request the
 * size of the context; tools are part of the provider's cached prefix (OpenAI, Anthropic), so it
 * sends the turn's own tools (calls other than `memory` are not run), and it is paid only when
 * the compaction will fold something (not for a compaction that can only prune).
 */
import { describe, expect, it } from "vitest";
import { createTokenCounter, type ChatMessage, type ToolDefinition } from "../../../src/context/index.js";
import type { ChatRequest, ChatResult, LlmClient } from "../../../src/core/llm.js";
import { silentLogger } from "../../../src/logger.js";
import { flushMemory, flushTools } from "../../../src/memory/flush.js";
import type { MemoryService } from "../../../src/memory/service.js";
import { MEMORY_TOOL_DEFINITION } from "../../../src/memory/tool.js";
import { newSessionState } from "../../../src/session/state.js";
import type { FoldInput } from "../../../src/session-context/index.js";
import { createContextManager } from "../../../src/session-context/session-context.js";

const tool = (name: string): ToolDefinition => ({ type: "function", function: { name, description: `${name} tool`, parameters: { type: "object", properties: {} } } });
const TURN_TOOLS = [tool("recall"), tool("fetch_url"), MEMORY_TOOL_DEFINITION];

function recordingLlm(answer: Partial<ChatResult> = {}): LlmClient & { requests: ChatRequest[] } {
  return {
    model: "gpt-4o-mini",
    contextWindow: 8_192,
    requests: [],
    async complete(request) {
      this.requests.push(request);
      return { content: "NO_REPLY", toolCalls: [], finishReason: "stop", model: "gpt-4o-mini", usage: { promptTokens: 100, completionTokens: 5, cachedTokens: 0 }, ...answer };
    },
  };
}

describe("the flush request", () => {
  it("sends the turn's tools in their order, and runs only the memory tool's calls", async () => {
    const added: string[] = [];
    const service = { add: async (_owner: unknown, text: string) => (added.push(text), { ok: true, fact: { id: "f1", text }, doc: { facts: [] } }), usage: () => "1 fact" } as unknown as MemoryService;
    const llm = recordingLlm({
      toolCalls: [
        { id: "c1", type: "function", function: { name: "fetch_url", arguments: '{"url":"https://example.com"}' } },
        { id: "c2", type: "function", function: { name: "memory", arguments: '{"action":"add","text":"Ada prefers metric units"}' } },
      ],
      finishReason: "tool_calls",
    });
    const saved = await flushMemory({
      llm, service, owner: { scope: "user", platform: "telegram", userId: "1" } as never, context: [{ id: "m1", role: "system", content: "sys" }],
      prepareRequest: (context) => ({ messages: context.map((message) => ({ role: message.role, content: message.content ?? "" })) as never }),
      tools: TURN_TOOLS, maxTokens: 256, signal: new AbortController().signal, log: silentLogger, now: 0,
    });
    expect(llm.requests[0]!.tools).toEqual(TURN_TOOLS);
    expect(added).toEqual(["Ada prefers metric units"]);
    expect(saved).toHaveLength(1);
  });

  it("adds the memory tool last when the turn has none, and offers it alone without the turn's tools", () => {
    expect(flushTools([tool("recall")]).map((definition) => definition.function.name)).toEqual(["recall", "memory"]);
    expect(flushTools(TURN_TOOLS)).toEqual(TURN_TOOLS);
    expect(flushTools(undefined)).toEqual([MEMORY_TOOL_DEFINITION]);
  });
});

describe("the flush runs only before a fold", () => {
  const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));

  function manager(folds: FoldInput[]) {
    return createContextManager({
      llm: recordingLlm(),
      summarizer: { model: "aux", contextWindow: 128_000, summarize: async () => ({ text: "## Goal\nsummary" }) },
      settings: { hygieneThreshold: 0.85, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 },
      tools: () => [tool("recall")],
      hooks: { beforeFold: async (_state, fold) => void folds.push(fold) },
      counter,
    });
  }
  const scope = { signal: new AbortController().signal, log: silentLogger, newId: (() => { let seq = 500; return () => `m${++seq}`; })(), addToTranscript: () => undefined, tools: TURN_TOOLS };

  it("with a middle to fold: once, with the turn's tools", async () => {
    const folds: FoldInput[] = [];
    const state = newSessionState(0, 3);
    const context: ChatMessage[] = [{ id: "m1", role: "system", content: "sys" }];
    for (let index = 0; index < 40; index++) {
      context.push({ id: `m${context.length + 1}`, role: "user", content: `question ${index} ${"about the ledger ".repeat(20)}` });
      context.push({ id: `m${context.length + 1}`, role: "assistant", content: `answer ${index} ${"the ledger balances ".repeat(20)}` });
    }
    const result = await manager(folds).beforeStep(state, context, scope);
    expect(result.some((message) => message.kind === "summary")).toBe(true);
    expect(folds).toHaveLength(1);
    expect(folds[0]!.tools).toEqual(TURN_TOOLS);
  });

  it("when the compaction can only prune (one turn, a huge tool result in its tail): no flush", async () => {
    const folds: FoldInput[] = [];
    const state = newSessionState(0, 3);
    const call = { id: "call_1", type: "function" as const, function: { name: "fetch_url", arguments: "{}" } };
    const context: ChatMessage[] = [
      { id: "m1", role: "system", content: "sys" },
      { id: "m2", role: "user", content: "fetch it" },
      { id: "m3", role: "assistant", content: null, tool_calls: [call] },
      { id: "m4", role: "tool", tool_call_id: "call_1", content: "page text ".repeat(2_000) },
    ];
    const result = await manager(folds).beforeStep(state, context, scope);
    expect(result.find((message) => message.id === "m4")!.kind).toBe("truncated");
    expect(result.some((message) => message.kind === "summary")).toBe(false);
    expect(folds).toHaveLength(0);
  });
});
