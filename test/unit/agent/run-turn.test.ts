import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runTurn } from "../../../src/agent/index.js";
import { ToolRegistry, type Tool } from "../../../src/tools/index.js";
import type { ChatMessage } from "../../../src/core/messages.js";
import { toApiMessages } from "../../../src/core/messages.js";
import { AbortedError } from "../../../src/errors.js";
import { createLlmClient } from "../../../src/llm/index.js";
import { startFakeLlm, textOf, type FakeLlm } from "../../fakes/fake-llm.js";

const tool = (name: string, run: Tool["run"]): Tool => ({
  definition: { type: "function", function: { name, description: name, parameters: { type: "object", properties: {} } } },
  run,
});

describe("the tool loop (real openai client ↔ fake LLM)", () => {
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm();
  });
  afterAll(() => llm.close());

  const saved = new Map<string, string>();
  const run = (overrides: { maxSteps?: number; signal?: AbortSignal; tools?: Tool[]; toolOutputMaxChars?: number } = {}) => {
    let id = 0;
    const tools = new ToolRegistry();
    for (const entry of overrides.tools ?? []) tools.register(entry);
    const context: ChatMessage[] = [{ id: "m0", role: "system", content: "sys" }, { id: "m1", role: "user", content: "go" }];
    return runTurn({
      llm: createLlmClient({ baseUrl: llm.url, model: "gpt-4o-mini", timeoutMs: 5_000, maxRetries: 0 }),
      context,
      tools,
      toolContext: { sessionKey: "s", signal: overrides.signal ?? new AbortController().signal, transcript: { get: async () => undefined, search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }) }, outputs: { read: async () => undefined }, now: () => 0 },
      maxSteps: overrides.maxSteps ?? 5,
      outputCap: () => overrides.toolOutputMaxChars ?? 10_000,
      toolOutputs: { save: async (id, text) => void saved.set(id, text) },
      maxOutputTokens: 256,
      newId: () => `n${++id}`,
      signal: overrides.signal ?? new AbortController().signal,
      now: () => 0,
      prepareRequest: (current) => ({ messages: toApiMessages(current) }),
    });
  };

  it("runs parallel tool calls, turns failures into results for the model, and answers", async () => {
    llm.enqueue(
      { toolCalls: [{ name: "ok_tool", id: "a" }, { name: "broken", id: "b" }, { name: "missing", id: "c" }, { name: "ok_tool", id: "d", arguments: "{not json" }] },
      "all done",
    );
    const started: string[] = [];
    const result = await run({
      tools: [
        tool("ok_tool", async () => {
          started.push("ok");
          await new Promise((resolve) => setTimeout(resolve, 50));
          return "fine";
        }),
        tool("broken", async () => {
          started.push("broken");
          throw new Error("boom");
        }),
      ],
    });
    expect(result.reply).toBe("all done");
    expect(result.steps).toBe(2);
    expect(started).toEqual(["ok", "broken"]);
    const second = llm.requests.at(-1)!.body.messages;
    expect(second.slice(2).map((message) => [message.role, message.tool_call_id ?? null, textOf(message.content)])).toEqual([
      ["assistant", null, ""],
      ["tool", "a", "fine"],
      ["tool", "b", "Error: broken failed: boom"],
      ["tool", "c", 'Error: there is no tool named "missing".'],
      ["tool", "d", expect.stringMatching(/^Error: invalid arguments for ok_tool/)],
    ]);
    expect(result.transcript.map((message) => message.role)).toEqual(["assistant", "tool", "tool", "tool", "tool", "assistant"]);
  });

  it("caps a tool output everywhere it is kept and stores the original once, under the message id", async () => {
    llm.enqueue({ toolCalls: [{ name: "big", id: "x" }] }, "read it");
    const result = await run({ toolOutputMaxChars: 500, tools: [tool("big", async () => "y".repeat(5_000))] });
    const live = result.context.find((message) => message.role === "tool")!;
    const kept = result.transcript.find((message) => message.role === "tool")!;
    expect(live).toEqual(kept);
    expect(live.content!.length).toBeLessThanOrEqual(500);
    expect(live.content).toContain(`recall with id "${live.id}" and offset`);
    expect(saved.get(live.id)).toBe("y".repeat(5_000));
    // The model saw the capped form too.
    const sent = llm.requests.at(-1)!.body.messages.find((message) => message.role === "tool");
    expect(textOf(sent?.content)).toBe(live.content);
  });

  it("pauses a step that calls a tool needing approval: the other calls run, the call leaves the context", async () => {
    llm.enqueue({ toolCalls: [{ name: "safe", id: "s1" }, { name: "risky", id: "r1", arguments: { path: "/etc" } }] });
    const ran: string[] = [];
    const before = llm.requests.length;
    const result = await run({
      tools: [
        tool("safe", async () => (ran.push("safe"), "safe result")),
        { ...tool("risky", async () => (ran.push("risky"), "done")), needsApproval: true },
      ],
    });
    expect(result.stoppedBy).toBe("approval");
    expect(ran).toEqual(["safe"]);
    expect(llm.requests.length - before).toBe(1);
    expect(result.context.map((message) => message.role)).toEqual(["system", "user"]);
    expect(result.transcript).toEqual([]);
    expect(result.paused?.assistant.tool_calls?.map((call) => call.id)).toEqual(["s1", "r1"]);
    expect(result.paused?.results.map((message) => [message.tool_call_id, message.content])).toEqual([["s1", "safe result"]]);
    expect(result.paused?.waiting).toEqual([{ callId: "r1", name: "risky", arguments: JSON.stringify({ path: "/etc" }) }]);
  });

  it("stops at max steps with a last step that keeps the tools and sends tool_choice none", async () => {
    llm.setHandler((request) => (request.body.tool_choice === "none" ? { text: "forced answer" } : { toolCalls: [{ name: "loop" }] }));
    try {
      const result = await run({ maxSteps: 3, tools: [tool("loop", async () => "again")] });
      expect(result.steps).toBe(3);
      expect(result.reply).toBe("forced answer");
      const last = llm.requests.at(-1)!.body;
      expect(last.tools).toHaveLength(1);
      expect(last.tool_choice).toBe("none");
      expect(llm.requests.at(-2)!.body.tool_choice).toBe("auto");
    } finally {
      llm.setHandler((request) => ({ text: `echo: ${textOf(request.body.messages.at(-1)?.content)}` }));
    }
  });

  it("never keeps a tool call the last step made despite tool_choice none (it would have no result)", async () => {
    llm.setHandler(() => ({ text: "trying anyway", toolCalls: [{ name: "loop" }] }));
    try {
      const result = await run({ maxSteps: 1, tools: [tool("loop", async () => "again")] });
      expect(result.stoppedBy).toBe("max-steps");
      const last = result.context.at(-1)!;
      expect(last).toMatchObject({ role: "assistant", content: "trying anyway" });
      expect("tool_calls" in last).toBe(false);
    } finally {
      llm.setHandler((request) => ({ text: `echo: ${textOf(request.body.messages.at(-1)?.content)}` }));
    }
  });

  it("aborts at the step boundary when its signal fires", async () => {
    const controller = new AbortController();
    llm.enqueue({ toolCalls: [{ name: "slow" }] });
    const turn = run({ signal: controller.signal, tools: [tool("slow", async () => {
      controller.abort("stop");
      return "finished anyway";
    })] });
    await expect(turn).rejects.toBeInstanceOf(AbortedError);
  });
});
