/**
 * `npm start` (the app as a child process) on a first run that cannot work: it stops at once,
 * says what to set, and touches nothing on the way out.
 */
import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { EXIT_CODES } from "../../src/doctor/check.js";
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { TEST_TELEGRAM_TOKEN, testEnv } from "../helpers/config.js";

/** A TCP listener that only counts who connects: "Redis" for a process that must not get that far. */
async function connectionCounter(): Promise<{ url: string; connections: () => number; close(): Promise<void> }> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return { url: `redis://127.0.0.1:${port}`, connections: () => connections, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

describe("start-up that cannot work", () => {
  let app: AppProcess | undefined;
  afterEach(async () => {
    await app?.kill("SIGKILL");
  });

  it("without any LLM settings: exits 2 before contacting anything, with the OpenAI and Ollama examples", async () => {
    const redis = await connectionCounter();
    try {
      app = spawnApp(testEnv({ REDIS_URL: redis.url, LLM_API_KEY: undefined, CONSOLE: "auto" }));
      app.child.stdin.end();
      expect(await app.exited()).toBe(EXIT_CODES.config);
      const stderr = app.stderr();
      expect(stderr).toMatch(/^longhaul: no LLM configured: LLM_BASE_URL is OpenAI's \(the default\) and neither LLM_API_KEY nor OPENAI_API_KEY is set\./);
      expect(stderr).toContain("OpenAI:  LLM_API_KEY=sk-... LLM_MODEL=gpt-4o-mini npm start");
      expect(stderr).toContain("Ollama:  LLM_BASE_URL=http://127.0.0.1:11434/v1 LLM_MODEL=llama3.1");
      expect(stderr).not.toMatch(/\n\s+at /); // guidance, not a stack trace
      expect(app.stdout()).toBe("");
      // "At once": it never got as far as Redis (nor, before that, the model).
      expect(redis.connections()).toBe(0);
    } finally {
      await redis.close();
    }
  });

  it("with a Telegram token the Bot API rejects: exits 5 with the one-line fix, before polling", async () => {
    const telegram = await FakeTelegram.start();
    try {
      app = spawnApp(testEnv({ TELEGRAM_BOT_TOKEN: TEST_TELEGRAM_TOKEN, TELEGRAM_API_ROOT: telegram.apiRoot, LONGHAUL_ROLE: "gateway" }));
      expect(await app.exited()).toBe(EXIT_CODES.platform);
      expect(app.stderr().trim()).toBe("longhaul: FAIL  platform  telegram: the Bot API rejected TELEGRAM_BOT_TOKEN (401 Unauthorized) → fix: copy the token again from @BotFather (/mybots → API Token) into TELEGRAM_BOT_TOKEN");
      expect(telegram.callsOf("getUpdates")).toHaveLength(0);
    } finally {
      await telegram.close();
    }
  });
});
