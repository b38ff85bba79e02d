/**
 * A Telegram preview create past its deadline (docs/streaming.md, issue 28 item 5), through
 * grammY and the fake Bot API: one that went out is answered to its caller at the deadline as
 * an unknown outcome, and the message its late answer names is handed on (`late.arrived`); one
 * still waiting for the send budget at the deadline is dropped, never reaches Telegram, and is a
 * refusal (a wait of 0), not an unknown outcome; a gateway that closes drops the wait.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { previewApi } from "../../../src/adapters/telegram/bot.js";
import { TelegramPreviews } from "../../../src/adapters/telegram/previews.js";
import { DEFAULT_TELEGRAM_SEND_LIMITS } from "../../../src/adapters/telegram/send-budget.js";
import type { SendBudget } from "../../../src/core/send-budget.js";
import { RetryableError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/logger.js";
import { FakeTelegram } from "../../fakes/fake-telegram.js";
import { sleep } from "../../helpers/stall-run.js";

const CHAT = 4242;
const target = { platform: "telegram" as const, chatId: String(CHAT) };

let telegram: FakeTelegram | undefined;
afterEach(async () => {
  await telegram?.close();
  telegram = undefined;
});

async function previews(budget?: SendBudget) {
  telegram = await FakeTelegram.start();
  const options = { token: telegram.token, apiRoot: telegram.apiRoot, maxMessageChars: 10_000, logger: silentLogger };
  const hook = budget ? { budget: () => budget, bot: telegram.token.split(":")[0]!, limits: DEFAULT_TELEGRAM_SEND_LIMITS } : undefined;
  return new TelegramPreviews(previewApi(options, hook), silentLogger);
}

/** Where a late answer goes, and the gateway's closing. */
function lateCreate() {
  const arrived: string[] = [];
  const closing = new AbortController();
  return { arrived, closing, late: { signal: closing.signal, arrived: (messageId: string) => void arrived.push(messageId) } };
}

describe("telegram preview create past its deadline", () => {
  it("went out, answered late: the caller hears of an unknown outcome at the deadline, and the message comes to `late.arrived`", async () => {
    const port = await previews();
    telegram!.holdAnswer("sendMessage", 1_500);
    const { arrived, late } = lateCreate();
    const failed = await port.create(target, "💭 Thinking…", AbortSignal.timeout(300), "p1", late).then(() => undefined, (error: unknown) => error);
    expect(failed).toBeInstanceOf(RetryableError);
    expect((failed as RetryableError).retryAfterMs).toBeUndefined();
    expect(arrived).toEqual([]);
    await vi.waitFor(() => expect(arrived).toHaveLength(1), { timeout: 5_000 });
    expect(telegram!.chatView(CHAT)).toEqual([{ messageId: Number(arrived[0]), text: "💭 Thinking…", edited: false }]);
  });

  it("still waiting for the send budget at its deadline: dropped, never sent, a refusal", async () => {
    let grant: () => void = () => undefined;
    const budget: SendBudget = {
      take: () => new Promise((resolve) => { grant = () => resolve({ granted: true, delayMs: 0 }); }),
      penalize: async () => undefined,
    };
    const port = await previews(budget);
    const { arrived, late } = lateCreate();
    const failed = await port.create(target, "💭 Thinking…", AbortSignal.timeout(200), "p1", late).then(() => undefined, (error: unknown) => error);
    expect(failed).toBeInstanceOf(RetryableError);
    expect((failed as RetryableError).retryAfterMs).toBe(0);
    // The budget answers after all: the request, dropped, is not sent now.
    grant();
    await sleep(500);
    expect(telegram!.callsOf("sendMessage")).toEqual([]);
    expect(arrived).toEqual([]);
  });

  it("the gateway closing ends the wait: nothing arrives", async () => {
    const port = await previews();
    telegram!.holdAnswer("sendMessage", 3_000);
    const { arrived, closing, late } = lateCreate();
    await expect(port.create(target, "💭 Thinking…", AbortSignal.timeout(200), "p1", late)).rejects.toBeInstanceOf(RetryableError);
    closing.abort();
    await vi.waitFor(() => expect(telegram!.traps.lateAnswers).toHaveLength(1), { timeout: 10_000 });
    await sleep(200);
    expect(arrived).toEqual([]);
  });
});
