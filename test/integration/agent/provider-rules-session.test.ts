/**
 * The whole engine against each kind of server (issue #11, item 4): a session that compacts
 * before turns and inside tool loops, with the memory flush and the summarizer, talks to a fake
 * LLM that enforces one server's rules (test/fakes/provider-rules.ts) — OpenAI's and Anthropic's
 * tool-message rules, vLLM with a ChatML template (system first, a user query present), Ollama's
 * argument parsing. Every request must be accepted: a refusal is a 400 the user would see as a
 * failed turn.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastUserText, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { checkProviderRules, type ProviderRules } from "../../fakes/provider-rules.js";
import { isSummarizerRequest, readFileTool } from "../../helpers/agent-fixtures.js";
import { testConfig } from "../../helpers/config.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

const TURNS = 24;
const WINDOW = 8_000;

describe.each<ProviderRules>(["openai", "anthropic", "vllm", "ollama"])("a compacting session against %s rules", (rules) => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  const logs = captureLogs("info");

  beforeAll(async () => {
    llm = await startFakeLlm({ rules });
    llm.route(isSummarizerRequest, () => ({ text: "## Pending User Requests\nAnswer the latest message.\n## Goal\nKeep reading modules." }));
    // The main model reads a file (a large tool output) each turn, then answers.
    llm.setHandler((request) => {
      const last = request.body.messages.at(-1);
      if (last?.role === "tool") return { text: `done: ${/turn (\d+)/.exec(lastUserText(request))?.[1] ?? "?"}` };
      const turn = /turn (\d+)/.exec(lastUserText(request))?.[1] ?? "0";
      return { toolCalls: [{ name: "read_file", arguments: { path: `src/module${turn}.ts`, lines: 40 + (Number(turn) % 4) * 20 } }] };
    });
    const config = testConfig({
      LLM_BASE_URL: llm.url, LLM_MODEL: rules === "anthropic" ? "anthropic/claude-sonnet-4.5" : "some-model",
      LLM_CONTEXT_WINDOW: String(WINDOW), LLM_MAX_OUTPUT_TOKENS: "512",
      MAX_MESSAGE_CHARS: "40000", TOOL_OUTPUT_MAX_CHARS: "8000", COMPACTION_NOTICE: "off",
    });
    pipeline = await startPipeline(config, [adapter], { logs, tools: [readFileTool] });
  }, 60_000);

  afterAll(async () => {
    await pipeline?.close();
    await llm?.close();
  });

  it("answers every turn with every request accepted, through pre-turn and in-loop compactions", async () => {
    for (let turn = 1; turn <= TURNS; turn++) {
      const paste = turn % 8 === 0 ? `\n${"A pasted log line with details and numbers 12345.\n".repeat(250)}` : "";
      await adapter.submit(inbound({ text: `turn ${turn}: please look at module ${turn}${paste}`, messageId: `t${turn}` }));
      await adapter.waitFor((sent) => sent.length === turn, 60_000);
    }
    expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(Array.from({ length: TURNS }, (_, index) => `done: ${index + 1}`));
    const refused = llm.requests.map((request) => checkProviderRules(rules, request.body)).filter((refusal) => refusal !== undefined);
    expect(refused).toEqual([]);
    // The session really compacted, so the requests checked include the summary's context.
    expect(llm.requests.filter(isSummarizerRequest).length).toBeGreaterThanOrEqual(2);
    const records = logs.lines.filter((line) => line.includes('"compaction-finished"')).map((line) => JSON.parse(line).compaction as { status: string });
    expect(records.filter((record) => record.status === "compacted").length).toBeGreaterThanOrEqual(2);
  }, 600_000);
});
