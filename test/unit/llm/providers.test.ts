/**
 * Provider dialects (issue #27): the profile is detected from the base URL (or set), and each
 * request is shaped as that provider accepts it, against fakes that refuse what the real services
 * refuse (test/fakes/provider-rules.ts): Gemini's unknown fields and missing thought signatures,
 * DeepSeek's missing reasoning_content, Mistral's extra inputs, Anthropic's empty messages.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LLM_PROVIDERS } from "../../../config/schema.js";
import type { ChatRequest, WireMessage } from "../../../src/core/llm.js";
import { toApiMessages, type ChatMessage } from "../../../src/core/messages.js";
import { PermanentError } from "../../../src/errors.js";
import { detectProvider, PROFILES, PROVIDER_NAMES, SKIP_SIGNATURE, type ProviderName } from "../../../src/llm/providers/index.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { GEMINI_SKIP_SIGNATURE } from "../../fakes/provider-rules.js";
import { clientFor, rejectionOf } from "./helpers.js";

const loop = { type: "function" as const, function: { name: "loop", description: "loop", parameters: { type: "object", properties: {} } } };

describe("which profile a base URL gets", () => {
  it.each<[string, ProviderName]>([
    ["https://api.openai.com/v1", "openai"],
    ["https://my-res.openai.azure.com/openai/v1", "azure"],
    ["https://api.anthropic.com/v1", "anthropic"],
    ["https://generativelanguage.googleapis.com/v1beta/openai", "gemini"],
    ["https://api.deepseek.com/v1", "deepseek"],
    ["https://api.mistral.ai/v1", "mistral"],
    ["https://openrouter.ai/api/v1", "openrouter"],
    ["https://api.groq.com/openai/v1", "groq"],
    ["https://api.x.ai/v1", "xai"],
    ["http://127.0.0.1:11434/v1", "ollama"],
    ["http://gpu-box:8000/v1", "vllm"],
    ["http://localhost:8080/v1", "llamacpp"],
    ["http://localhost:1234/v1", "lmstudio"],
    ["http://10.0.0.5:9999/v1", "openai"],
  ])("%s → %s", (url, provider) => {
    expect(detectProvider(url)).toBe(provider);
  });

  it("has one profile per LLM_PROVIDER value, and the config accepts exactly those", () => {
    expect([...LLM_PROVIDERS].sort()).toEqual([...PROVIDER_NAMES].sort());
    for (const name of PROVIDER_NAMES) expect(PROFILES[name].name).toBe(name);
  });
});

describe("the optional fields each profile sends (the table in docs/operator.md)", () => {
  let llm: FakeLlm;
  beforeAll(async () => {
    llm = await startFakeLlm({ rules: "openai" });
  });
  afterAll(() => llm.close());

  const expected: Record<ProviderName, string[]> = {
    openai: ["prompt_cache_key", "stream_options"], openrouter: ["prompt_cache_key", "stream_options"],
    azure: ["stream_options"], groq: ["stream_options"], xai: ["stream_options"], vllm: ["stream_options"],
    anthropic: ["stream_options"], gemini: ["stream_options"], deepseek: ["stream_options"],
    mistral: [], ollama: ["stream_options"], llamacpp: ["stream_options"], lmstudio: ["stream_options"],
  };

  it.each(PROVIDER_NAMES)("%s", async (provider) => {
    llm.setHandler(() => ({ text: "ok" }));
    await clientFor(llm, { provider, model: "some-model" }).complete({ messages: [{ role: "user", content: "hi" }], promptCacheKey: "s1", maxTokens: 10, onText: () => undefined });
    const body = llm.requests.at(-1)!.body;
    expect(Object.keys(body).filter((key) => ["prompt_cache_key", "stream_options", "user", "parallel_tool_calls"].includes(key)).sort()).toEqual(expected[provider]);
    expect(body.max_tokens).toBe(10);
  });
});

/** A two-step tool loop as the agent runs it: the step's assistant message is stored as the client returned it. */
async function toolLoop(llm: FakeLlm, provider: ProviderName, streamed: boolean): Promise<{ history: ChatMessage[]; reply: string }> {
  const client = clientFor(llm, { provider, model: "some-model" });
  llm.setHandler((request) => (request.body.messages.at(-1)?.role === "tool" ? { text: "done" } : { text: null, toolCalls: [{ name: "loop" }] }));
  const history: ChatMessage[] = [{ id: "s", role: "system", content: "sys" }, { id: "u", role: "user", content: "go" }];
  const request = (): ChatRequest => ({
    messages: toApiMessages(history), tools: [loop], promptCacheKey: "session-1", maxTokens: 64, ...(streamed ? { onText: () => undefined } : {}),
  });
  const first = await client.complete(request());
  history.push({ id: "a1", role: "assistant", content: first.content, tool_calls: first.toolCalls, ...(first.reasoningContent ? { reasoning_content: first.reasoningContent } : {}) });
  history.push({ id: "t1", role: "tool", tool_call_id: first.toolCalls[0]!.id, content: "again" });
  const second = await client.complete(request());
  return { history, reply: second.content ?? "" };
}

