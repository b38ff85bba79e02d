/**
 * `npm run doctor` as an operator runs it (the CLI as a child process), against real Redis
 * servers and the fake LLM and Bot API: each problem is one line with its fix, and the exit code
 * names the group that failed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedis } from "../../src/queue/index.js";
import { EXIT_CODES, exitCodeOf } from "../../src/doctor/check.js";
import { runDoctor } from "../../src/doctor/doctor.js";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { spawnApp } from "../helpers/app-process.js";
import { TEST_API_KEY, TEST_TELEGRAM_TOKEN, testConfig, testEnv } from "../helpers/config.js";
import { freePort, startRedisServer, type RedisServerHandle } from "../helpers/redis-server.js";
import { closeAfterTest } from "../helpers/close-after-test.js";

async function doctor(env: Record<string, string>): Promise<{ code: number | null; lines: string[]; output: string }> {
  const cli = spawnApp(env, { entry: "src/cli/doctor.ts" });
  const code = await cli.exited();
  const output = cli.stdout() + cli.stderr();
  return { code, lines: cli.stdout().split("\n").filter((line) => /^(ok|WARN|FAIL|skip) /.test(line)), output };
}

const failures = (lines: string[]) => lines.filter((line) => line.startsWith("FAIL"));
const warnings = (lines: string[]) => lines.filter((line) => line.startsWith("WARN"));

describe("npm run doctor", () => {
  let durable: RedisServerHandle;

  beforeAll(async () => {
    durable = await startRedisServer({ appendOnly: true });
  });
  afterAll(async () => {
    await durable.dispose();
  });

  it("passes everything, exit 0, against a durable Redis and a working model", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const { code, lines } = await doctor(testEnv({ REDIS_URL: durable.url, LLM_BASE_URL: llm.url }));
    expect(failures(lines)).toEqual([]);
    expect(warnings(lines)).toEqual([]);
    expect(lines.join("\n")).toMatch(/^ok {4}redis .*fsync on every write/m);
    expect(lines.join("\n")).toMatch(/^ok {4}llm .*gpt-4o-mini .*completed a token/m);
    expect(code).toBe(EXIT_CODES.ok);
    // It really asked the model for one token, with the configured key.
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]?.body.max_tokens).toBe(1);
    expect(llm.requests[0]?.headers.authorization).toBe(`Bearer ${TEST_API_KEY}`);
  });

  it("no Redis: one FAIL line with the fix, exit 3", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const port = await freePort();
    const { code, lines } = await doctor(testEnv({ REDIS_URL: `redis://127.0.0.1:${port}`, LLM_BASE_URL: llm.url }));
    expect(failures(lines)).toEqual([
      `FAIL  redis     Redis at 127.0.0.1:${port} is unreachable (connection refused) → fix: start Redis there, or point REDIS_URL at a running Redis`,
    ]);
    expect(code).toBe(EXIT_CODES.redis);
  });

  it("a Redis without AOF: a warning that acknowledged messages can be lost, with the fix, exit 1", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    // The suite's shared Redis runs without AOF and without snapshots.
    const { code, lines } = await doctor(testEnv({ LLM_BASE_URL: llm.url }));
    expect(failures(lines)).toEqual([]);
    expect(warnings(lines)).toHaveLength(1);
    expect(warnings(lines)[0]).toMatch(/^WARN  redis     no AOF and no RDB snapshots: a Redis crash or restart loses everything it held .* → fix: run Redis with --appendonly yes/);
    expect(code).toBe(EXIT_CODES.warnings);
  });

  it("a Redis that evicts keys or leaves fsync to the OS: one warning each", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const redis = await startRedisServer({ appendOnly: true });
    const admin = createRedis(redis.url, { maxRetriesPerRequest: 1 });
    try {
      await admin.config("SET", "maxmemory-policy", "allkeys-lru");
      await admin.config("SET", "maxmemory", "100mb");
      await admin.config("SET", "appendfsync", "no");
      const { code, lines } = await doctor(testEnv({ REDIS_URL: redis.url, LLM_BASE_URL: llm.url }));
      expect(warnings(lines)).toEqual([
        expect.stringMatching(/^WARN  redis     AOF on but appendfsync no: .* → fix: CONFIG SET appendfsync everysec/),
        expect.stringMatching(/^WARN  redis     maxmemory-policy allkeys-lru: at maxmemory \(100 MB\) Redis deletes keys .* → fix: CONFIG SET maxmemory-policy noeviction/),
      ]);
      expect(code).toBe(EXIT_CODES.warnings);
    } finally {
      admin.disconnect();
      await redis.dispose();
    }
  });

  it("a wrong LLM key (the server answers 401): one FAIL line naming the setting, never the key, exit 4", async () => {
    const llm = closeAfterTest(await startFakeLlm({ apiKey: "sk-the-right-key-000000" }));
    const { code, lines, output } = await doctor(testEnv({ REDIS_URL: durable.url, LLM_BASE_URL: llm.url }));
    expect(failures(lines)).toEqual([
      expect.stringMatching(/^FAIL  llm       main model: 127\.0\.0\.1:\d+ rejected the key \(401: Incorrect API key provided.*\) → fix: set LLM_API_KEY to a valid key for 127\.0\.0\.1:\d+$/),
    ]);
    expect(code).toBe(EXIT_CODES.llm);
    expect(output).not.toContain(TEST_API_KEY);
  });

  it("an unreachable LLM: one FAIL line with the fix, exit 4", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const port = await freePort();
    const { code, lines } = await doctor(testEnv({ REDIS_URL: durable.url, LLM_BASE_URL: `http://127.0.0.1:${port}/v1` }));
    expect(failures(lines)).toEqual([
      `FAIL  llm       main model: cannot reach 127.0.0.1:${port} (connection refused) → fix: start the model server, or set LLM_BASE_URL to a reachable OpenAI-compatible endpoint (Ollama: http://127.0.0.1:11434/v1)`,
    ]);
    expect(code).toBe(EXIT_CODES.llm);
  });

  it("checks a summarizer with its own endpoint the same way", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const port = await freePort();
    const { code, lines } = await doctor(testEnv({ REDIS_URL: durable.url, LLM_BASE_URL: llm.url, SUMMARY_BASE_URL: `http://127.0.0.1:${port}/v1` }));
    expect(failures(lines)).toEqual([expect.stringMatching(/^FAIL  llm       summarizer: cannot reach .* set SUMMARY_BASE_URL to a reachable/)]);
    expect(code).toBe(EXIT_CODES.llm);
  });

  it("a bad Telegram token (the Bot API answers 401): one FAIL line, never the token, exit 5", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const telegram = await FakeTelegram.start(); // accepts only its own token
    try {
      const { code, lines, output } = await doctor(testEnv({
        REDIS_URL: durable.url, LLM_BASE_URL: llm.url, TELEGRAM_BOT_TOKEN: TEST_TELEGRAM_TOKEN, TELEGRAM_API_ROOT: telegram.apiRoot,
      }));
      expect(failures(lines)).toEqual([
        "FAIL  platform  telegram: the Bot API rejected TELEGRAM_BOT_TOKEN (401 Unauthorized) → fix: copy the token again from @BotFather (/mybots → API Token) into TELEGRAM_BOT_TOKEN",
      ]);
      expect(code).toBe(EXIT_CODES.platform);
      expect(output).not.toContain(TEST_TELEGRAM_TOKEN);
    } finally {
      await telegram.close();
    }
  });

  it("a good Telegram token in polling mode with a webhook still set: the bot is named and the conflict warned", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const telegram = await FakeTelegram.start({ token: TEST_TELEGRAM_TOKEN });
    telegram.setWebhookElsewhere("https://elsewhere.example/hook/secret-path");
    try {
      const { lines, output } = await doctor(testEnv({ REDIS_URL: durable.url, LLM_BASE_URL: llm.url, TELEGRAM_BOT_TOKEN: TEST_TELEGRAM_TOKEN, TELEGRAM_API_ROOT: telegram.apiRoot }));
      expect(lines).toContain(`ok    platform  telegram: token valid for @${telegram.bot.username} (id ${telegram.bot.id})`);
      expect(warnings(lines)).toEqual([expect.stringMatching(/^WARN  platform  telegram: a webhook is set \(elsewhere\.example\) but longhaul is configured for long polling/)]);
      expect(output).not.toContain("secret-path");
    } finally {
      await telegram.close();
    }
  });

  it("a wrong setting: one FAIL line per variable, exit 2", async () => {
    const { code, lines } = await doctor(testEnv({ BUSY_MODE: "sometimes", COMPACTION_THRESHOLD: "1.7" }));
    expect(failures(lines)).toEqual([expect.stringMatching(/^FAIL  config    COMPACTION_THRESHOLD: /), expect.stringMatching(/^FAIL  config    BUSY_MODE: /)]);
    expect(code).toBe(EXIT_CODES.config);
  });

  it("no model configured: the config FAIL line and no model request, exit 2", async () => {
    const { code, lines } = await doctor(testEnv({ REDIS_URL: durable.url, LLM_API_KEY: undefined }));
    expect(failures(lines)).toEqual([expect.stringMatching(/^FAIL  config    no LLM configured: .* → fix: set LLM_API_KEY for OpenAI, or LLM_BASE_URL \+ LLM_MODEL/)]);
    expect(lines.some((line) => / llm /.test(line))).toBe(false);
    expect(code).toBe(EXIT_CODES.config);
  });
});

describe("doctor: whose Redis it is", () => {
  let foreign: RedisServerHandle;
  let llm: FakeLlm;

  beforeAll(async () => {
    foreign = await startRedisServer({ appendOnly: true });
    llm = await startFakeLlm();
    const other = createRedis(foreign.url, { maxRetriesPerRequest: 1 });
    await other.mset("sidekiq:queues", "x", "cache:home", "y");
    other.disconnect();
  });
  afterAll(async () => {
    await foreign.dispose();
    await llm.close();
  });

  // REDIS_URL unset: the Redis found listening on the default port (moved here to a private one).
  const implicitConfig = (prefix: string) => testConfig({ REDIS_URL: undefined, REDIS_PREFIX: prefix, LLM_BASE_URL: llm.url, DATA_DIR: "/nonexistent" });

  it("refuses a foreign non-empty Redis found on the default port: one FAIL line with both ways out, exit 3", async () => {
    const results = await runDoctor(implicitConfig("lh"), { redisLookup: { defaultPort: foreign.port } });
    const failed = results.filter((result) => result.status === "fail");
    expect(failed).toEqual([{
      group: "redis",
      status: "fail",
      detail: `Redis at 127.0.0.1:${foreign.port} holds 2 keys and no longhaul marker (lh:longhaul): it may be another app's`,
      fix: `to use it anyway set REDIS_URL=redis://127.0.0.1:${foreign.port} (and a REDIS_PREFIX of its own); or stop it, so longhaul runs its private Redis under DATA_DIR`,
    }]);
    expect(exitCodeOf(results)).toBe(EXIT_CODES.redis);
  });

  it("accepts the same Redis when REDIS_URL names it", async () => {
    const results = await runDoctor(testConfig({ REDIS_URL: foreign.url, REDIS_PREFIX: "lh", LLM_BASE_URL: llm.url }));
    expect(results.filter((result) => result.status === "fail")).toEqual([]);
    expect(results.find((result) => result.detail.includes("no longhaul marker"))?.detail).toMatch(/used because REDIS_URL names it/);
  });

  it("recognises its own Redis by the marker under its prefix", async () => {
    const admin = createRedis(foreign.url, { maxRetriesPerRequest: 1 });
    await admin.set("mine:longhaul", JSON.stringify({ app: "longhaul", markedAt: "2026-01-02T03:04:05.000Z" }));
    admin.disconnect();
    const results = await runDoctor(implicitConfig("mine"), { redisLookup: { defaultPort: foreign.port } });
    expect(results.filter((result) => result.status === "fail")).toEqual([]);
    expect(results.some((result) => result.detail.endsWith("is longhaul's (marker mine:longhaul, since 2026-01-02)"))).toBe(true);
  });
});
