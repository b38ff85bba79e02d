/**
 * End-to-end Telegram harness: the real TelegramAdapter (grammY, runner, auto-retry) talking
 * HTTP to the fake Bot API, inside the real pipeline (gateway ingress and delivery, BullMQ on
 * the private redis-server, a worker) with the fake LLM behind it. Nothing in between is mocked.
 */
import { afterEach, beforeAll, expect } from "vitest";
import { configSecrets, loadConfig, type Config } from "../../config/index.js";
import { createTelegramAdapter, TELEGRAM_WEBHOOK_PATH, type TelegramAdapter, type TelegramAdapterOptions } from "../../src/adapters/telegram/index.js";
import { getTokenCounter } from "../../src/context/tokens.js";
import { startHttpServer, type RouteHandler } from "../../src/gateway/http-server.js";
import { FAKE_BOT, FakeTelegram, type RecordedCall } from "../fakes/fake-telegram.js";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { captureLogs, startPipeline, type LogCapture, type Pipeline } from "./pipeline.js";
import { TEST_API_KEY, TEST_TELEGRAM_TOKEN, testEnv } from "./config.js";

export { FAKE_BOT };

export const ADA = { id: 5012345678, is_bot: false as const, first_name: "Ada", last_name: "Lovelace" };
export const DM = { id: ADA.id, type: "private" as const, first_name: "Ada" };
export const GRACE = { id: 6111222333, is_bot: false as const, first_name: "Grace", last_name: "Hopper" };
export const GROUP = { id: -1001987654321, type: "supergroup" as const, title: "Compiler nerds" };
export const OTHER_GROUP = { id: -1005550001111, type: "supergroup" as const, title: "Not enabled" };
export const FORUM = { id: -1002233445566, type: "supergroup" as const, title: "Team HQ", is_forum: true as const };
export const BOT_FROM = { id: FAKE_BOT.id, is_bot: true as const, first_name: FAKE_BOT.first_name, username: FAKE_BOT.username };

/** Entities of a text that @mentions the bot. */
export const mentionOf = (text: string) => [{ type: "mention" as const, offset: text.indexOf(`@${FAKE_BOT.username}`), length: FAKE_BOT.username.length + 1 }];

export const textOf = (call: RecordedCall | undefined): string => String(call?.payload.text ?? "");
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The first turn in a process builds the tokenizer: about 1.5 s of blocked event loop alone,
 * over 10 s when test files share the CPUs, which also costs the worker its 3 s job lock. The
 * e2e files build it once up front (beforeAll), so the first test's turn is as quick as the rest.
 */
export function warmUpTokenizer(model = "gpt-4o-mini"): void {
  getTokenCounter(model).countText("warm up");
}

