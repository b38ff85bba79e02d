/**
 * Shutdown order in one process (role all): intake, then the workers' hand-back, then delivery.
 * A reply stuck behind a platform's retry-after must not hold up the hand-back clock of a
 * hanging turn: otherwise the two waits add up past SHUTDOWN_TIMEOUT_MS and the process is
 * killed by its own hard-exit timer.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/fake-telegram.js";
import { lastUserText, startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { testEnv } from "../helpers/config.js";
import { sleep } from "../helpers/stall-run.js";

const TOKEN = "123456789:SHUTDOWN-order-token";
const ALICE = 5_100_000_001;
const BOB = 5_100_000_002;

describe("shutdown order", () => {
  let telegram: FakeTelegram | undefined;
  let llm: FakeLlm | undefined;
  let app: AppProcess | undefined;
  afterEach(async () => {
    await app?.kill("SIGKILL");
    await telegram?.close();
    await llm?.close();
  });

  it("hands a hanging turn back while a delivery waits out a retry-after, and exits in time", async () => {
    telegram = await FakeTelegram.start({ token: TOKEN });
    llm = await startFakeLlm();
    const held = llm.hold();
    llm.setHandler((request) => ({ text: `answer to ${lastUserText(request)}` }));
    app = spawnApp(testEnv({
      LLM_BASE_URL: llm.url, TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_API_ROOT: telegram.apiRoot,
      ALLOWED_TELEGRAM_USERS: `${ALICE},${BOB}`, SHUTDOWN_TIMEOUT_MS: "8000", LOG_LEVEL: "info",
    }));
    await app.waitForStderr(/longhaul-ready/);

    // Alice's reply meets a 6 s retry-after: the delivery waits inside the send.
    telegram.failNext("sendMessage", { error_code: 429, description: "Too Many Requests: retry after 6", parameters: { retry_after: 6 } });
    telegram.pushMessage({ chat: { id: ALICE, type: "private", first_name: "Alice" }, text: "hello" });
    await llm.waitForRequests(1);
    held.release();
    await telegram.waitForCall("sendMessage", () => true, 30_000);
    // Bob's turn hangs on the model.
    llm.hold();
    telegram.pushMessage({ chat: { id: BOB, type: "private", first_name: "Bob" }, text: "are you there?" });
    await llm.waitForRequests(2, 30_000);
    await sleep(200);

    // Hand-back at 4 s runs while the delivery finishes (6 s); one after the other would take 10 s.
    expect(await app.kill("SIGTERM")).toBe(0);
    expect(app.stderr()).toContain("handing-back-running-turns");
    expect(app.stderr()).not.toContain("shutdown-timed-out");
    // And Alice's reply did go out: the call refused with 429, then the one that went through.
    const toAlice = telegram.callsOf("sendMessage").filter((call) => Number(call.payload.chat_id) === ALICE);
    expect(toAlice.map((call) => call.payload.text)).toEqual(["answer to hello", "answer to hello"]);
  }, 90_000);
});
