import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { loadConfig, type Config } from "../../config/index.js";

/** A unique key prefix per test, so tests share one redis-server without seeing each other. */
export const uniquePrefix = (label = "t") => `${label}${randomBytes(4).toString("hex")}`;

export const TEST_API_KEY = "sk-test-SECRET-api-key-0123456789";
export const TEST_TELEGRAM_TOKEN = "123456:TEST-telegram-SECRET-token";

/** The environment a test app runs with; override what the test is about. */
export function testEnv(overrides: Record<string, string | undefined> = {}): Record<string, string> {
  const env: Record<string, string | undefined> = {
    REDIS_URL: inject("redisUrl"),
    REDIS_PREFIX: uniquePrefix(),
    LLM_API_KEY: TEST_API_KEY,
    LLM_MODEL: "gpt-4o-mini",
    LLM_TIMEOUT_MS: "5000",
    LLM_MAX_RETRIES: "2",
    HTTP_PORT: "0",
    LOG_LEVEL: "silent",
    JOB_LOCK_MS: "3000",
    CONSOLE: "off",
    RATE_LIMIT_PER_MINUTE: "0",
    // Live previews add messages and edits; the streaming tests turn them on (test/integration/streaming).
    STREAMING: "off",
    // The streaming tests watch previews of quick fake turns; the delay has tests of its own.
    STREAMING_DELAY_MS: "0",
    // Never the files `npm run setup` writes into a checkout (a real bot token in .env would
    // start a real Telegram adapter): an empty configuration file and no secrets file.
    LONGHAUL_CONFIG_FILE: "/dev/null",
    LONGHAUL_ENV_FILE: "/dev/null",
    ...overrides,
  };
  return Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

export const testConfig = (overrides: Record<string, string | undefined> = {}): Config => loadConfig(testEnv(overrides));
