/**
 * The turn history the web console plots (src/session/turn-history.ts): one entry per commit
 * that called a model or compacted, with the compactions marked, priced with the catalogue's
 * prices, and the day's usage ledger by chat, user and model.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../../config/index.js";
import type { ChatMessage, ToolDefinition } from "../../../src/context/index.js";
import { silentLogger } from "../../../src/logger.js";
import { createModelRouter } from "../../../src/models/router.js";
import { createRedis } from "../../../src/queue/index.js";
import { messageIdAllocator, newSessionState } from "../../../src/session/state.js";
import { readTurnHistory, readUsageLedger, turnHistoryKey } from "../../../src/session/turn-history.js";
import { createTurnRecorder } from "../../../workers/turn-history-recorder.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

describe("turn history", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let config: Config;
  const adapter = new RecordingAdapter("console");
  let count = 0;
  const say = (text: string) => adapter.ask(inbound({ text, messageId: `th${++count}`, userId: "ada", userName: "Ada" }));

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: "## Goal\nTalk about trains.", usage: { prompt_tokens: 500, completion_tokens: 40 } });
    llm.setHandler(() => ({ text: "noted", usage: { prompt_tokens: 1_000, completion_tokens: 50, prompt_tokens_details: { cached_tokens: 400 } } }));
    config = testConfig(testEnv({ LLM_BASE_URL: llm.url, PROTECT_LAST_N: "2", LLM_CONTEXT_WINDOW: "64000", LLM_PRICE_INPUT: "1", LLM_PRICE_CACHED_INPUT: "0.5", LLM_PRICE_OUTPUT: "2" }));
    pipeline = await startPipeline(config, [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("records each answered turn and each compaction with its kind, saving and summarizer; commands that call nothing add nothing", async () => {
    for (let turn = 1; turn <= 3; turn++) await say(`note ${turn}: ${"we talk about trains and the coast ".repeat(40)}`);
    expect(await say("/compress")).toMatch(/^Compacted: /);
    await say(`note 4: ${"and then about boats ".repeat(40)}`);
    await say(`note 5: ${"and then about harbours ".repeat(40)}`);
    expect(await say("/compress")).toMatch(/^Compacted: /);
    await say("/help");
    const redis = createRedis(config.REDIS_URL!);
    try {
      const history = await readTurnHistory(redis, config.REDIS_PREFIX, "console:chat-1");
      expect(history.map((entry) => entry.compactions.length)).toEqual([0, 0, 0, 1, 0, 0, 1]);
      const answered = history[0]!;
      expect(answered).toMatchObject({ kind: "turn", tokens: 1_000, prompt: 1_000, cached: 400, completion: 50, window: 64_000, model: config.LLM_MODEL, user: "console:ada", title: "Ada" });
      // The threshold after the fixed overhead (system prompt + built-in tools, under 2K): 32,000 + half of it.
      expect(answered.threshold).toBeGreaterThan(32_000);
      expect(answered.threshold).toBeLessThan(33_000);
      // (600 uncached × $1 + 400 cached × $0.5 + 50 out × $2) per million.
      expect(answered.usd).toBeCloseTo(0.0009, 10);
      const marks = [history[3]!, history[6]!].map((entry) => entry.compactions[0]!);
      for (const mark of marks) {
        expect(mark).toMatchObject({ reason: "manual", status: "compacted", summarizerModel: expect.any(String) as string });
        expect(mark.tokensBefore).toBeGreaterThan(mark.tokensAfter);
        expect(mark.folded).toBeGreaterThan(0);
        expect(mark.firstId).toMatch(/^m\d+$/);
      }
      expect(marks.map((mark) => mark.seq)).toEqual([1, 2]);
      expect(history[3]).toMatchObject({ prompt: 0, summarizerPrompt: 500, summarizerCompletion: 40 });

      const ledger = await readUsageLedger(redis, config.REDIS_PREFIX, new Date().toISOString().slice(0, 10));
      const chat = ledger.get("chat")?.get("console:chat-1");
      expect(chat?.usd).toBeCloseTo(history.reduce((sum, entry) => sum + entry.usd, 0), 10);
      expect(ledger.get("user")?.get("console:ada")?.tokens).toBe(chat?.tokens);
      expect(ledger.get("model")?.get(config.LLM_MODEL)?.tokens).toBe(chat?.tokens);
      expect(ledger.get("compactions")?.get("all")?.tokens).toBe(2);
      expect(await redis.ttl(turnHistoryKey(config.REDIS_PREFIX, "console:chat-1"))).toBe(-1);
    } finally {
      redis.disconnect();
    }
  });
});

describe("the timeline's threshold is the one the turn was judged by", () => {
  it("a chat with its own tools (an MCP server's, ~4K tokens) shows the threshold with them, not with the built-ins", async () => {
    const config = testConfig(testEnv({ LLM_CONTEXT_WINDOW: "32000" }));
    const builtins: ToolDefinition[] = [{ type: "function", function: { name: "time", description: "The current time.", parameters: { type: "object" } } }];
    const chatTools: ToolDefinition[] = [...builtins, {
      type: "function",
      function: { name: "docs__search", description: Array.from({ length: 1_500 }, (_, index) => `term${index}`).join(" "), parameters: { type: "object" } },
    }];
    const models = createModelRouter({ config, logger: silentLogger, tools: () => builtins });
    const { context } = models.bind(models.catalogue.active(undefined));
    const state = newSessionState(0);
    const live: ChatMessage[] = [{ id: "m1", role: "system", content: "You are helpful." }, { id: "m2", role: "user", content: "What is new in the docs?" }];
    state.live = live;
    const before = { sessionId: state.sessionId, stats: { ...state.stats } };
    // The turn's step: the engine checks its context with the chat's tools (nothing to compact).
    const scope = { signal: new AbortController().signal, log: silentLogger, newId: messageIdAllocator(state), addToTranscript: () => undefined, tools: chatTools };
    expect(await context.beforeStep(state, live, scope)).toBe(live);
    state.stats.promptTokens = 4_500;
    state.stats.lastPromptTokens = 4_500;

    const redis = createRedis(config.REDIS_URL!);
    try {
      const record = createTurnRecorder({ redis, prefix: config.REDIS_PREFIX, models, now: () => Date.now() });
      await record("console:mcp-chat", { version: 1, kind: "turn", before, after: state, batch: [] });
      const [entry] = await readTurnHistory(redis, config.REDIS_PREFIX, "console:mcp-chat");
      const withChatTools = context.thresholdTokens(state, live, chatTools);
      const withBuiltins = context.thresholdTokens(state, live);
      // Half of the MCP tool's ~4K tokens: the two differ by far more than rounding.
      expect(withChatTools - withBuiltins).toBeGreaterThan(1_000);
      expect(entry?.threshold).toBe(withChatTools);
    } finally {
      redis.disconnect();
    }
  });
});
