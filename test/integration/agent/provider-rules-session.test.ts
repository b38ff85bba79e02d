/**
 * The whole engine against each kind of server (issue #11, item 4): a session that compacts
 * before turns and inside tool loops, with the memory flush and the summarizer, talks to a fake
 * LLM that enforces one server's rules (test/fakes/provider-rules.ts) — OpenAI's and Anthropic's
 * tool-message rules, vLLM with a ChatML template (system first, a user query present), Ollama's
 * argument parsing — and holds the model's window as that server does: OpenAI, Anthropic and
 * vLLM refuse a prompt plus `max_tokens` over it (and vLLM with a Mistral-style template, which
 * refuses roles that do not alternate, with LLM_ALTERNATE_ROLES on) with a 400, Ollama silently drops the oldest
 * messages. Gemini (unknown fields refused, thought signatures required on tool steps), DeepSeek
 * (reasoning_content required back in thinking mode) and Mistral (extra fields refused) each get
 * the session too, with LLM_PROVIDER naming the dialect as an operator would. Every request must be accepted and none may reach the window: the engine has to stay
 * under it by itself, never counting on a 400 (which Ollama never sends) to notice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastUserText, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { ALL_PROVIDER_RULES, checkProviderRules, PROVIDER_FOR_RULES, type ProviderRules } from "../../fakes/provider-rules.js";
import { isSummarizerRequest, readFileTool } from "../../helpers/agent-fixtures.js";
import { testConfig } from "../../helpers/config.js";
import { captureLogs, startPipeline, type LogCapture, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

const TURNS = 24;
const WINDOW = 8_000;

/** The main model reads a file (a large tool output) each turn, then answers; the summarizer writes a short summary. */
function script(llm: FakeLlm): void {
  llm.route(isSummarizerRequest, () => ({ text: "## Pending User Requests\nAnswer the latest message.\n## Goal\nKeep reading modules." }));
  llm.setHandler((request) => {
    const last = request.body.messages.at(-1);
    if (last?.role === "tool") return { text: `done: ${/turn (\d+)/.exec(lastUserText(request))?.[1] ?? "?"}` };
    const turn = /turn (\d+)/.exec(lastUserText(request))?.[1] ?? "0";
    return { toolCalls: [{ name: "read_file", arguments: { path: `src/module${turn}.ts`, lines: 40 + (Number(turn) % 4) * 20 } }] };
  });
}

async function start(llm: FakeLlm, rules: ProviderRules, window: number, logs: LogCapture, adapter: RecordingAdapter): Promise<Pipeline> {
  const config = testConfig({
    LLM_BASE_URL: llm.url, LLM_MODEL: rules === "anthropic" ? "anthropic/claude-sonnet-4.5" : "some-model",
    LLM_CONTEXT_WINDOW: String(window), LLM_MAX_OUTPUT_TOKENS: "512", LLM_PROVIDER: PROVIDER_FOR_RULES[rules],
    MAX_MESSAGE_CHARS: "40000", TOOL_OUTPUT_MAX_CHARS: "8000", COMPACTION_NOTICE: "off",
    // A Mistral/Gemma-style template needs the operator's LLM_ALTERNATE_ROLES (docs/context-engine.md).
    ...(rules === "vllm-alternating" ? { LLM_ALTERNATE_ROLES: "true" } : {}),
  });
  return startPipeline(config, [adapter], { logs, tools: [readFileTool] });
}

async function chat(adapter: RecordingAdapter, turns: number): Promise<void> {
  for (let turn = 1; turn <= turns; turn++) {
    const paste = turn % 8 === 0 ? `\n${"A pasted log line with details and numbers 12345.\n".repeat(250)}` : "";
    await adapter.submit(inbound({ text: `turn ${turn}: please look at module ${turn}${paste}`, messageId: `t${turn}` }));
    await adapter.waitFor((sent) => sent.length === turn, 60_000);
  }
}

describe.each<ProviderRules>(ALL_PROVIDER_RULES)("a compacting session against %s rules", (rules) => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  const logs = captureLogs("info");

  beforeAll(async () => {
    // The provider counts 1.3 of its tokens per token of its own count, as Llama or Qwen differ from o200k.
    llm = await startFakeLlm({ rules, contextWindow: WINDOW, tokenRatio: 1.3 });
    script(llm);
    pipeline = await start(llm, rules, WINDOW, logs, adapter);
  }, 60_000);

  afterAll(async () => {
    await pipeline?.close();
    await llm?.close();
  });

  it("answers every turn with every request accepted and under the window, through pre-turn and in-loop compactions", async () => {
    await chat(adapter, TURNS);
    // A paste over a quarter of the window is kept as head and tail (issue #31): its answer says so, once.
    expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(Array.from({ length: TURNS }, (_, index) =>
      (index + 1) % 8 === 0 ? expect.stringMatching(new RegExp(`^⚠️ Your message was too long to keep whole in my context.*recall "m\\d+"\\)\\.\\n\\ndone: ${index + 1}$`, "s")) : `done: ${index + 1}`));
    const refused = llm.requests.map((request) => checkProviderRules(rules, request.body)).filter((refusal) => refusal !== undefined);
    expect(refused).toEqual([]);
    expect(llm.overWindow).toEqual([]);
    expect(llm.truncated).toEqual([]);
    // The session really compacted, so the requests checked include the summary's context.
    expect(llm.requests.filter(isSummarizerRequest).length).toBeGreaterThanOrEqual(2);
    const records = logs.lines.filter((line) => line.includes('"compaction-finished"')).map((line) => JSON.parse(line).compaction as { status: string });
    expect(records.filter((record) => record.status === "compacted").length).toBeGreaterThanOrEqual(2);
  }, 600_000);
});

describe("a window set larger than the server's", () => {
  it("Ollama (num_ctx 4K, the operator says 16K): the server truncates without an error, and the engine notices from prompt_tokens", async () => {
    const llm = await startFakeLlm({ rules: "ollama", contextWindow: 4_000 });
    script(llm);
    const adapter = new RecordingAdapter("console");
    const logs = captureLogs("info");
    const pipeline = await start(llm, "ollama", 16_000, logs, adapter);
    try {
      await chat(adapter, 6);
      // Ollama answers every request: no error reaches the engine.
      expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(Array.from({ length: 6 }, (_, index) => `done: ${index + 1}`));
      expect(llm.overWindow).toEqual([]);
      expect(llm.truncated.length).toBeGreaterThan(0);
      // What the model was billed for is what it saw: far below what was sent.
      expect(logs.lines.some((line) => line.includes("prompt-tokens-far-below-estimate-server-may-truncate-silently"))).toBe(true);
    } finally {
      await pipeline.close();
      await llm.close();
    }
  }, 300_000);

  it("vLLM (max_model_len 4K, the operator says 16K): its 400 is read as an overflow, the window learned, and the turn answered", async () => {
    const llm = await startFakeLlm({ rules: "vllm", contextWindow: 4_000 });
    script(llm);
    const adapter = new RecordingAdapter("console");
    const logs = captureLogs("info");
    const pipeline = await start(llm, "vllm", 16_000, logs, adapter);
    try {
      await chat(adapter, 6);
      expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(Array.from({ length: 6 }, (_, index) => `done: ${index + 1}`));
      expect(llm.overWindow.length).toBeGreaterThan(0);
      // Refused once, then the engine knows the window: not one refusal per request.
      expect(llm.overWindow.length).toBeLessThanOrEqual(2);
    } finally {
      await pipeline.close();
      await llm.close();
    }
  }, 300_000);
});
