/**
 * The web console in a real browser (issue 34 item 4): Debian's Chromium driven by
 * playwright-core, against the app's pipeline with its fakes (the Telegram adapter on the fake
 * Bot API, a console-platform adapter whose sends of one reply fail, the fake LLM). A wrong
 * token is refused; after login a session that compacted twice shows both compactions on its
 * plot (drawn by uPlot); a stranger's pairing request is approved by clicking, and the stranger
 * is then answered on the fake platform; a dead letter is shown and retried. A screenshot of
 * each page is kept under test-artifacts/console/ (gitignored).
 *
 * Needs /usr/bin/chromium (`apt-get install chromium`; .ci/run installs it). Where no browser
 * exists the file is skipped, saying so.
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser, type Page } from "playwright-core";
import { createTelegramAdapter } from "../../src/adapters/telegram/index.js";
import { listDeadLetters } from "../../src/session/dead-letters.js";
import { createRedis } from "../../src/queue/index.js";
import { loadConfig, type Config } from "../../config/index.js";
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { lastUserText, startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { isSummarizerRequest } from "../helpers/agent-fixtures.js";
import { TEST_TELEGRAM_TOKEN, testEnv } from "../helpers/config.js";
import { captureLogs, startPipeline, type LogCapture, type Pipeline } from "../helpers/pipeline.js";
import { inbound } from "../helpers/recording-adapter.js";
import { ADA, textOf, waitUntil, warmUpTokenizer } from "../helpers/telegram-pipeline.js";
import { CONSOLE_TOKEN, FlakyAdapter, startConsoleServer, type ConsoleServer } from "../helpers/web-console.js";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const browserFound = existsSync(CHROMIUM);
if (!browserFound) console.warn(`web-console-browser.test.ts skipped: no browser at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`);

const ARTIFACTS = join(process.cwd(), "test-artifacts", "console");
const EVE = { id: 900200, is_bot: false as const, first_name: "Eve" };
const EVE_DM = { id: EVE.id, type: "private" as const, first_name: "Eve" };

describe.skipIf(!browserFound)("web console in a real browser", () => {
  let telegram: FakeTelegram;
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let server: ConsoleServer;
  let browser: Browser;
  let page: Page;
  let logs: LogCapture;
  let config: Config;
  const flaky = new FlakyAdapter();
  const pageErrors: string[] = [];
  let count = 0;
  const say = (text: string) => flaky.ask(inbound({ text, messageId: `bw${++count}`, userName: "Ada" }));
  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  beforeAll(async () => {
    warmUpTokenizer();
    mkdirSync(ARTIFACTS, { recursive: true });
    telegram = await FakeTelegram.start({ token: TEST_TELEGRAM_TOKEN });
    llm = await startFakeLlm();
    llm.route(isSummarizerRequest, { text: "## Goal\nPlan the coastal train trip.", usage: { prompt_tokens: 600, completion_tokens: 60 } });
    llm.setHandler((request) => ({ text: `echo: ${lastUserText(request).slice(0, 40)}`, usage: { prompt_tokens: 1_200 + request.index * 150, completion_tokens: 40, prompt_tokens_details: { cached_tokens: 800 } } }));
    config = loadConfig(testEnv({
      LLM_BASE_URL: llm.url, TELEGRAM_BOT_TOKEN: TEST_TELEGRAM_TOKEN, TELEGRAM_API_ROOT: telegram.apiRoot,
      ALLOWED_TELEGRAM_USERS: String(ADA.id), PROTECT_LAST_N: "2", DELIVERY_MAX_ATTEMPTS: "2", LLM_CONTEXT_WINDOW: "16000",
      LLM_PRICE_INPUT: "2", LLM_PRICE_CACHED_INPUT: "0.5", LLM_PRICE_OUTPUT: "8",
    }));
    logs = captureLogs("info");
    const adapter = createTelegramAdapter(config, logs.logger, { pollingTimeoutSeconds: 1 });
    if (!adapter) throw new Error("no Telegram adapter");
    pipeline = await startPipeline(config, [adapter, flaky], { logs });
    server = await startConsoleServer(config, logs.logger, () => pipeline.gateway.health());
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("pageerror", (error) => pageErrors.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") pageErrors.push(message.text());
    });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await pipeline?.close();
    await telegram?.close();
    await llm?.close();
    expect(logs.lines.join("")).not.toContain(CONSOLE_TOKEN);
  });

  it("refuses a wrong token, then logs in with the right one", async () => {
    await page.goto(`${server.base}/console`);
    expect(page.url()).toBe(`${server.base}/console/login`);
    await page.getByLabel("Console token").fill("not-the-console-token-at-all");
    const [refused] = await Promise.all([page.waitForResponse((response) => response.url().endsWith("/console/login") && response.request().method() === "POST"), page.getByRole("button", { name: "Log in" }).click()]);
    expect(refused.status()).toBe(401);
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("That token is not right.");
    await shot("login-refused");
    await page.getByLabel("Console token").fill(CONSOLE_TOKEN);
    await page.getByLabel("Console token").press("Enter");
    await page.waitForURL(`${server.base}/console/sessions`);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Sessions");
    // Keyboard: the first Tab reaches the skip link, which moves focus to the content.
    await page.keyboard.press("Tab");
    expect(await page.evaluate("document.activeElement && document.activeElement.textContent")).toBe("Skip to content");
    await page.keyboard.press("Enter");
    expect(await page.evaluate("document.activeElement && document.activeElement.id")).toBe("main");
  });

  it("shows a session that compacted twice, both compactions marked on its plot", async () => {
    for (let turn = 1; turn <= 3; turn++) await say(`note ${turn}: ${"we plan the coastal train trip and the stops ".repeat(30)}`);
    await say("/pin the train leaves at 07:40");
    expect(await say("/compress")).toMatch(/^Compacted: /);
    for (let turn = 4; turn <= 6; turn++) await say(`note ${turn}: ${"then the ferry to the island and back ".repeat(30)}`);
    expect(await say("/compress")).toMatch(/^Compacted: /);
    await say("and the hotel?");

    // The listing is reused for 5 seconds: reload until it holds the session.
    const row = page.getByRole("row").filter({ hasText: "console:chat-1" });
    await expect.poll(async () => {
      await page.goto(`${server.base}/console/sessions?sort=compactions&dir=desc`);
      return row.count();
    }, { timeout: 15_000, interval: 1_000 }).toBe(1);
    expect(await row.getByRole("cell").nth(4).textContent()).toMatch(/^\s*2\s*$/);
    await shot("sessions");
    await row.getByRole("link", { name: "console:chat-1" }).click();
    await page.waitForURL(/\/console\/sessions\/console%3Achat-1$/);
    const marks = page.locator("#timeline-plot .compaction-mark");
    await expect.poll(() => marks.count()).toBe(2);
    expect(await marks.evaluateAll((elements) => elements.map((element) => element.getAttribute("data-kind")))).toEqual(["manual", "manual"]);
    expect(await marks.first().textContent()).toMatch(/^manual −\d+$/);
    // The marks sit at different turns, inside the plot.
    const lefts = await marks.evaluateAll((elements) => elements.map((element) => (element as unknown as { offsetLeft: number }).offsetLeft));
    expect(lefts[0]).toBeGreaterThan(0);
    expect(lefts[1]).toBeGreaterThan(lefts[0]!);
    expect(await page.locator("#timeline-plot canvas").count()).toBe(1);
    expect(await page.locator("#cost-plot canvas").count()).toBe(1);
    expect(await page.getByRole("list").filter({ hasText: "summarizer" }).locator("li").count()).toBe(2);
    expect(await page.textContent("main")).toContain("the train leaves at 07:40");
    expect(await page.textContent("main")).toContain("Plan the coastal train trip.");
    await shot("timeline");

    await page.getByRole("link", { name: "Usage" }).click();
    await page.waitForURL(`${server.base}/console/usage`);
    expect(await page.locator("figure.bars").count()).toBeGreaterThanOrEqual(5);
    await shot("usage");
  });

  it("approves a stranger's pairing request by clicking, and the stranger is answered on the fake platform", async () => {
    telegram.pushMessage({ chat: EVE_DM, from: EVE, text: "hi, may I talk to you?" });
    await waitUntil(() => telegram.delivered(EVE.id).length === 1, "the pairing code");
    expect(textOf(telegram.delivered(EVE.id)[0])).toMatch(/pairing code is [A-Z0-9]{8}/);
    await page.goto(`${server.base}/console/operations`);
    await shot("operations-pairing");
    await page.getByRole("button", { name: `Approve Eve (telegram user ${EVE.id})` }).click();
    await page.waitForURL(/\/console\/operations\?notice=/);
    expect(await page.getByRole("status").textContent()).toContain(`Approved Eve (telegram user ${EVE.id})`);
    expect(await page.textContent("main")).toContain("No pending pairing requests.");

    telegram.pushMessage({ chat: EVE_DM, from: EVE, text: "can we talk now?" });
    await waitUntil(() => telegram.delivered(EVE.id).length === 2, "an answer to Eve");
    expect(textOf(telegram.delivered(EVE.id)[1])).toBe("echo: can we talk now?");
  });

  it("shows a dead letter with its error and retries it", async () => {
    await flaky.submit(inbound({ text: "doomed answer please", chatId: "chat-dl", messageId: "bw-dl" }));
    await flaky.waitFor((sent) => sent.some((entry) => entry.reply.text.includes("could not be delivered")), 60_000);
    await page.goto(`${server.base}/console/operations`);
    const row = page.getByRole("row").filter({ hasText: "console:chat-dl" });
    expect(await row.textContent()).toContain("echo: doomed answer please");
    expect(await row.textContent()).toContain("Cannot read properties of undefined");
    await shot("operations-dead-letter");
    flaky.repaired = true;
    await row.getByRole("button", { name: /^Retry dead letter/ }).click();
    await page.waitForURL(/\/console\/operations\?notice=/);
    expect(await page.getByRole("status").textContent()).toMatch(/is back in its outbox/);
    await flaky.waitFor((sent) => sent.some((entry) => entry.reply.text === "echo: doomed answer please"), 30_000);
    await page.reload();
    expect(await page.textContent("main")).toContain("No dead letters.");
    const redis = createRedis(config.REDIS_URL!);
    try {
      expect(await listDeadLetters(redis, config.REDIS_PREFIX)).toEqual([]);
    } finally {
      redis.disconnect();
    }
    await shot("operations");
    // No script error and no CSP refusal on any page.
    expect(pageErrors.filter((text) => !/status of 401/.test(text)), pageErrors.join("\n")).toEqual([]);
  });
});