/** Generous by default: these files share two CPUs with other test files. */
export async function waitUntil(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

export interface TelegramE2e {
  env: Record<string, string>;
  config: Config;
  telegram: FakeTelegram;
  llm: FakeLlm;
  pipeline: Pipeline;
  adapter: TelegramAdapter;
  logs: LogCapture;
  /** The gateway's HTTP server in webhook mode: the webhook URL. */
  webhookUrl?: string;
  /** sendMessage calls one chat received (Telegram accepted them), in order. */
  sentTo(chatId: number): RecordedCall[];
  /** Waits until `count` sendMessage calls reached `chatId`; returns them. */
  waitForSent(chatId: number, count: number, timeoutMs?: number): Promise<RecordedCall[]>;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Environment on top of testEnv (ALLOWED_TELEGRAM_USERS defaults to Ada); a function gets the fake LLM's URL. */
  env?: Record<string, string | undefined> | ((llmUrl: string) => Record<string, string | undefined>);
  adapter?: Partial<TelegramAdapterOptions>;
  /** Webhook mode: serve the gateway's routes on a real HTTP server with this secret. */
  webhookSecret?: string;
  /** Log as production does: every secret of the configuration masked (configSecrets). Default: nothing masked, so a test sees any leak. */
  maskLogs?: boolean;
}

export async function startTelegramE2e(options: StartOptions = {}): Promise<TelegramE2e> {
  const telegram = await FakeTelegram.start({ token: TEST_TELEGRAM_TOKEN });
  const llm = await startFakeLlm();
  // The routes are read per request, so the server can listen (and the webhook URL be known)
  // before the adapter starts and calls setWebhook.
  const routes = new Map<string, RouteHandler>();
  const extraEnv = typeof options.env === "function" ? options.env(llm.url) : options.env;
  const logs = captureLogs("trace", options.maskLogs ? configSecrets(loadConfig(testEnv({ ...extraEnv }))) : []);
  const http = options.webhookSecret === undefined ? undefined : await startHttpServer({ port: 0, host: "127.0.0.1", routes, logger: logs.logger });
  const webhookUrl = http ? `http://127.0.0.1:${http.port}${TELEGRAM_WEBHOOK_PATH}` : undefined;
  const env = testEnv({
    LLM_BASE_URL: llm.url,
    TELEGRAM_BOT_TOKEN: TEST_TELEGRAM_TOKEN,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    ALLOWED_TELEGRAM_USERS: String(ADA.id),
    ...(webhookUrl ? { TELEGRAM_WEBHOOK_URL: webhookUrl, TELEGRAM_WEBHOOK_SECRET: options.webhookSecret } : {}),
    ...extraEnv,
  });
  const config = loadConfig(env);
  const adapter = createTelegramAdapter(config, logs.logger, { pollingTimeoutSeconds: 1, ...options.adapter });
  if (!adapter) throw new Error("TELEGRAM_BOT_TOKEN is set, yet no adapter was built");
  let pipeline: Pipeline;
  try {
    pipeline = await startPipeline(config, [adapter], { logs });
  } catch (error) {
    await adapter.stop();
    await http?.close();
    await telegram.close();
    await llm.close();
    throw error;
  }
  for (const [path, handler] of pipeline.gateway.routes) routes.set(path, handler);

  const sentTo = (chatId: number) => telegram.delivered(chatId);
  let closing: Promise<void> | undefined;
  return {
    env, config, telegram, llm, pipeline, adapter, logs,
    ...(webhookUrl ? { webhookUrl } : {}),
    sentTo,
    async waitForSent(chatId, count, timeoutMs = 30_000) {
      await waitUntil(() => sentTo(chatId).length >= count, `${count} sendMessage calls to ${chatId} (so far: ${JSON.stringify(sentTo(chatId).map((call) => textOf(call).slice(0, 60)))})`, timeoutMs);
      return sentTo(chatId);
    },
    close() {
      closing ??= (async () => {
        await pipeline.close();
        await http?.close();
        await telegram.close();
        await llm.close();
      })();
      return closing;
    },
  };
}

/** Secrets that must never reach a log line or an output stream. */
export const SECRETS = [TEST_TELEGRAM_TOKEN, TEST_TELEGRAM_TOKEN.split(":")[1] ?? "", TEST_API_KEY];

/** Closes a run (after each test); whatever happened, no log line (trace level, nothing masked) carried a secret. */
export async function closeChecked(run: TelegramE2e | undefined): Promise<void> {
  const logs = run?.logs.lines.join("") ?? "";
  await run?.close();
  for (const secret of SECRETS) expect(logs).not.toContain(secret);
}

/**
 * For a test file: warms the tokenizer once, and → a `startTelegramE2e` whose run is closed
 * after the test with `closeChecked` (no secret in any log line).
 */
export function useTelegramE2e(): (options?: StartOptions) => Promise<TelegramE2e> {
  let run: TelegramE2e | undefined;
  beforeAll(() => warmUpTokenizer());
  afterEach(async () => {
    await closeChecked(run);
    run = undefined;
  });
  return async (options) => (run = await startTelegramE2e(options));
}
