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
import { checkProviderRules, ollamaTruncation, PROVIDER_FOR_RULES, type ProviderRules } from "../../fakes/provider-rules.js";

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
    expect(checkProviderRules("vllm", body([{ role: "user", content: "hi" }], { tool_choice: "none" }))).toMatchObject({ status: 400, body: { error: { type: "BadRequestError", code: 400, message: "When using `tool_choice`, `tools` must be set." } } });
    expect(checkProviderRules("ollama", body([{ role: "user", content: "hi" }, { role: "assistant", content: null, tool_calls: [{ ...call("c"), function: { name: "loop", arguments: "{not json" } }] }, { role: "tool", tool_call_id: "c", content: "r" }]))).toMatchObject({ status: 400, body: { error: { message: "invalid tool call arguments" } } });
  });
});

describe("vLLM chat templates refuse what the template raises on", () => {
  const system = { role: "system", content: "s" };
  const user = (content: string) => ({ role: "user", content });
  const assistant = (content: string) => ({ role: "assistant", content });
  const calls = (...ids: string[]) => ({ role: "assistant", content: null, tool_calls: ids.map(call) });
  const result = (id: string) => ({ role: "tool", tool_call_id: id, content: "r" });
  const messageOf = (refusal: ReturnType<typeof checkProviderRules>) => (refusal?.body as { error?: { message?: string } } | undefined)?.error?.message;

  it("ChatML (Qwen3.5): a system message only first, and some user query", () => {
    expect(checkProviderRules("vllm", body([system, user("hi"), assistant("a"), user("b")]))).toBeUndefined();
    // Consecutive same-role messages and tool pairs render as they come.
    expect(checkProviderRules("vllm", body([system, user("hi"), user("more"), calls("c1"), result("c1"), assistant("x"), assistant("y")], { tools }))).toBeUndefined();
    const late = checkProviderRules("vllm", body([system, user("hi"), { role: "system", content: "Today is Tuesday." }]));
    expect(late).toMatchObject({ status: 400, body: { error: { type: "BadRequestError", code: 400 } } });
    expect(messageOf(late)).toBe("System message must be at the beginning.");
    expect(messageOf(checkProviderRules("vllm", body([system, calls("c1"), result("c1")], { tools })))).toBe("No user query found in messages.");
  });

  it("alternating (Mistral v0.3 style): user/assistant after the optional system message, tool turns not counted", () => {
    const alternate = "After the optional system message, conversation roles must alternate user/assistant/user/assistant/...";
    expect(checkProviderRules("vllm-alternating", body([system, user("a"), assistant("b"), user("c")]))).toBeUndefined();
    expect(checkProviderRules("vllm-alternating", body([user("a"), calls("c1", "c2"), result("c1"), result("c2"), calls("c3"), result("c3"), assistant("done"), user("next")], { tools }))).toBeUndefined();
    expect(messageOf(checkProviderRules("vllm-alternating", body([system, user("a"), user("b")])))).toBe(alternate);
    expect(messageOf(checkProviderRules("vllm-alternating", body([system, assistant("hello"), user("b")])))).toBe(alternate);
    expect(messageOf(checkProviderRules("vllm-alternating", body([system, user("a"), calls("c1"), result("c1"), user("b")], { tools })))).toBe(alternate);
    expect(messageOf(checkProviderRules("vllm-alternating", body([system, user("a"), assistant("b"), system])))).toBe(alternate);
    expect(messageOf(checkProviderRules("vllm-alternating", body([system, user("a"), { role: "developer", content: "d" }])))).toBe(
      "Only user and assistant roles are supported, with the exception of an initial optional system message!",
    );
    expect(checkProviderRules("vllm-alternating", body([user("a")], { tool_choice: "auto" }))).toMatchObject({ body: { error: { message: "When using `tool_choice`, `tools` must be set." } } });
  });
});

