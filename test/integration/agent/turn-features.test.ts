import { describe, expect, it } from "vitest";
import { httpError, lastUserText, overflow, startFakeLlm, textOf, withoutStamp } from "../../fakes/fake-llm.js";
import { fakeFileContent, isSummarizerRequest, readFileTool } from "../../helpers/agent-fixtures.js";
import { testConfig } from "../../helpers/config.js";
import { captureLogs, startPipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";

describe("the agent turn: overflow, recall", () => {
  async function setup(env: Record<string, string> = {}) {
    const llm = closeAfterTest(await startFakeLlm());
    // Like a real summarizer told to keep message ids and paths literally: it lists the tool
    // results it summarized, by id, under "Relevant Files & Identifiers".
    llm.route(isSummarizerRequest, (request) => {
      const turns = textOf(request.body.messages[1]?.content);
      const identifiers = turns.split("\n").filter((line) => /^\[m\d+\][^\n]* tool result/.test(line)).map((line) => `- ${line.slice(0, 120)}`);
      return { text: `## Goal\nHelp with the modules.\n## Relevant Files & Identifiers\n${identifiers.join("\n") || "None."}\n## Next Steps\nAnswer the latest message.` };
    });
    const adapter = new RecordingAdapter("console");
    const logs = captureLogs("info");
    closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url, COMPACTION_NOTICE: "off", ...env }), [adapter], { logs, tools: [readFileTool] }));
    let turns = 0;
    const say = async (text: string) => {
      const expected = ++turns;
      await adapter.submit(inbound({ text, messageId: `u${expected}` }));
      await adapter.waitFor((sent) => sent.length >= expected);
      return adapter.sent[expected - 1]!.reply.text;
    };
    return { adapter, llm, logs, say };
  }

  it("compacts on a context-overflow error and retries; the user never repeats the message", async () => {
    const { llm, logs, say } = await setup();
    const longish = (turn: number) => `warm-up message number ${turn}: ${"with quite a lot of words in it, ".repeat(40)}`;
    for (let turn = 1; turn <= 8; turn++) await say(longish(turn));
    llm.enqueue(overflow.openai({ contextWindow: 8192 }));
    expect(await say("the one that overflows")).toBe("echo: the one that overflows");
    const records = logs.lines.filter((line) => line.includes('"compaction-finished"')).map((line) => JSON.parse(line).compaction);
    expect(records.map((record: { reason: string; status: string }) => `${record.reason}:${record.status}`)).toEqual(["overflow:compacted"]);
    expect(logs.lines.some((line) => line.includes('"context-window-learned"') && line.includes("8192"))).toBe(true);
    // The retry carried the summary in place of the old turns, and still ends with the pending message.
    const retry = llm.requests.filter((request) => !isSummarizerRequest(request)).at(-1)!;
    expect(lastUserText(retry)).toBe("the one that overflows");
    expect(retry.body.messages.map((message) => textOf(message.content)).join("\n")).toContain("Help with the modules.");
    // The learned window is used from then on.
    expect(await say("/status")).toContain("/ 8K");
  });

  it("after repeated overflows ends the turn with a clear message and keeps the session intact", async () => {
    const { llm, say } = await setup();
    for (let turn = 1; turn <= 8; turn++) await say(`warm-up message number ${turn}: ${"with quite a lot of words in it, ".repeat(40)}`);
    llm.enqueue(overflow.openai({ contextWindow: 8192 }), overflow.openai({ contextWindow: 8192 }), overflow.openai({ contextWindow: 8192 }), overflow.openai({ contextWindow: 8192 }));
    expect(await say("this will not fit")).toMatch(/no longer fits the model's context.*Nothing is lost/);
    expect(await say("and now?")).toBe("echo: and now?");
    const users = llm.requests.filter((request) => !isSummarizerRequest(request)).at(-1)!.body.messages.filter((message) => message.role === "user");
    expect(users.map((message) => withoutStamp(textOf(message.content))).slice(-2)).toEqual(["this will not fit", "and now?"]);
  });

  it("recall brings back a pruned tool output verbatim", async () => {
    const { llm, say } = await setup({ LLM_CONTEXT_WINDOW: "16000" });
    let recalled: string | undefined;
    llm.setHandler((request) => {
      const messages = request.body.messages;
      const last = messages[messages.length - 1]!;
      if (last.role === "tool") {
        if (messages.at(-2)?.tool_calls?.[0]?.function.name === "recall") recalled = textOf(last.content);
        return { text: "ok" };
      }
      const ask = lastUserText(request);
      if (ask.startsWith("read ")) return { toolCalls: [{ name: "read_file", arguments: { path: ask.slice(5), lines: 90 } }] };
      // "what was in …": find the file's id in the summary and recall the original by it.
      const context = messages.map((message) => textOf(message.content)).join("\n");
      const id = /\[(m\d+)\][^\n]* tool result \(read_file\): src\/first\.ts/.exec(context)?.[1];
      return id ? { toolCalls: [{ name: "recall", arguments: { id } }] } : { text: "no placeholder found" };
    });
    await say("read src/first.ts");
    for (let turn = 2; turn <= 6; turn++) await say(`read src/other${turn}.ts`);
    expect(await say("what was in src/first.ts?")).toBe("ok");
    expect(recalled).toBeDefined();
    expect(recalled).toContain(fakeFileContent("src/first.ts", 90));
  });
});

