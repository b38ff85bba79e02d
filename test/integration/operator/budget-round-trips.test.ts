/**
 * What the budget costs on the path a user waits on (issue #18): where no limit applies, a call's
 * settle is sent and not waited for (the turn's commit goes out before its answer came back), and
 * its usage is still counted exactly by the time the reply is delivered, as Redis runs it before
 * the commit; with a limit, the settle is waited for, so its warning reaches the reply.
 */
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import { BudgetMeter, unlimited } from "../../../src/budget/index.js";
import { CONNECTION_NAMES, createRedis, type Redis } from "../../../src/queue/index.js";
import { RESERVE, SETTLE } from "../../../src/budget/scripts.js";
import { END_TURN } from "../../../src/session/scripts.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { writeConfigFile } from "../../helpers/config-file.js";
import { testConfig, testEnv, uniquePrefix } from "../../helpers/config.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { countRoundTrips, runs, traceNamedConnections } from "../../helpers/round-trips.js";

describe("the budget on a turn's path", () => {
  let llm: FakeLlm | undefined;
  let pipeline: Pipeline | undefined;
  const connections: Redis[] = [];
  let trace: ReturnType<typeof traceNamedConnections> | undefined;
  afterEach(async () => {
    trace?.restore();
    await pipeline?.close();
    await llm?.close();
    for (const connection of connections.splice(0)) connection.disconnect();
    pipeline = llm = trace = undefined;
  });

  /** A console chat on the whole pipeline whose every answer costs 1,000 + 10 tokens; `budgets` is the config file's section. */
  const startChat = async (budgets?: string) => {
    trace = traceNamedConnections([CONNECTION_NAMES.worker]);
    llm = await startFakeLlm();
    llm.setHandler((request) => ({ text: `answer ${request.index}`, usage: { prompt_tokens: 1_000, completion_tokens: 10 } }));
    const adapter = new RecordingAdapter("console");
    // Output is reserved at its whole max_tokens: small, so that a call fits a small budget.
    const config = testConfig(testEnv({ LLM_BASE_URL: llm.url, LLM_MAX_OUTPUT_TOKENS: "100", ...(budgets ? { LONGHAUL_CONFIG_FILE: writeConfigFile(budgets) } : {}) }));
    pipeline = await startPipeline(config, [adapter]);
    const redis = createRedis(config.REDIS_URL!);
    connections.push(redis);
    let turn = 0;
    const ask = () => adapter.ask(inbound({ text: `question ${++turn}`, messageId: `q${turn}` }));
    return { ask, meter: new BudgetMeter(redis, config.REDIS_PREFIX, undefined), sessionKey: inbound({ text: "" }).sessionKey };
  };

  /** The worker's commands of the last turn: its call's settle and its commit. */
  const settleAndCommit = () => {
    const worker = trace!.sent(CONNECTION_NAMES.worker);
    const settle = worker.findIndex((entry) => runs(entry, SETTLE));
    const commit = worker.findIndex((entry) => runs(entry, END_TURN));
    const report = JSON.stringify(worker.map((entry) => [entry.name, entry.args[0]?.slice(0, 8), entry.sentBefore, entry.answeredBefore, entry.sentBeforeAnswer]));
    expect(settle, report).toBeGreaterThanOrEqual(0);
    expect(commit, report).toBeGreaterThan(settle);
    return { settle: worker[settle]!, commit: worker[commit]!, report };
  };

  it("without limits no reserve is sent, the commit goes out before the settle's answer, and the usage is counted when the reply arrives", async () => {
    const { ask, meter, sessionKey } = await startChat();
    // The first turn's reserve finds no limit for the chat and the user: the worker learns it.
    await ask();
    await ask();
    trace!.reset();
    expect(await ask()).toBe("answer 2");
    const { settle, commit, report } = settleAndCommit();
    expect(trace!.sent(CONNECTION_NAMES.worker).filter((entry) => runs(entry, RESERVE)), report).toEqual([]);
    // Sent before the settle's answer came back: the turn did not wait for it.
    expect(settle.sentBeforeAnswer, report).toBeGreaterThan(commit.sentBefore);
    // Redis ran the settle before the commit, so every call is counted by the time the reply is here.
    const [daily] = await meter.status({ chat: sessionKey });
    expect(daily!.used.tokens).toBe(3 * 1_010);
  });

  it("with a limit the settle is waited for, and its warning reaches the reply", async () => {
    const { ask, meter, sessionKey } = await startChat("budgets:\n  chat: { daily: { tokens: 3000 } }\n");
    expect(await ask()).toBe("answer 0");
    trace!.reset();
    // 2,020 of 3,000 tokens: past 50%.
    expect(await ask()).toBe("⚠️ This chat has used 50% of today's budget.\n\nanswer 1");
    const { settle, commit, report } = settleAndCommit();
    expect(trace!.sent(CONNECTION_NAMES.worker).filter((entry) => runs(entry, RESERVE)), report).toHaveLength(1);
    expect(settle.sentBeforeAnswer, report).toBeLessThanOrEqual(commit.sentBefore);
    const [daily] = await meter.status({ chat: sessionKey });
    expect(daily!.used.tokens).toBe(2 * 1_010);
  });

  it("a limit an admin sets with /budget while the worker knows the chat has none refuses the chat's next turn", async () => {
    trace = traceNamedConnections([CONNECTION_NAMES.worker]);
    llm = await startFakeLlm();
    llm.setHandler((request) => ({ text: `answer ${request.index}`, usage: { prompt_tokens: 1_000, completion_tokens: 10 } }));
    const adapter = new RecordingAdapter("telegram");
    pipeline = await startPipeline(testConfig(testEnv({ LLM_BASE_URL: llm.url, ALLOWED_TELEGRAM_USERS: "1,2", ADMIN_TELEGRAM_USERS: "2" })), [adapter]);
    let count = 0;
    const say = (text: string, userId: string, chatId: string) =>
      adapter.ask(inbound({ platform: "telegram", chatId, sessionKey: `tg:${chatId}`, userId, userName: `user${userId}`, text, messageId: `l${++count}` }));
    await say("hello", "1", "1");
    trace.reset();
    expect(await say("again", "1", "1")).toBe("answer 1");
    // Warm: that turn's call was not reserved.
    expect(trace.sent(CONNECTION_NAMES.worker).filter((entry) => runs(entry, RESERVE))).toEqual([]);
    expect(await say("/budget tg:1 daily 1 tokens", "2", "2")).toBe("The daily budget of chat tg:1 is now 1 tokens.");
    expect(await say("and now?", "1", "1")).toBe("Today's budget for this chat is used up; it resets at 00:00 UTC. Your message is saved.");
    expect(llm.requests).toHaveLength(2);
  });
});

describe("a settle nobody waits for", () => {
  it("logs its failure as a warning and throws nothing", async () => {
    const redis = createRedis(inject("redisUrl"));
    try {
      const logs = captureLogs("warn");
      const prefix = uniquePrefix("budget");
      const meter = new BudgetMeter(redis, prefix, undefined, Date.now, { logger: logs.logger });
      const accounts = { chat: "tg:1" };
      const reservation = await meter.reserve(accounts, { usd: 0.01, tokens: 10 });
      expect(unlimited(reservation)).toBe(true);
      // A counter that is not a hash: the settle's HINCRBY fails inside the script.
      await redis.set(reservation.slots[0]!.key, "not a hash");
      meter.settleUnawaited(reservation, { usd: 0.01, tokens: 10 });
      await vi.waitFor(() => expect(logs.lines.join("")).toMatch(/"msg":"budget-settle-failed"/));
      expect(logs.lines.join("")).toMatch(/WRONGTYPE/);
      // A failed call's zero sends nothing.
      const trips = countRoundTrips(redis);
      meter.settleUnawaited(reservation, { usd: 0, tokens: 0 });
      expect(trips.sent).toEqual([]);
      trips.restore();
    } finally {
      redis.disconnect();
    }
  });
});