describe.each([false, true])("each dialect's tool loop (streamed: %s)", (streamed) => {
  const fakes = new Map<string, FakeLlm>();
  beforeAll(async () => {
    for (const rules of ["gemini", "deepseek", "mistral", "anthropic"] as const) fakes.set(rules, await startFakeLlm({ rules }));
  });
  afterAll(async () => {
    for (const fake of fakes.values()) await fake.close();
  });

  it("Gemini: no prompt_cache_key, and the step's thought signature goes back with its call", async () => {
    const llm = fakes.get("gemini")!;
    const { history, reply } = await toolLoop(llm, "gemini", streamed);
    expect(reply).toBe("done");
    const sent = llm.requests.at(-1)!.body;
    expect(sent).not.toHaveProperty("prompt_cache_key");
    const signature = (history[2] as { tool_calls: Array<{ extra_content?: { google?: { thought_signature?: string } } }> }).tool_calls[0]!.extra_content?.google?.thought_signature;
    expect(signature).toMatch(/^[A-Za-z0-9+/=]{16,}$/);
    expect(sent.messages[2]!.tool_calls![0]!.extra_content).toEqual({ google: { thought_signature: signature } });
  });

  it("DeepSeek: the step's reasoning_content is read and sent back", async () => {
    const llm = fakes.get("deepseek")!;
    const { history, reply } = await toolLoop(llm, "deepseek", streamed);
    expect(reply).toBe("done");
    expect(history[2]).toMatchObject({ reasoning_content: expect.stringMatching(/^Thinking about request \d+\.$/) });
    expect(llm.requests.at(-1)!.body.messages[2]!.reasoning_content).toBe((history[2] as { reasoning_content: string }).reasoning_content);
  });

  it("Mistral: nothing it does not know (no prompt_cache_key, stream_options, extra_content or reasoning_content)", async () => {
    const llm = fakes.get("mistral")!;
    const { reply } = await toolLoop(llm, "mistral", streamed);
    expect(reply).toBe("done");
    for (const request of llm.requests) {
      expect(Object.keys(request.body).filter((key) => ["prompt_cache_key", "stream_options", "user"].includes(key))).toEqual([]);
    }
  });

  it("the fakes refuse the OpenAI dialect: Gemini and Mistral the cache key, DeepSeek a step without its reasoning", async () => {
    const gemini = await rejectionOf(toolLoop(fakes.get("gemini")!, "openai", streamed));
    expect(gemini).toBeInstanceOf(PermanentError);
    expect(gemini.message).toContain('Unknown name "prompt_cache_key": Cannot find field.');
    const mistral = await rejectionOf(toolLoop(fakes.get("mistral")!, "openai", streamed));
    expect(mistral.message).toContain("Extra inputs are not permitted");
    const deepseek = await rejectionOf(toolLoop(fakes.get("deepseek")!, "openai", streamed));
    expect(deepseek.message).toContain("The reasoning_content in the thinking mode must be passed back to the API.");
  });
});

