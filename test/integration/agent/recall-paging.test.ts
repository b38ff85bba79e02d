/**
 * recall by words on a weeks-long transcript: each search reads one bounded page (newest first)
 * and says where older messages start; the searches of one turn stop at a budget.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastUserText, startFakeLlm, textOf, type FakeLlm } from "../../fakes/fake-llm.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { SEARCH_MAX_ENTRIES, SEARCH_TURN_BUDGET_ENTRIES } from "../../../src/session/transcript-search.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

const HISTORY = 14_000;

describe("recall by words on a long transcript", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let redis: Redis;
  const adapter = new RecordingAdapter("console");
  const toolResults: string[] = [];

  beforeAll(async () => {
    llm = await startFakeLlm();
    const config = testConfig({ LLM_BASE_URL: llm.url, AGENT_MAX_STEPS: "12" });
    redis = createRedis(config.REDIS_URL!);
    const store = new SessionStore(redis, config.REDIS_PREFIX);
    // Weeks of history, with the one fact asked for near the start.
    const key = store.keys("console:chat-1").transcript;
    const entries = Array.from({ length: HISTORY }, (_, index) => JSON.stringify({ id: `h${index}`, role: "user", content: index === 100 ? "the boat is named Orca" : `small talk ${index}` }));
    for (let start = 0; start < HISTORY; start += 2_000) await redis.rpush(key, ...entries.slice(start, start + 2_000));
    // The model pages back with `before` for as long as the tool says there is more.
    llm.setHandler((request) => {
      const last = request.body.messages.at(-1)!;
      if (last.role !== "tool") return { toolCalls: [{ name: "recall", arguments: { query: lastUserText(request) } }] };
      const result = textOf(last.content);
      toolResults.push(result);
      const before = /before (\d+)\]/.exec(result)?.[1];
      return before ? { toolCalls: [{ name: "recall", arguments: { query: lastUserText(request), before: Number(before) } }] } : { text: result };
    });
    pipeline = await startPipeline(config, [adapter]);
  });

  afterAll(async () => {
    await pipeline?.close();
    await llm?.close();
    redis?.disconnect();
  });

  it("reads one page per search, newest first, and stops the turn's searching at its budget", async () => {
    await adapter.submit(inbound({ text: "boat named", messageId: "r1" }));
    await adapter.waitFor((sent) => sent.length === 1, 60_000);
    const pages = SEARCH_TURN_BUDGET_ENTRIES / SEARCH_MAX_ENTRIES;
    expect(toolResults).toHaveLength(pages + 1);
    for (const [index, result] of toolResults.slice(0, pages).entries()) {
      expect(result).toBe(`Nothing in the transcript matches "boat named".\n[searched ${SEARCH_MAX_ENTRIES} messages back; older ones: recall with the same query and before ${HISTORY - (index + 1) * SEARCH_MAX_ENTRIES}]`);
    }
    // The fact sits further back than one turn may read.
    expect(toolResults[pages]).toMatch(/^Error: recall failed: this turn has read 10000 transcript messages already/);
  });

  it("finds it in a later turn, starting from where the earlier one stopped", async () => {
    toolResults.length = 0;
    llm.setHandler((request) => {
      const last = request.body.messages.at(-1)!;
      const before = last.role === "tool" ? /before (\d+)\]/.exec(textOf(last.content))?.[1] : String(HISTORY - SEARCH_TURN_BUDGET_ENTRIES);
      if (last.role === "tool") toolResults.push(textOf(last.content));
      return before ? { toolCalls: [{ name: "recall", arguments: { query: "boat named", before: Number(before) } }] } : { text: textOf(last.content) };
    });
    await adapter.submit(inbound({ text: "keep looking", messageId: "r2" }));
    await adapter.waitFor((sent) => sent.length === 2, 60_000);
    expect(toolResults).toHaveLength(2);
    expect(adapter.sent[1]?.reply.text).toBe("h100 (user): the boat is named Orca");
  });
});
