/**
 * `npm run setup -- --yes …` as a script runs it: the key and tokens come from variables the
 * flags name, the model is tested with one completion against the fake LLM (which refuses a
 * wrong key as OpenAI does), the tokens are checked against the fake Telegram and Discord, and
 * the files are written (secrets in .env, mode 600). A second run with no flags keeps them.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig, withSecretsFile } from "../../../config/index.js";
import { FAKE_TOKEN as DISCORD_TOKEN } from "../../fakes/fake-discord-world.js";
import { FakeDiscord } from "../../fakes/fake-discord.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { FakeTelegram } from "../../fakes/fake-telegram.js";
import { spawnApp } from "../../helpers/app-process.js";

const KEY = "sk-setup-RIGHT-key-0123456789";

describe("setup without questions (--yes)", () => {
  let llm: FakeLlm;
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  let dir: string;
  let files: { config: string; env: string };

  beforeEach(async () => {
    llm = await startFakeLlm({ apiKey: KEY });
    telegram = await FakeTelegram.start();
    discord = await FakeDiscord.start();
    dir = mkdtempSync(join(tmpdir(), "longhaul-setup-"));
    files = { config: join(dir, "config", "longhaul.yaml"), env: join(dir, ".env") };
  });
  afterEach(async () => {
    await Promise.all([llm.close(), telegram.close(), discord.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  const setup = async (args: string[], env: Record<string, string> = {}) => {
    const app = spawnApp({ TELEGRAM_API_ROOT: telegram.apiRoot, DISCORD_API_ROOT: discord.apiRoot, ...env }, {
      entry: "src/cli/setup.ts",
      args: ["--yes", "--config-file", files.config, "--secrets-file", files.env, "--timeout-ms", "10000", ...args],
    });
    const code = await app.exited();
    return { code, stdout: app.stdout(), stderr: app.stderr() };
  };

  it("writes the settings and the secrets apart, and a second run keeps them", async () => {
    const first = await setup(
      ["--provider", "custom", "--base-url", llm.url, "--model", "gpt-4o-mini", "--api-key-env", "MY_KEY", "--telegram-token-env", "MY_TG", "--discord-token-env", "MY_DC"],
      { MY_KEY: KEY, MY_TG: telegram.token, MY_DC: DISCORD_TOKEN },
    );
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^ok +llm +main model: gpt-4o-mini at 127\.0\.0\.1:\d+ completed a token/m);
    expect(first.stdout).toMatch(/^ok +telegram +token valid for @\w+ \(id \d+\)/m);
    expect(first.stdout).toMatch(/^ok +discord +token valid for longhaul/m);
    // One real completion, with the key.
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]!.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(telegram.calls.map((call) => call.method)).toContain("getMe");

    expect(statSync(files.env).mode & 0o777).toBe(0o600);
    const envText = readFileSync(files.env, "utf8");
    expect(envText).toContain(`LLM_API_KEY=${KEY}`);
    expect(envText).toContain(`TELEGRAM_BOT_TOKEN=${telegram.token}`);
    expect(envText).toContain(`DISCORD_BOT_TOKEN=${DISCORD_TOKEN}`);
    const yaml = readFileSync(files.config, "utf8");
    for (const secret of [KEY, telegram.token, DISCORD_TOKEN]) {
      expect(yaml).not.toContain(secret);
      expect(first.stdout).not.toContain(secret);
    }
    const config = loadConfig(withSecretsFile({ LONGHAUL_CONFIG_FILE: files.config, LONGHAUL_ENV_FILE: files.env }));
    expect(config).toMatchObject({ LLM_BASE_URL: llm.url, LLM_MODEL: "gpt-4o-mini", LLM_API_KEY: KEY, TELEGRAM_BOT_TOKEN: telegram.token, DISCORD_BOT_TOKEN: DISCORD_TOKEN });

    // Hand edits survive a re-run, which asks nothing and changes nothing else.
    writeFileSync(files.config, `${yaml}# my own note\nTZ: Europe/Berlin\n`);
    writeFileSync(files.env, `${envText}MY_OWN_SECRET=keep-me\n`);
    const second = await setup([]);
    expect(second.stderr).toBe("");
    expect(second.code).toBe(0);
    expect(second.stdout).toContain("Enter keeps each current value");
    const after = loadConfig(withSecretsFile({ LONGHAUL_CONFIG_FILE: files.config, LONGHAUL_ENV_FILE: files.env }));
    expect(after).toMatchObject({ LLM_BASE_URL: llm.url, LLM_MODEL: "gpt-4o-mini", LLM_API_KEY: KEY, TELEGRAM_BOT_TOKEN: telegram.token, DISCORD_BOT_TOKEN: DISCORD_TOKEN, TZ: "Europe/Berlin" });
    expect(readFileSync(files.config, "utf8")).toContain("# my own note");
    expect(readFileSync(files.env, "utf8")).toContain("MY_OWN_SECRET=keep-me");
    expect(statSync(files.env).mode & 0o777).toBe(0o600);
    expect(llm.requests).toHaveLength(2);
  });

  it("refuses a wrong key with the provider's words and writes nothing", async () => {
    const result = await setup(["--provider", "custom", "--base-url", llm.url, "--model", "gpt-4o-mini", "--api-key-env", "MY_KEY", "--no-telegram", "--no-discord"], { MY_KEY: "sk-WRONG-key-999999" });
    expect(result.code).toBe(4);
    expect(result.stdout).toMatch(/^FAIL +llm +main model: gpt-4o-mini at [\d.:]+: key rejected \(.*Incorrect API key provided/m);
    expect(result.stderr).toContain("setup: the model check failed");
    expect(`${result.stdout}${result.stderr}`).not.toContain("sk-WRONG-key-999999");
    expect(existsSync(files.env)).toBe(false);
    expect(existsSync(files.config)).toBe(false);
  });

  it("refuses a wrong bot token with the platform's answer", async () => {
    const result = await setup(["--provider", "custom", "--base-url", llm.url, "--model", "gpt-4o-mini", "--api-key-env", "MY_KEY", "--telegram-token-env", "MY_TG", "--no-discord"], { MY_KEY: KEY, MY_TG: "999:wrong-token" });
    expect(result.code).toBe(5);
    expect(result.stdout).toMatch(/^FAIL +telegram +Telegram refused the token \(401 Unauthorized\)/m);
    expect(existsSync(files.env)).toBe(false);
  });

  it("offers the model a local server lists, and writes no key for a server that takes none", async () => {
    const open = await startFakeLlm({ models: ["Qwen/Qwen2.5-7B-Instruct"] });
    try {
      const result = await setup(["--provider", "vllm", "--base-url", open.url, "--context-window", "32768", "--no-telegram", "--no-discord"]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(open.requests[0]!.body.model).toBe("Qwen/Qwen2.5-7B-Instruct");
      const config = loadConfig(withSecretsFile({ LONGHAUL_CONFIG_FILE: files.config, LONGHAUL_ENV_FILE: files.env }));
      expect(config).toMatchObject({ LLM_PROVIDER: "vllm", LLM_BASE_URL: open.url, LLM_MODEL: "Qwen/Qwen2.5-7B-Instruct", LLM_CONTEXT_WINDOW: 32768 });
      expect(config.LLM_API_KEY).toBeUndefined();
    } finally {
      await open.close();
    }
  });

  it("names the flag a question without a default needs", async () => {
    const result = await setup(["--provider", "vllm", "--no-telegram", "--no-discord"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("pass --model");
  });
});
