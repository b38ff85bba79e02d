import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../../config/index.js";
import { BudgetMeter } from "../../../src/budget/index.js";
import { createRedis } from "../../../src/queue/index.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { isSummarizerRequest } from "../../helpers/agent-fixtures.js";
import { forgetRewriter, isForgetRewrite } from "../../helpers/memory.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { writeConfigFile } from "../../helpers/config-file.js";

describe("budgets in turns", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("telegram");
  let count = 0;
  const say = async (text: string, userId = "1", chatId = "1") => {
    const expected = adapter.sent.length + 1;
    await adapter.submit(inbound({ platform: "telegram", chatId, sessionKey: `tg:${chatId}`, userId, userName: `user${userId}`, text, messageId: `b${++count}` }));
    await adapter.waitFor((sent) => sent.length >= expected);
    return adapter.sent[expected - 1]!.reply.text;
  };

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: "## Goal\nCount.", usage: { prompt_tokens: 100, completion_tokens: 10 } });
    // Every answer costs 10,000 tokens of the 100,000-token budget.
    llm.setHandler((request) => ({ text: `ok ${request.index}`, usage: { prompt_tokens: 9_900, completion_tokens: 100 } }));
    pipeline = await startPipeline(testConfig(testEnv({
      LLM_BASE_URL: llm.url,
      LLM_MAX_OUTPUT_TOKENS: "100",
      // So that /compress has a middle to fold however short the chat.
      PROTECT_LAST_N: "2",
      LONGHAUL_CONFIG_FILE: writeConfigFile("budgets:\n  chat: { daily: { tokens: 100000 } }\n"),
      ALLOWED_TELEGRAM_USERS: "1,2",
      ADMIN_TELEGRAM_USERS: "2",
    })), [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("warns at 50, 75 and 90% once each, then ends the turn before any call with the reset time", async () => {
    const warnings: string[] = [];
    let refusal: string | undefined;
    for (let turn = 1; turn <= 20 && refusal === undefined; turn++) {
      const reply = await say(`count ${turn}: ${"and some more words to count ".repeat(30)}`);
      if (/budget for this chat is used up/.test(reply)) refusal = reply;
      else warnings.push(...[...reply.matchAll(/^⚠️ (.*)$/gm)].map((match) => match[1]!));
    }
    expect(warnings).toEqual([
      "This chat has used 50% of today's budget.",
      "This chat has used 75% of today's budget.",
      "This chat has used 90% of today's budget.",
    ]);
    expect(refusal).toBe("Today's budget for this chat is used up; it resets at 00:00 UTC. Your message is saved.");
    const made = llm.requests.length;
    // Every answer was reserved before it was sent: none went over.
    expect(made * 10_000).toBeLessThanOrEqual(100_000);
    expect(await say("still there?")).toBe(refusal);
    expect(llm.requests).toHaveLength(made);
    expect(await say("/usage")).toMatch(new RegExp(`^Budget today for this chat: [\\d.]+K of 100K tokens used, [\\d.K]+ left \\(${made * 10}%\\); it resets at 00:00 UTC$`, "m"));
  });

  it("an exhausted budget blocks the summarizer too", async () => {
    const before = llm.requests.length;
    const reply = await say("/compress");
    expect(llm.requests).toHaveLength(before);
    expect(reply).toMatch(/couldn't compact/);
    expect(llm.requests.filter(isSummarizerRequest)).toHaveLength(0);
  });

  it("another chat has its own budget; /budget is for admins and raises the limit", async () => {
    expect(await say("hello", "1", "2")).toMatch(/^ok \d+$/);
    expect(await say("/budget here daily 20000 tokens")).toBe("Only an admin can see or change budgets; /usage shows yours.");
    expect(await say("/budget tg:1 daily 200k tokens", "2", "2")).toBe("The daily budget of chat tg:1 is now 200000 tokens.");
    expect(await say("/budget tg:1", "2", "2")).toMatch(/^Budget today for chat tg:1: [\d.]+K of 200K tokens used, [\d.]+K left \([45]\d%\); it resets at 00:00 UTC$/m);
    expect(await say("count 11")).toMatch(/^ok \d+$/);
    expect(await say("/budget tg:1 daily off", "2", "2")).toBe("No daily limit for chat tg:1 now.");
    expect(await say("/usage")).toMatch(/^Budgets: no limits set$/m);
  });
});

describe("a used-up budget and /forget", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let config: Config;
  const adapter = new RecordingAdapter("console");
  const DM = { chatId: "dm-cy", sessionKey: "console:dm-cy", chatType: "private" as const, userId: "cy", userName: "Cy" };
  let count = 0;
  const say = (text: string) => adapter.ask(inbound({ ...DM, text, messageId: `f${++count}` }));

  beforeAll(async () => {
    llm = await startFakeLlm();
    llm.route(isForgetRewrite, forgetRewriter);
    llm.route(isSummarizerRequest, { text: "## Goal\nPlan the trip.\n## Critical Context\nThe code word is PAPAYA." });
    config = testConfig(testEnv({
      LLM_BASE_URL: llm.url,
      PROTECT_LAST_N: "2",
      LONGHAUL_CONFIG_FILE: writeConfigFile("budgets:\n  chat: { daily: { tokens: 100000000 } }\n"),
    }));
    pipeline = await startPipeline(config, [adapter]);
  });
  afterAll(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("the summary's rewrite is a paid call of the chat: refused before it reaches the model", async () => {
    for (let turn = 1; turn <= 4; turn++) await say(`note ${turn}: ${"we talk about trains and the coast ".repeat(40)}`);
    expect(await say("/compress")).toMatch(/^Compacted: /);
    // An admin's limit the chat has already passed (as `/budget console:dm-cy daily 1 tokens` writes it).
    const redis = createRedis(config.REDIS_URL!);
    try {
      await new BudgetMeter(redis, config.REDIS_PREFIX, undefined).setLimit("chat", DM.sessionKey, "daily", "tokens", 1);
    } finally {
      redis.disconnect();
    }
    const reply = await say("/forget papaya");
    expect(reply).toMatch(/^Forgot "papaya":/);
    expect(llm.requests.filter(isForgetRewrite)).toHaveLength(0);
  });
});