describe("Ollama truncates from the front instead of refusing (server/prompt.go chatPrompt)", () => {
  // The fake's own measure for this test: 10 per message plus the text length.
  const count = (request: FakeChatRequestBody) => request.messages.reduce((sum, message) => sum + 10 + String(message.content ?? "").length, 0);
  const message = (role: string, size: number, extra: Record<string, unknown> = {}) => ({ role, content: "x".repeat(size), ...extra });

  it("keeps everything that fits", () => {
    const messages = [message("system", 10), message("user", 10), message("assistant", 10)];
    expect(ollamaTruncation(body(messages), 60, count)).toEqual({ messages, droppedMessages: 0 });
  });

  it("drops the oldest messages, keeps the system prompt and the newest", () => {
    const messages = [message("system", 10), message("user", 50, { id: "old" }), message("assistant", 50), message("user", 10, { id: "new" })];
    const truncated = ollamaTruncation(body(messages), 50, count);
    expect(truncated.droppedMessages).toBe(2);
    expect(truncated.messages).toEqual([messages[0], messages[3]]);
  });

  it("never keeps a tool result without the call before it, and keeps the last message whatever its size", () => {
    const messages = [
      message("system", 10), message("user", 10),
      { role: "assistant", content: null, tool_calls: [call("c1"), call("c2")] }, message("tool", 30, { tool_call_id: "c1" }), message("tool", 30, { tool_call_id: "c2" }),
    ];
    // The system prompt and the last result alone are over 50: the last message stays anyway, with the call it answers and that call's other result.
    const truncated = ollamaTruncation(body(messages), 50, count);
    expect(truncated.messages).toEqual([messages[0], messages[2], messages[3], messages[4]]);
    expect(truncated.droppedMessages).toBe(1);
    const huge = [message("system", 10), message("user", 10), message("user", 500)];
    expect(ollamaTruncation(body(huge), 50, count).messages).toEqual([huge[0], huge[2]]);
  });
});

describe("the fake LLM holds the window as each server does", () => {
  const post = (llm: FakeLlm, payload: unknown) =>
    fetch(`${llm.url}/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(payload) });
  // 1,000 of the fake's own tokens each (3,984 characters + 16 of framing); "s" and the empty tools list add 5.
  const big = (label: string) => `${label} ${"x".repeat(3_983 - label.length)}`;

  it("vLLM refuses prompt + max_tokens over max_model_len with its 400, before the model sees it", async () => {
    const llm = await startFakeLlm({ rules: "vllm", contextWindow: 2_500 });
    try {
      const refused = await post(llm, body([{ role: "system", content: "s" }, { role: "user", content: big("a") }, { role: "user", content: big("b") }], { max_tokens: 600 }));
      expect(refused.status).toBe(400);
      const error = ((await refused.json()) as { error: { message: string; param: string; code: number; type: string } }).error;
      expect(error).toMatchObject({ type: "BadRequestError", param: "input_tokens", code: 400 });
      expect(error.message).toBe(
        "This model's maximum context length is 2500 tokens. However, you requested 600 output tokens and your prompt contains at least 2005 input tokens, for a total of at least 2605 tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=2005)",
      );
      expect(llm.overWindow).toEqual([0]);
    } finally {
      await llm.close();
    }
  });

  it("Ollama answers a prompt over num_ctx from its newest messages, with no error, and bills what the model saw", async () => {
    const llm = await startFakeLlm({ rules: "ollama", contextWindow: 1_500 });
    try {
      const seen: string[][] = [];
      llm.setHandler((request) => (seen.push(request.body.messages.map((message) => String(message.content).slice(0, 1))), { text: "ok" }));
      const answer = await post(llm, body([{ role: "system", content: "s" }, { role: "user", content: big("a") }, { role: "assistant", content: big("b") }, { role: "user", content: big("c") }], { max_tokens: 600 }));
      expect(answer.status).toBe(200);
      const { usage } = (await answer.json()) as { usage: { prompt_tokens: number } };
      // 3,005 sent; without "a" still 2,005; the system prompt and the newest message, 1,005, fit.
      expect(seen).toEqual([["s", "c"]]);
      expect(usage.prompt_tokens).toBe(1_005);
      expect(llm.truncated).toEqual([{ index: 0, droppedMessages: 2 }]);
      expect(llm.overWindow).toEqual([]);
      // What fits is untouched.
      await post(llm, body([{ role: "system", content: "s" }, { role: "user", content: big("d") }]));
      expect(seen[1]).toEqual(["s", "d"]);
      expect(llm.truncated).toHaveLength(1);
    } finally {
      await llm.close();
    }
  });
});

describe.each<ProviderRules>(["openai", "anthropic", "vllm", "ollama", "gemini", "deepseek", "mistral"])("the tool loop against %s rules", (rules) => {
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
      llm: createLlmClient({ baseUrl: llm.url, model: rules === "anthropic" ? "anthropic/claude-sonnet-4.5" : "some-model", provider: PROVIDER_FOR_RULES[rules], timeoutMs: 5_000, maxRetries: 0 }),
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
