/**
 * Store before confirm (issue #10 item 3), as an operator would break it: a polling gateway
 * whose submits hang on a frozen Redis (SIGSTOP) is killed with SIGKILL. The updates it had
 * fetched were never confirmed to Telegram, so the restarted gateway gets them again, and each
 * is answered exactly once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { testEnv, TEST_TELEGRAM_TOKEN } from "../helpers/config.js";
import { startRedisServer, type RedisServerHandle } from "../helpers/redis-server.js";
import { ADA, DM, GRACE, sleep, textOf, waitUntil } from "../helpers/telegram-pipeline.js";
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";

const LINUS = { id: 6222333444, is_bot: false as const, first_name: "Linus" };
let redis: RedisServerHandle | undefined;
let telegram: FakeTelegram | undefined;
let llm: FakeLlm | undefined;
const apps: AppProcess[] = [];

afterEach(async () => {
  const pid = redis?.pid();
  if (pid !== undefined) process.kill(pid, "SIGCONT");
  for (const app of apps.splice(0)) await app.kill("SIGKILL");
  await telegram?.close();
  await llm?.close();
  await redis?.dispose();
});

describe("telegram polling gateway killed while submits hang on a frozen Redis", () => {
  it("answers every update exactly once after the restart", { timeout: 180_000 }, async () => {
    redis = await startRedisServer({ appendOnly: true });
    telegram = await FakeTelegram.start({ token: TEST_TELEGRAM_TOKEN });
    llm = await startFakeLlm();
    const env = testEnv({
      REDIS_URL: redis.url,
      LLM_BASE_URL: llm.url,
      TELEGRAM_BOT_TOKEN: TEST_TELEGRAM_TOKEN,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      ALLOWED_TELEGRAM_USERS: `${ADA.id},${GRACE.id},${LINUS.id}`,
      LOG_LEVEL: "info",
    });
    const start = () => {
      const app = spawnApp(env);
      apps.push(app);
      return app;
    };
    const first = start();
    await first.waitForStderr(/telegram long polling started/);
    const fake = telegram;
    fake.pushMessage({ chat: DM, from: ADA, text: "warm up" });
    await fake.waitForCall("sendMessage", (call) => textOf(call) === "echo: warm up", 30_000);

    // Redis freezes; the gateway fetches three updates and its submits hang.
    const pid = redis.pid() as number;
    process.kill(pid, "SIGSTOP");
    // Three people write at once (one message each, so each gets one answer).
    const chats = [DM, { id: GRACE.id, type: "private" as const, first_name: "Grace" }, { id: LINUS.id, type: "private" as const, first_name: "Linus" }];
    const pushed = [
      fake.pushMessage({ chat: DM, from: ADA, text: "one" }),
      fake.pushMessage({ chat: chats[1] as (typeof chats)[1], from: GRACE, text: "two" }),
      fake.pushMessage({ chat: chats[2] as (typeof chats)[2], from: LINUS, text: "three" }),
    ];
    const lastId = (pushed[2]?.update_id ?? 0);
    // The gateway has them in hand; give it time to try storing them (and, with the runner's
    // early confirmation, to fetch again past them).
    await waitUntil(() => fake.fetchedUpTo >= lastId, "the gateway to fetch the three updates").catch((error: unknown) => { console.log(first.stderr().slice(-3000), fake.calls.slice(-5).map((c) => [c.method, JSON.stringify(c.payload).slice(0, 100)])); throw error; });
    await sleep(2000);
    expect(fake.confirmedOffset).toBeLessThanOrEqual(pushed[0]?.update_id ?? 0);

    first.child.kill("SIGKILL");
    await first.exited();
    process.kill(pid, "SIGCONT");

    const second = start();
    for (const [text, chat] of [["one", DM.id], ["two", GRACE.id], ["three", LINUS.id]] as const) {
      await fake.waitForCall("sendMessage", (call) => textOf(call) === `echo: ${text}` && String(call.payload.chat_id) === String(chat), 60_000).catch((error: unknown) => {
        console.log(second.stderr().slice(-4000));
        throw error;
      });
    }
    await waitUntil(() => fake.confirmedOffset > lastId, "the restarted gateway to confirm the batch");
    await sleep(1500);
    const answers = fake.delivered().map(textOf);
    for (const text of ["warm up", "one", "two", "three"]) expect(answers.filter((answer) => answer === `echo: ${text}`)).toHaveLength(1);
  });
});
