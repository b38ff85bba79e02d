/**
 * `npm run setup` in a real terminal (a tmux pseudo-terminal), against the fake LLM and the fake
 * Telegram: the key and the token are typed without an echo, a wrong key is refused with the
 * provider's own words and asked again, the token is checked, the operator's first message is
 * approved in place (the gateway's pairing code, approved through src/operator) and they are
 * told in their chat, the files are written (.env mode 600), and a second run that only
 * presses Enter keeps every value and the hand-written lines.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { loadConfig, withSecretsFile } from "../../config/index.js";
import { globalKeys } from "../../src/session/keys.js";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { uniquePrefix } from "../helpers/config.js";
import { startInTerminal, type TerminalSession } from "../helpers/tmux.js";

const KEY = "sk-typed-RIGHT-key-0123456789";
const WRONG_KEY = "sk-typed-WRONG-key-987654321";
const OPERATOR = { id: 4242, first_name: "Ada", is_bot: false };

describe("npm run setup in a terminal", () => {
  let llm: FakeLlm;
  let telegram: FakeTelegram;
  let dir: string;
  let redis: Redis;
  let terminal: TerminalSession | undefined;

  beforeEach(async () => {
    llm = await startFakeLlm({ apiKey: KEY });
    telegram = await FakeTelegram.start();
    dir = mkdtempSync(join(tmpdir(), "longhaul-setup-tty-"));
    redis = new Redis(inject("redisUrl"));
  });
  afterEach(async () => {
    terminal?.close();
    await Promise.all([llm.close(), telegram.close()]);
    redis.disconnect();
    rmSync(dir, { recursive: true, force: true });
  });

  it("asks, checks, pairs the operator in place, writes the files; a second run keeps them", async () => {
    const files = { config: join(dir, "longhaul.yaml"), env: join(dir, ".env") };
    const prefix = uniquePrefix("setup");
    const env = {
      LONGHAUL_CONFIG_FILE: files.config, LONGHAUL_ENV_FILE: files.env, TELEGRAM_API_ROOT: telegram.apiRoot,
      REDIS_URL: inject("redisUrl"), REDIS_PREFIX: prefix, DATA_DIR: join(dir, "data"),
    };
    terminal = startInTerminal(env, { entry: "src/cli/setup.ts" });
    const tty = terminal;
    const waitFor = (text: string | RegExp) => tty.waitForScreen((screen) => (typeof text === "string" ? screen.includes(text) : text.test(screen)), String(text));

    await waitFor("Which model provider?");
    // The last entry, "Another OpenAI-compatible URL": the list wraps around.
    tty.sendKeys("Up");
    await waitFor(/❯ Another OpenAI-compatible URL/);
    tty.sendKeys("Enter");
    await waitFor("Base URL of its OpenAI-compatible API");
    tty.type(llm.url);
    tty.sendKeys("Enter");
    await waitFor("Which dialect does it speak?");
    tty.sendKeys("Enter");
    await waitFor("Model");
    tty.type("gpt-4o-mini");
    tty.sendKeys("Enter");

    await waitFor("API key");
    tty.type(WRONG_KEY);
    tty.sendKeys("Enter");
    let screen = await waitFor("What now?");
    expect(screen).toMatch(/FAIL +llm +main model: gpt-4o-mini at [\d.:]+: key rejected \(.*Incorrect API key provided/);
    tty.sendKeys("Enter");
    await tty.waitForScreen((text) => /^\? API key/m.test(text.split("✔ What now?")[1] ?? ""), "the key asked again");
    tty.type(KEY);
    // Inquirer's reveal key is off for secrets.
    tty.sendKeys("C-t");
    expect(tty.screen()).not.toContain("toggle visibility");
    tty.sendKeys("Enter");
    await waitFor(/ok +llm +main model: gpt-4o-mini at [\d.:]+ completed a token/);

    await waitFor("Connect a Telegram bot?");
    tty.type("y");
    tty.sendKeys("Enter");
    await waitFor("Telegram bot token");
    tty.type(telegram.token);
    tty.sendKeys("Enter");
    await waitFor(`ok    telegram  token valid for @${telegram.bot.username} (id ${telegram.bot.id})`);
    await waitFor("Connect a Discord bot?");
    tty.sendKeys("Enter");

    await waitFor("Pair your own account now");
    tty.sendKeys("Enter");
    await waitFor("Waiting for your message");
    telegram.pushMessage({ chat: { id: OPERATOR.id, type: "private", first_name: "Ada" }, from: OPERATOR, text: "hello from me" });
    await waitFor(`(telegram user ${OPERATOR.id}) wrote "hello from me". Is this you?`);
    // The gateway's own pairing notice reached the chat, with its code.
    await tty.waitForScreen(() => telegram.delivered(OPERATOR.id).some((call) => /Your pairing code is [A-Z2-9]{8}/.test(call.visible?.text ?? "")), "the pairing notice in the chat");
    tty.sendKeys("Enter");
    await waitFor(`approved Ada (telegram user ${OPERATOR.id})`);
    expect(await redis.sismember(globalKeys(prefix).approvedUsers("telegram"), String(OPERATOR.id))).toBe(1);
    await tty.waitForScreen(() => telegram.delivered(OPERATOR.id).some((call) => call.visible?.text.includes("You're paired")), "the confirmation in the chat");
    await waitFor("Make Ada an admin");
    tty.sendKeys("Enter");
    await waitFor("Done. Next: npm run doctor");
    await tty.waitForScreen(() => tty.exitStatus() !== undefined, "setup to exit");
    expect(tty.exitStatus()).toBe(0);

    // Never echoed: not the key, not the wrong one, not the token.
    screen = tty.screen();
    for (const secret of [KEY, WRONG_KEY, telegram.token]) expect(screen).not.toContain(secret);
    expect(statSync(files.env).mode & 0o777).toBe(0o600);
    const config = loadConfig(withSecretsFile({ LONGHAUL_CONFIG_FILE: files.config, LONGHAUL_ENV_FILE: files.env }));
    expect(config).toMatchObject({ LLM_BASE_URL: llm.url, LLM_MODEL: "gpt-4o-mini", LLM_API_KEY: KEY, TELEGRAM_BOT_TOKEN: telegram.token, ADMIN_TELEGRAM_USERS: [String(OPERATOR.id)] });
    for (const secret of [KEY, telegram.token]) expect(readFileSync(files.config, "utf8")).not.toContain(secret);
    // The approval was logged with who made it (the operator's login), never the code.
    const log = readFileSync(join(dir, "data", "logs", "setup.log"), "utf8");
    expect(log).toMatch(/"operator":"cli:[^"]+","action":"pairing-approve","found":true/);
    expect(log).not.toContain(telegram.token);
    terminal.close();

    // Again, pressing Enter at every question: everything stays, hand edits too.
    writeFileSync(files.config, `${readFileSync(files.config, "utf8")}# my own note\nTZ: Europe/Berlin\n`);
    terminal = startInTerminal(env, { entry: "src/cli/setup.ts" });
    const again = terminal;
    const step = async (text: string | RegExp) => {
      await again.waitForScreen((screen) => (typeof text === "string" ? screen.includes(text) : text.test(screen)), String(text));
      again.sendKeys("Enter");
    };
    await step("Which model provider?");
    await step("Base URL of its OpenAI-compatible API");
    await step("Which dialect does it speak?");
    await step(/Model.*gpt-4o-mini/);
    await step("Enter keeps the one in .env");
    await again.waitForScreen((text) => /ok +llm +main model/.test(text), "the model check");
    await step("Check the Telegram bot token in .env");
    await step(/Telegram bot token .*Enter keeps the one in \.env/);
    await again.waitForScreen((text) => text.includes("ok    telegram  token valid"), "the token check");
    await step("Connect a Discord bot?");
    await again.waitForScreen((text) => text.includes("Pair your own account now"), "the pairing question");
    again.type("n");
    again.sendKeys("Enter");
    await again.waitForScreen(() => again.exitStatus() !== undefined, "setup to exit");
    expect(again.exitStatus()).toBe(0);
    expect(loadConfig(withSecretsFile({ LONGHAUL_CONFIG_FILE: files.config, LONGHAUL_ENV_FILE: files.env }))).toMatchObject({
      LLM_BASE_URL: llm.url, LLM_MODEL: "gpt-4o-mini", LLM_API_KEY: KEY, TELEGRAM_BOT_TOKEN: telegram.token, ADMIN_TELEGRAM_USERS: [String(OPERATOR.id)], TZ: "Europe/Berlin",
    });
    expect(readFileSync(files.config, "utf8")).toContain("# my own note");
    expect(statSync(files.env).mode & 0o777).toBe(0o600);
    expect(again.screen()).not.toContain(KEY);
  });
});
