import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastUserText, startFakeLlm, textOf, type FakeLlm, type RecordedRequest } from "../../fakes/fake-llm.js";
import { isFlushRequest, isSummarizerRequest, readFileTool, requestTokens } from "../../helpers/agent-fixtures.js";
import { testConfig } from "../../helpers/config.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

const TURNS = 300;
const WINDOW = 16_000;
const PASTE_EVERY = 40;

/** The paste notice at the start of a reply (its recall id varies). */
const pasteNoticeOf = (reply: string): string => /^⚠️ (Your message was too long to keep whole in my context[^\n]*recall "m\d+"\)\.)\n/.exec(reply)?.[1] ?? "(no paste notice)";

describe("a long session under a small window (300 turns, 16K)", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  const logs = captureLogs("info");
  let summaries = 0;

  beforeAll(async () => {
    llm = await startFakeLlm();
    // The summarizer: a short summary with a marker, so the next request can be checked for it.
    llm.route(isSummarizerRequest, () => ({ text: `## Goal\nKeep going. SUMMARY#${++summaries}\n## Next Steps\nAnswer the latest message.`, usage: { prompt_tokens: 900, completion_tokens: 40 } }));
    // The main model: every turn reads a file (large tool output), then answers.
    llm.setHandler((request) => {
      const last = request.body.messages[request.body.messages.length - 1];
      if (last?.role === "tool") return { text: `done: ${lastUserText(request).slice(0, 20)}` };
      const turn = /turn (\d+)/.exec(lastUserText(request))?.[1] ?? "0";
      return { toolCalls: [{ name: "read_file", arguments: { path: `src/module${turn}.ts`, lines: 60 + (Number(turn) % 5) * 20 } }] };
    });
    const config = testConfig({
      LLM_BASE_URL: llm.url, LLM_CONTEXT_WINDOW: String(WINDOW), LLM_MAX_OUTPUT_TOKENS: "1024",
      MAX_MESSAGE_CHARS: "60000", TOOL_OUTPUT_MAX_CHARS: "16000", COMPACTION_NOTICE: "off",
      // A paste now enters as at most 25% of the window (issue #31), so it no longer carries a
      // session past 85%: pre-turn hygiene is reached from 60% here.
      HYGIENE_THRESHOLD: "0.6",
    });
    pipeline = await startPipeline(config, [adapter], { logs, tools: [readFileTool] });
  }, 60_000);

  afterAll(async () => {
    await pipeline?.close();
    await llm?.close();
  });

  it("runs to the end, compacts pre-turn and in-loop, never sends more than the window, and updates the summary iteratively", async () => {
    for (let turn = 1; turn <= TURNS; turn++) {
      // Now and then a long paste arrives, the way a group chat grows between turns.
      const paste = turn % PASTE_EVERY === 0 ? `\n${"A pasted log line with details and numbers 12345.\n".repeat(1000)}` : "";
      await adapter.submit(inbound({ text: `turn ${turn}: please look at module ${turn}${paste}`, messageId: `t${turn}` }));
      await adapter.waitFor((sent) => sent.length === turn, 30_000);
    }
    // A paste over a quarter of the window is kept as head and tail (issue #31): its answer says so, once.
    expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(
      Array.from({ length: TURNS }, (_, index) => {
        const done = `done: ${`turn ${index + 1}: please look at module`.slice(0, 20)}`.trim();
        return (index + 1) % PASTE_EVERY === 0 ? `⚠️ ${pasteNoticeOf(adapter.sent[index]!.reply.text)}\n\n${done}` : done;
      }),
    );
    expect(adapter.sent.filter((entry) => entry.reply.text.includes("too long to keep whole")).length).toBe(Math.floor(TURNS / PASTE_EVERY));

    const records = logs.lines.filter((line) => line.includes('"compaction-finished"')).map((line) => JSON.parse(line).compaction as { reason: string; status: string });
    const reasons = new Set(records.filter((record) => record.status === "compacted").map((record) => record.reason));
    expect(reasons).toContain("in-loop");
    expect(reasons).toContain("hygiene");

    const main: RecordedRequest[] = llm.requests.filter((request) => !isSummarizerRequest(request));
    const largest = Math.max(...main.map((request) => requestTokens(request)));
    expect(largest).toBeLessThanOrEqual(WINDOW);

    // Prompt caching: between two compactions every request extends the previous one byte for
    // byte (same tools, same cache key, same messages as a prefix).
    let compared = 0;
    for (let index = 1; index < llm.requests.length; index++) {
      const [previous, current] = [llm.requests[index - 1]!, llm.requests[index]!];
      // The summarizer and the memory flush before a fold are requests of their own.
      if ([previous, current].some((request) => isSummarizerRequest(request) || isFlushRequest(request))) continue;
      const previousMessages = JSON.stringify(previous.body.messages);
      const currentPrefix = JSON.stringify(current.body.messages.slice(0, previous.body.messages.length));
      expect(currentPrefix).toBe(previousMessages);
      expect(JSON.stringify(current.body.tools)).toBe(JSON.stringify(previous.body.tools));
      expect(current.body.prompt_cache_key).toBe(previous.body.prompt_cache_key);
      compared++;
    }
    expect(compared).toBeGreaterThan(TURNS);

    const summarizerRequests = llm.requests.filter(isSummarizerRequest);
    expect(summarizerRequests.length).toBeGreaterThanOrEqual(5);
    summarizerRequests.slice(1).forEach((request, index) => {
      const prompt = request.body.messages.map((message) => textOf(message.content)).join("\n");
      expect(prompt).toContain("<previous-summary>");
      // The summary it updates is the latest one before it (chunked folds carry their own).
      expect(prompt).toMatch(new RegExp(`SUMMARY#(${index + 1})\\b`));
    });
  }, 600_000);
});
