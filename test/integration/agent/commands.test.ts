import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, textOf, withoutStamp, type FakeLlm } from "../../fakes/fake-llm.js";
import { isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { HELP_TEXT } from "../../../src/agent/index.js";

describe("chat commands", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  let count = 0;
  const say = async (text: string) => {
    const expected = ++count;
    await adapter.submit(inbound({ text, messageId: `c${expected}` }));
    await adapter.waitFor((sent) => sent.length >= expected);
    return adapter.sent[expected - 1]!.reply.text;
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: "## Goal\nTalk about the weather.", usage: { prompt_tokens: 500, completion_tokens: 50 } });
    llm.setHandler(() => ({ text: "sure", usage: { prompt_tokens: 1_000, completion_tokens: 100, prompt_tokens_details: { cached_tokens: 400 } } }));
    pipeline = await startPipeline(testConfig({
      LLM_BASE_URL: llm.url, LLM_CONTEXT_WINDOW: "128000",
      LLM_PRICE_INPUT: "2.5", LLM_PRICE_CACHED_INPUT: "1.25", LLM_PRICE_OUTPUT: "10",
    }), [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("/help lists the commands", async () => {
    expect(await say("/help")).toBe(HELP_TEXT);
    expect(HELP_TEXT).toMatch(/\/new.*\/compress.*\/status.*\/usage.*\/stop/s);
    expect(llm.requests).toHaveLength(0);
  });

  it("/stop with nothing running says so", async () => {
    expect(await say("/stop")).toBe("Nothing is running right now.");
  });

  it("/status shows model, context meter, compactions and age", async () => {
    for (let turn = 1; turn <= 6; turn++) await say(`message ${turn}: ${"lots of weather talk ".repeat(60)}`);
    const status = await say("/status");
    expect(status).toMatch(/^Model: gpt-4o-mini$/m);
    expect(status).toMatch(/^Context: [▓░]{10} \d+% · [\d.]+K? \/ 128K$/m);
    expect(status).toMatch(/^Compacts at: [\d,]+ tokens \(now [\d,]+, with the \d+ tools your turns here get\)$/m);
    expect(status).toMatch(/^Messages: 13 in context, 12 in the full transcript$/m);
    expect(status).toMatch(/^Compactions: 0$/m);
    expect(status).toMatch(/^Session age: 0 min$/m);
  });

  it("/usage shows tokens, cache share and estimated cost", async () => {
    const usage = await say("/usage");
    // 6 steps × (1,000 in, 400 cached, 100 out) at $2.5 / $1.25 / $10 per million.
    expect(usage).toMatch(/^Tokens in: 6K \(cached 2K, 40%\) · out: 600$/m);
    expect(usage).toMatch(/^Turns: 6 · LLM steps: 6$/m);
    expect(usage).toMatch(/^Estimated cost: \$0\.0180$/m);
    expect(usage).toMatch(/^Compaction: none so far$/m);
  });

  it("/compress <focus> compacts now and the focus reaches the summarizer", async () => {
    const reply = await say("/compress the weather in Lisbon");
    expect(reply).toMatch(/^Compacted: 13 → \d+ messages, [\d.]+K? → [\d.]+K? tokens, focused on "the weather in Lisbon"\.$/);
    const summarizer = llm.requests.filter(isSummarizerRequest).at(-1)!;
    expect(textOf(summarizer.body.messages[1]?.content)).toContain('focus the summary on "the weather in Lisbon"');
    expect(await say("/status")).toMatch(/^Compactions: 1$/m);
    expect(await say("/usage")).toMatch(/^Compaction: 1 compaction\(s\) removed [\d.]+K? tokens from the context; the summarizer used 550 tokens$/m);
  });

  it("/new archives the conversation and starts fresh", async () => {
    expect(await say("/new")).toBe("Started a new conversation. The previous one is archived.");
    await say("hello again");
    const last = llm.requests.filter((request) => !isSummarizerRequest(request)).at(-1)!;
    expect(last.body.messages.map((message) => message.role)).toEqual(["system", "user"]);
    expect((await say("/status"))).toMatch(/^Messages: 3 in context, 2 in the full transcript$/m);
    expect(await say("/reset")).toBe("Started a new conversation. The previous one is archived.");
  });
});

describe("idle reset (IDLE_RESET_HOURS)", () => {
  it("archives a session idle longer than the limit and starts fresh", async () => {
    const llm = await startFakeLlm();
    const adapter = new RecordingAdapter("console");
    const pipeline = await startPipeline(testConfig({ LLM_BASE_URL: llm.url, IDLE_RESET_HOURS: "0.0003" }), [adapter]);
    try {
      await adapter.submit(inbound({ text: "remember the number 7", messageId: "idle1" }));
      await adapter.waitFor((sent) => sent.length === 1);
      await new Promise((resolve) => setTimeout(resolve, 1_300));
      await adapter.submit(inbound({ text: "which number?", messageId: "idle2" }));
      await adapter.waitFor((sent) => sent.length === 2);
      expect(llm.requests.at(-1)!.body.messages.map((message) => withoutStamp(textOf(message.content))).slice(1)).toEqual(["which number?"]);
    } finally {
      await pipeline.close();
      await llm.close();
    }
  });
});
