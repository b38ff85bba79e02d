/**
 * /compress and idle compaction offer the chat's own tools, as its turns do (issue #31 item 3):
 * a chat granted an MCP server (server-everything over stdio, its tools granted to one user)
 * gets the same compaction threshold as its turn, and the memory flush before the fold carries
 * the turn's `tools` (the provider's cached prefix: tools first, then the system prompt).
 * Main requests report no usage, so the calibration stays put and the turn's threshold and the
 * compaction's are comparable to the token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, type FakeLlm, type RecordedRequest } from "../../fakes/fake-llm.js";
import { isFlushRequest, isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { testConfig } from "../../helpers/config.js";
import { idleChat, IDLE_SUMMARY, idleJobOf, privateChat, waitUntil } from "../../helpers/idle-compaction.js";
import { EVERYTHING, writeConfigFile } from "../../helpers/mcp.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { RecordingAdapter } from "../../helpers/recording-adapter.js";
import { warmUpTokenizer } from "../../helpers/telegram-pipeline.js";
import { createIdleQueue, createRedis, type IdleQueue, type Redis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import type { SessionState } from "../../../src/session/state.js";

const toolNames = (request: RecordedRequest | undefined) => ((request?.body.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name);
const isMain = (request: RecordedRequest) => !isSummarizerRequest(request) && !isFlushRequest(request);
const lastThreshold = (state: SessionState) => state.engine.lastThreshold as number | undefined;

describe("compaction outside a turn offers the chat's tools", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let redis: Redis;
  let store: SessionStore;
  let idle: IdleQueue;
  const adapter = new RecordingAdapter("console");

  beforeAll(async () => {
    warmUpTokenizer();
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: IDLE_SUMMARY });
    llm.setHandler((request) => (isFlushRequest(request) ? { text: "NO_REPLY" } : { text: "ok", usage: null }));
    // The server is granted to the users ada and cy only: a compaction without a speaker must
    // know whom the chat's turns chose their tools for.
    const file = writeConfigFile({
      mcp: { servers: { every: { command: process.execPath, args: [EVERYTHING, "stdio"], timeout_ms: 60_000 } } },
      access: { tools: { users: { "console:ada": ["every"], "console:cy": ["every"] } } },
    });
    const config = testConfig({ LLM_BASE_URL: llm.url, LONGHAUL_CONFIG_FILE: file, LLM_CONTEXT_WINDOW: "16000", LLM_MAX_OUTPUT_TOKENS: "1024", CACHE_TTL_S: "1" });
    pipeline = await startPipeline(config, [adapter]);
    redis = createRedis(config.REDIS_URL!);
    store = new SessionStore(redis, config.REDIS_PREFIX);
    idle = createIdleQueue(redis, config.REDIS_PREFIX);
  });
  afterAll(async () => {
    await pipeline.close();
    await idle.close();
    redis.disconnect();
    await llm.close();
  });

  it("/compress: the threshold is the turn's, and the memory flush carries the turn's tools", async () => {
    const where = privateChat("ada");
    const { say } = idleChat(adapter, idle, where);
    for (let turn = 1; turn <= 3; turn++) await say(`note ${turn}: ${"we talk about trains and the coast ".repeat(20)}`);
    const turnRequest = llm.requests.filter(isMain).at(-1)!;
    expect(toolNames(turnRequest)).toContain("every__echo");
    const before = await store.load(where.sessionKey);
    const turnThreshold = lastThreshold(before)!;
    const requestsBefore = llm.requests.length;

    expect(await say("/compress")).toMatch(/^Compacted: /);
    const after = await store.load(where.sessionKey);
    expect(after.stats.compactions).toBe(1);
    expect(lastThreshold(after)).toBe(turnThreshold);
    const flush = llm.requests.slice(requestsBefore).find(isFlushRequest);
    expect(flush).toBeDefined();
    expect(flush!.body.tools).toEqual(turnRequest.body.tools);
  }, 120_000);

  it("idle compaction: the mark and threshold are the turn's, and the memory flush carries the turn's tools", async () => {
    // The same talk without the server (bo has no grant): the tools count toward the mark as
    // they do toward the threshold, so the chat with them is past it sooner.
    const bo = privateChat("bo");
    const plain = idleChat(adapter, idle, bo);
    await plain.say("hello");
    const turnsWithout = await plain.talkPastMark();
    // Its idle compaction (and flush) done before the next chat's.
    await waitUntil(async () => (await store.load(bo.sessionKey)).stats.compactions === 1, 30_000, "bo's idle compaction");
    const where = privateChat("cy");
    const { say, talkPastMark } = idleChat(adapter, idle, where);
    await say("hello");
    const turnsWith = await talkPastMark();
    expect(turnsWith).toBeLessThan(turnsWithout);
    const turnRequest = llm.requests.filter(isMain).at(-1)!;
    expect(toolNames(turnRequest)).toContain("every__echo");
    const before = await store.load(where.sessionKey);
    const turnThreshold = lastThreshold(before)!;
    const requestsBefore = llm.requests.length;
    expect(await idleJobOf(idle, where.sessionKey)).toBeDefined();

    await waitUntil(async () => (await store.load(where.sessionKey)).stats.compactions === 1, 30_000, "the idle compaction's commit");
    const flush = llm.requests.slice(requestsBefore).find(isFlushRequest);
    expect(flush).toBeDefined();
    expect(flush!.body.tools).toEqual(turnRequest.body.tools);
    const after = await store.load(where.sessionKey);
    expect(lastThreshold(after)).toBe(turnThreshold);
    expect(after.live.some((message) => message.kind === "summary")).toBe(true);
  }, 180_000);
});
