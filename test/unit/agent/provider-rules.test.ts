/**
 * Requests valid for every kind of server (issue #11, item 4): the tool loop against a fake LLM
 * that enforces OpenAI's, Anthropic's, vLLM's and Ollama's tool-message rules with their real
 * error bodies. The last step keeps the tools with tool_choice "none"; a call the model makes
 * anyway is not stored without a result; a context with a call and no result, or a result out of
 * place, is repaired before every request.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runTurn, type RunTurnResult } from "../../../src/agent/index.js";
import { ToolRegistry, type Tool } from "../../../src/tools/index.js";
import { toApiMessages, type ChatMessage } from "../../../src/core/messages.js";
import { createLlmClient } from "../../../src/llm/index.js";
import { startFakeLlm, type FakeChatRequestBody, type FakeLlm } from "../../fakes/fake-llm.js";
import { checkProviderRules, type ProviderRules } from "../../fakes/provider-rules.js";

const loopTool: Tool = {
  definition: { type: "function", function: { name: "loop", description: "loop", parameters: { type: "object", properties: {} } } },
  run: async () => "again",
};

const body = (messages: FakeChatRequestBody["messages"], extra: Partial<FakeChatRequestBody> = {}): FakeChatRequestBody => ({ model: "m", messages, ...extra });
const call = (id: string) => ({ id, type: "function", function: { name: "loop", arguments: "{}" } });
const tools = [{ type: "function", function: { name: "loop" } }];

describe("the fake's provider rules refuse what the real servers refuse", () => {
  it("OpenAI: a call without a result, a result without a call, tool_choice without tools", () => {
    const dangling = checkProviderRules("openai", body([{ role: "user", content: "hi" }, { role: "assistant", content: null, tool_calls: [call("call_a")] }, { role: "user", content: "again" }], { tools }));
    expect(dangling).toMatchObject({ status: 400, body: { error: { type: "invalid_request_error", param: "messages.[1].role" } } });
    expect(JSON.stringify(dangling)).toContain("The following tool_call_ids did not have response messages: call_a");
    const orphan = checkProviderRules("openai", body([{ role: "user", content: "hi" }, { role: "tool", tool_call_id: "call_x", content: "r" }]));
    expect(JSON.stringify(orphan)).toContain("messages with role 'tool' must be a response to a preceeding message with 'tool_calls'");
    expect(JSON.stringify(checkProviderRules("openai", body([{ role: "user", content: "hi" }], { tool_choice: "none" })))).toContain("'tool_choice' is only allowed when 'tools' are specified");
    expect(checkProviderRules("openai", body([{ role: "user", content: "hi" }, { role: "assistant", content: null, tool_calls: [call("a"), call("b")] }, { role: "tool", tool_call_id: "b", content: "1" }, { role: "tool", tool_call_id: "a", content: "2" }], { tools }))).toBeUndefined();
  });

  it("Anthropic: tool history without tools (the old last step), results not right after their call, empty messages", () => {
    const history = [{ role: "system", content: "s" }, { role: "user", content: "hi" }, { role: "assistant", content: null, tool_calls: [call("toolu_1")] }, { role: "tool", tool_call_id: "toolu_1", content: "r" }];
    expect(checkProviderRules("anthropic", body(history))).toMatchObject({ status: 400, body: { type: "error", error: { type: "invalid_request_error", message: "Requests which include `tool_use` or `tool_result` blocks must define tools." } } });
    expect(checkProviderRules("anthropic", body(history, { tools, tool_choice: "none" }))).toBeUndefined();
    const late = checkProviderRules("anthropic", body([...history.slice(0, 3), { role: "user", content: "wait" }, history[3]!], { tools }));
    expect(JSON.stringify(late)).toContain("`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1");
    const empty = checkProviderRules("anthropic", body([{ role: "user", content: "hi" }, { role: "assistant", content: "" }, { role: "user", content: "and?" }]));
    expect(JSON.stringify(empty)).toContain("all messages must have non-empty content");
  });

  it("vLLM: tool_choice without tools; Ollama: arguments that are not JSON", () => {
    expect(checkProviderRules("vllm", body([{ role: "user", content: "hi" }], { tool_choice: "none" }))).toMatchObject({ status: 400, body: { object: "error", message: "When using `tool_choice`, `tools` must be set." } });
    expect(checkProviderRules("ollama", body([{ role: "user", content: "hi" }, { role: "assistant", content: null, tool_calls: [{ ...call("c"), function: { name: "loop", arguments: "{not json" } }] }, { role: "tool", tool_call_id: "c", content: "r" }]))).toMatchObject({ status: 400, body: { error: { message: "invalid tool call arguments" } } });
  });
});

describe.each<ProviderRules>(["openai", "anthropic", "vllm", "ollama"])("the tool loop against %s rules", (rules) => {
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm({ rules });
  });
  afterAll(() => llm.close());

  const run = (context: ChatMessage[], maxSteps: number): Promise<RunTurnResult> => {
    let id = 0;
    const registry = new ToolRegistry();
    registry.register(loopTool);
    return runTurn({
      llm: createLlmClient({ baseUrl: llm.url, model: rules === "anthropic" ? "anthropic/claude-sonnet-4.5" : "some-model", timeoutMs: 5_000, maxRetries: 0 }),
      context,
      tools: registry,
      toolContext: { sessionKey: "s", signal: new AbortController().signal, transcript: { get: async () => undefined, search: async () => ({ messages: [], scanned: 0, continueBefore: undefined }) }, outputs: { read: async () => undefined }, now: () => 0 },
      maxSteps,
      outputCap: () => 10_000,
      toolOutputs: { save: async () => {} },
      maxOutputTokens: 256,
      newId: () => `n${++id}`,
      signal: new AbortController().signal,
      now: () => 0,
      prepareRequest: (current) => ({ messages: toApiMessages(current) }),
    });
  };
  const start = (): ChatMessage[] => [{ id: "m0", role: "system", content: "sys" }, { id: "m1", role: "user", content: "go" }];

  it("reaches max steps with every request accepted; the last keeps the tools with tool_choice none", async () => {
    llm.setHandler((request) => (request.body.tool_choice === "none" ? { text: "summing up" } : { toolCalls: [{ name: "loop" }] }));
    const before = llm.requests.length;
    const result = await run(start(), 3);
    expect(result).toMatchObject({ steps: 3, reply: "summing up", stoppedBy: "answer" });
    const sent = llm.requests.slice(before);
    expect(sent.map((request) => request.body.tool_choice)).toEqual(["auto", "auto", "none"]);
    expect(sent.at(-1)!.body.tools).toHaveLength(1);
  });

  it("stores no call without a result when the model calls a tool on the last step anyway, and the next turn is accepted", async () => {
    llm.setHandler(() => ({ text: null, toolCalls: [{ name: "loop" }] }));
    const first = await run(start(), 2);
    expect(first.stoppedBy).toBe("max-steps");
    expect(first.context.at(-1)).toMatchObject({ role: "assistant", content: "(no answer)" });
    expect(first.context.at(-1)).not.toHaveProperty("tool_calls");
    llm.setHandler(() => ({ text: "fine now" }));
    const next = await run([...first.context, { id: "m9", role: "user", content: "and?" }], 5);
    expect(next.reply).toBe("fine now");
  });

  it("repairs a stored call without a result and a result out of place before the request", async () => {
    llm.setHandler(() => ({ text: "repaired" }));
    const broken: ChatMessage[] = [
      ...start(),
      { id: "m2", role: "assistant", content: null, tool_calls: [{ id: "call_lost", type: "function", function: { name: "loop", arguments: "{}" } }, { id: "call_late", type: "function", function: { name: "loop", arguments: "{}" } }] },
      { id: "m3", role: "user", content: "hello?" },
      { id: "m4", role: "tool", tool_call_id: "call_late", content: "late result" },
      { id: "m5", role: "tool", tool_call_id: "call_nobody", content: "orphan" },
      { id: "m6", role: "user", content: "still there?" },
    ];
    const result = await run(broken, 5);
    expect(result.reply).toBe("repaired");
    const sent = llm.requests.at(-1)!.body.messages;
    expect(sent.map((message) => message.tool_call_id ?? message.role)).toEqual(["system", "user", "assistant", "call_lost", "call_late", "user", "user"]);
    // The stub is a new message: it goes to the transcript with the turn.
    expect(result.transcript[0]).toMatchObject({ role: "tool", tool_call_id: "call_lost" });
  });
});