describe("histories that already hold what a strict provider refuses", () => {
  let gemini: FakeLlm;
  let anthropic: FakeLlm;
  let groqLike: FakeLlm;
  beforeAll(async () => {
    gemini = await startFakeLlm({ rules: "gemini" });
    anthropic = await startFakeLlm({ rules: "anthropic" });
    groqLike = await startFakeLlm({ rules: "mistral" });
  });
  afterAll(async () => {
    await gemini.close();
    await anthropic.close();
    await groqLike.close();
  });

  it("an empty stored answer (\"\" or null) goes out as a short placeholder; Anthropic accepts the next turn", async () => {
    const history: WireMessage[] = [
      { role: "user", content: "hi" }, { role: "assistant", content: "" },
      { role: "user", content: "again" }, { role: "assistant", content: null },
      { role: "user", content: "and?" },
    ];
    anthropic.setHandler(() => ({ text: "here" }));
    const result = await clientFor(anthropic, { provider: "anthropic", model: "claude-sonnet-4-5" }).complete({ messages: history });
    expect(result.content).toBe("here");
    expect(anthropic.requests.at(-1)!.body.messages.map((message) => message.content)).toEqual(["hi", "(no answer)", "again", "(no answer)", "and?"]);
  });

  it("Gemini: a tool step stored without a signature (another model's) carries Google's placeholder; a made-up one is refused", async () => {
    const step: WireMessage[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "loop", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "c1", content: "r" },
    ];
    gemini.setHandler(() => ({ text: "ok" }));
    expect((await clientFor(gemini, { provider: "gemini" }).complete({ messages: step, tools: [loop] })).content).toBe("ok");
    expect(SKIP_SIGNATURE).toBe(GEMINI_SKIP_SIGNATURE);
    expect(gemini.requests.at(-1)!.body.messages[1]!.tool_calls![0]!.extra_content).toEqual({ google: { thought_signature: GEMINI_SKIP_SIGNATURE } });
    const forged = structuredClone(step);
    (forged[1] as { tool_calls: Array<{ extra_content?: unknown }> }).tool_calls[0]!.extra_content = { google: { thought_signature: "Zm9yZ2VkLXNpZ25hdHVyZQ==" } };
    const refused = await rejectionOf(clientFor(gemini, { provider: "gemini" }).complete({ messages: forged, tools: [loop] }));
    expect(refused.message).toContain("Function call is missing a thought_signature");
  });

  it("reasoning and signatures are stripped for a provider that refuses unknown fields", async () => {
    const step: WireMessage[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: null, reasoning_content: "thought", tool_calls: [{ id: "c1", type: "function", function: { name: "loop", arguments: "{}" }, extra_content: { google: { thought_signature: "abc" } } }] } as WireMessage,
      { role: "tool", tool_call_id: "c1", content: "r" },
    ];
    groqLike.setHandler(() => ({ text: "ok" }));
    expect((await clientFor(groqLike, { provider: "mistral" }).complete({ messages: step, tools: [loop] })).content).toBe("ok");
    expect(groqLike.requests.at(-1)!.body.messages[1]).toEqual({ role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "loop", arguments: "{}" } }] });
  });

  it("Gemini reports reasoning tokens apart from completion_tokens: the usage adds them", async () => {
    gemini.setHandler(() => ({ text: "four words of answer", reasoning: "x".repeat(400), usage: { completion_tokens: 5 } }));
    const result = await clientFor(gemini, { provider: "gemini" }).complete({ messages: [{ role: "user", content: "hi" }] });
    expect(result.usage).toMatchObject({ completionTokens: 105 });
    const asOpenAi = await clientFor(gemini, { provider: "llamacpp" }).complete({ messages: [{ role: "user", content: "hi" }] });
    expect(asOpenAi.usage).toMatchObject({ completionTokens: 5 });
  });
});