describe("prompt caching in every request", () => {
  it("marks the system prompt and the last 3 non-system messages for Anthropic-family models", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const adapter = new RecordingAdapter("console");
    closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url, LLM_MODEL: "anthropic/claude-sonnet-4.5" }), [adapter]));
    for (let turn = 1; turn <= 3; turn++) {
      await adapter.submit(inbound({ text: `question ${turn}`, messageId: `a${turn}` }));
      await adapter.waitFor((sent) => sent.length === turn);
    }
    const request = llm.requests.at(-1)!.body;
    const marked = request.messages.map((message) => Array.isArray(message.content) && message.content.some((part: { cache_control?: unknown }) => part.cache_control !== undefined));
    // system, q1, a1, q2, a2, q3: the system prompt and the last three messages carry a breakpoint.
    expect(marked).toEqual([true, false, false, true, true, true]);
    expect(request.prompt_cache_key).toBeUndefined();
  });

  it("sends the session id as prompt_cache_key for OpenAI models, stable across turns", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const adapter = new RecordingAdapter("console");
    closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url, LLM_MODEL: "gpt-4o-mini" }), [adapter]));
    for (let turn = 1; turn <= 2; turn++) {
      await adapter.submit(inbound({ text: `question ${turn}`, messageId: `o${turn}` }));
      await adapter.waitFor((sent) => sent.length === turn);
    }
    const keys = llm.requests.map((request) => request.body.prompt_cache_key);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toBe(keys[0]);
    expect(llm.requests.every((request) => typeof request.body.messages[0]?.content === "string")).toBe(true);
  });
});

describe("session isolation", () => {
  it("recall in one session never sees another session's transcript", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const adapter = new RecordingAdapter("console");
    closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url }), [adapter]));
    llm.setHandler((request) => {
      const last = request.body.messages.at(-1)!;
      if (last.role === "tool") return { text: textOf(last.content) };
      const query = /^search: (.*)$/.exec(lastUserText(request))?.[1];
      return query ? { toolCalls: [{ name: "recall", arguments: { query } }] } : { text: "noted" };
    });
    await adapter.submit(inbound({ chatId: "alice", text: "my server is called Nimbus-7", messageId: "iso1" }));
    await adapter.waitFor((sent) => sent.length === 1);
    await adapter.submit(inbound({ chatId: "bob", text: "search: Nimbus", messageId: "iso2" }));
    await adapter.waitFor((sent) => sent.length === 2);
    expect(adapter.sent[1]?.reply.text).toBe('Nothing in the transcript matches "Nimbus".');
    await adapter.submit(inbound({ chatId: "alice", text: "search: Nimbus", messageId: "iso3" }));
    await adapter.waitFor((sent) => sent.length === 3);
    // recall shows the message as stored: its send-time stamp first.
    expect(adapter.sent[2]?.reply.text).toMatch(/^m\d+ \(user\): \[\w{3} \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\] my server is called Nimbus-7/);
  });
});

describe("when the summarizer fails", () => {
  it("keeps the context, answers anyway, and tells the user once", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    llm.route(isSummarizerRequest, httpError.server(500));
    const adapter = new RecordingAdapter("console");
    const logs = captureLogs("info");
    // The fake reports chars / 4, about 1.4× our count: nine turns come to ~18K of its tokens, so
    // the window leaves room for them under the hard limit (over it, old turns would be dropped).
    closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url, LLM_CONTEXT_WINDOW: "24000", LLM_MAX_RETRIES: "0" }), [adapter], { logs }));
    for (let turn = 1; turn <= 9; turn++) {
      await adapter.submit(inbound({ text: `part ${turn}: ${"a detailed paragraph about the project plan. ".repeat(90)}`, messageId: `f${turn}` }));
      await adapter.waitFor((sent) => sent.length === turn, 60_000);
    }
    const failed = logs.lines.filter((line) => line.includes('"compaction-finished"') && line.includes('"status":"failed"'));
    expect(failed.length).toBeGreaterThanOrEqual(2);
    const notices = adapter.sent.filter((entry) => entry.reply.text.startsWith("⚠️ I couldn't compact our conversation just now"));
    expect(notices).toHaveLength(1);
    // Every message was still answered, after the notice where there was one.
    for (const [index, entry] of adapter.sent.entries()) expect(entry.reply.text).toMatch(new RegExp(`echo: part ${index + 1}: `));
    // Nothing was dropped from the live context: the last request holds all nine messages.
    const users = llm.requests.filter((request) => !isSummarizerRequest(request)).at(-1)!.body.messages.filter((message) => message.role === "user");
    expect(users).toHaveLength(9);
  }, 120_000);
});
