/**
 * /compress and idle compaction offer the chat's own tools, as its turns do (issue #31 item 3):
 * a chat granted an MCP server (server-everything over stdio, its tools granted to one user)
 * gets the same compaction threshold as its turn, and the memory flush before the fold carries
 * the turn's `tools` (the provider's cached prefix: tools first, then the system prompt).
 * /status measures the context and the threshold with the same tools; when they do not come in
 * time (a server that never answers) it counts the built-ins and says so.
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
import { getTokenCounter, REPLY_PRIMING_TOKENS } from "../../../src/context/index.js";
import type { ToolDefinition } from "../../../src/core/messages.js";

const toolNames = (request: RecordedRequest | undefined) => ((request?.body.tools ?? []) as Array<{ function: { name: string } }>).map((tool) => tool.function.name);
const isMain = (request: RecordedRequest) => !isSummarizerRequest(request) && !isFlushRequest(request);
const lastThreshold = (state: SessionState) => state.engine.lastThreshold as number | undefined;
/** /status's exact figures: "Compacts at: 9,049 tokens (now 5,012, …)". */
const statusFigures = (text: string) => {
  const match = /^Compacts at: ([\d,]+) tokens \(now ([\d,]+), (.*)\)$/m.exec(text);
  if (!match) throw new Error(`no threshold line in /status:\n${text}`);
  return { threshold: Number(match[1]!.replaceAll(",", "")), tokens: Number(match[2]!.replaceAll(",", "")), counted: match[3]! };
};

describe("compaction outside a turn offers the chat's tools", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let redis: Redis;
  let store: SessionStore;
  let idle: IdleQueue;
  let config: ReturnType<typeof testConfig>;
  const adapter = new RecordingAdapter("console");

  beforeAll(async () => {
    warmUpTokenizer();
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: IDLE_SUMMARY });
    llm.setHandler((request) => (isFlushRequest(request) ? { text: "NO_REPLY" } : { text: "ok", usage: null }));
    // The server is granted to the users ada, cy and eve only: a compaction without a speaker must
    // know whom the chat's turns chose their tools for. `stuck` never answers (dee's alone).
    const file = writeConfigFile({
      mcp: {
        servers: {
          every: { command: process.execPath, args: [EVERYTHING, "stdio"], timeout_ms: 60_000 },
          stuck: { command: process.execPath, args: ["-e", "setInterval(() => {}, 60_000)"], connect_timeout_ms: 10_000 },
        },
      },
      access: { tools: { users: { "console:ada": ["every"], "console:cy": ["every"], "console:eve": ["every"], "console:dee": ["stuck"] } } },
    });
    config = testConfig({ LLM_BASE_URL: llm.url, LONGHAUL_CONFIG_FILE: file, LLM_CONTEXT_WINDOW: "16000", LLM_MAX_OUTPUT_TOKENS: "1024", CACHE_TTL_S: "1" });
    pipeline = await startPipeline(config, [adapter]);
    redis = createRedis(config.REDIS_URL!);
    store = new SessionStore(redis, config.REDIS_PREFIX);
    idle = createIdleQueue(redis, config.REDIS_PREFIX);
  });
  // Closing waits for the stuck server's connect to give up (its connect_timeout_ms).
  afterAll(async () => {
    await pipeline.close();
    await idle.close();
    redis.disconnect();
    await llm.close();
  }, 60_000);

  it("/status: the context and the threshold are measured with the turn's tools", async () => {
    const where = privateChat("eve");
    const { say } = idleChat(adapter, idle, where);
    for (let turn = 1; turn <= 2; turn++) await say(`note ${turn}: ${"we talk about trains and the coast ".repeat(20)}`);
    const turnRequest = llm.requests.filter(isMain).at(-1)!;
    expect(toolNames(turnRequest)).toContain("every__echo");
    const state = await store.load(where.sessionKey);

    const shown = statusFigures(await say("/status"));
    // The threshold the turn's in-loop check judged its context by, with the turn's tools.
    expect(shown.threshold).toBe(lastThreshold(state));
    // The next request's measure: its messages and the tools the turn's request carried (main
    // requests report no usage, so the calibration ratio is 1 and the estimate is the measure).
    const counter = getTokenCounter(config.LLM_MODEL);
    const tools = turnRequest.body.tools as ToolDefinition[];
    const expected = REPLY_PRIMING_TOKENS + state.live.reduce((sum, message) => sum + counter.countMessage(message), 0) + counter.countTools(tools);
    expect(shown.tokens).toBe(expected);
    expect(shown.counted).toBe(`with the ${tools.length} tools your turns here get`);
  }, 120_000);

  it("/status answers with the built-ins when the chat's tools do not come in time", async () => {
    // fay has no grant: the built-ins. dee's server never answers its connect.
    const plain = await idleChat(adapter, idle, privateChat("fay")).say("/status");
    const stuck = await idleChat(adapter, idle, privateChat("dee")).say("/status", 30_000);
    expect(statusFigures(stuck).counted).toBe("with the built-in tools only: this chat's other tools could not be listed in time");
    expect(statusFigures(stuck).tokens).toBe(statusFigures(plain).tokens);
    expect(statusFigures(stuck).threshold).toBe(statusFigures(plain).threshold);
    expect(stuck.match(/^Context: .*$/m)![0]).toBe(plain.match(/^Context: .*$/m)![0]);
  }, 60_000);

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
