/**
 * longhaul as real processes (one per role) against the fake Bot API and the fake LLM, for the
 * tests that kill or pause a process. `close` kills every process started (SIGKILL) and stops
 * the fakes.
 */
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "./app-process.js";
import { testEnv, TEST_TELEGRAM_TOKEN } from "./config.js";
import { ADA } from "./telegram-pipeline.js";

export interface TelegramApps {
  telegram: FakeTelegram;
  llm: FakeLlm;
  /** Starts one process of `role` (Ada is allowed; logs at info, for the tests' waits); `env` overrides (a REDIS_URL through a proxy). */
  start(role: "gateway" | "worker", env?: Record<string, string>): AppProcess;
  close(): Promise<void>;
}

export async function startTelegramApps(env: Record<string, string> = {}): Promise<TelegramApps> {
  const telegram = await FakeTelegram.start({ token: TEST_TELEGRAM_TOKEN });
  const llm = await startFakeLlm();
  const apps: AppProcess[] = [];
  const appEnv = testEnv({
    LLM_BASE_URL: llm.url,
    TELEGRAM_BOT_TOKEN: TEST_TELEGRAM_TOKEN,
    TELEGRAM_API_ROOT: telegram.apiRoot,
    ALLOWED_TELEGRAM_USERS: String(ADA.id),
    LOG_LEVEL: "info",
    ...env,
  });
  return {
    telegram,
    llm,
    start(role, env = {}) {
      const app = spawnApp({ ...appEnv, ...env, LONGHAUL_ROLE: role });
      apps.push(app);
      return app;
    },
    async close() {
      for (const app of apps.splice(0)) await app.kill("SIGKILL");
      await telegram.close();
      await llm.close();
    },
  };
}
