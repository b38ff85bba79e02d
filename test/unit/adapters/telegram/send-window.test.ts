/**
 * The Telegram budget transformer's own count (src/adapters/telegram/send-budget.ts, issue 32):
 * slots the budget granted together — as a stalled event loop fires them — leave the process no
 * more than the bot's limit in any second.
 */
import { describe, expect, it } from "vitest";
import type { SendBudget } from "../../../../src/core/send-budget.js";
import { sendBudgetTransformer } from "../../../../src/adapters/telegram/send-budget.js";

describe("the Telegram send budget's own count", () => {
  it("sends at most the limit in any second, however many slots were granted at once", async () => {
    const budget: SendBudget = { take: () => Promise.resolve({ granted: true, delayMs: 0 }), penalize: () => Promise.resolve() };
    const transformer = sendBudgetTransformer({ budget: () => budget, bot: "1", limits: { perSecond: 5, groupPerMinute: 18 }, defaultPriority: "final" });
    const sentAt: number[] = [];
    const previous = (() => {
      sentAt.push(Date.now());
      return Promise.resolve({ ok: true, result: true });
    }) as never;
    const started = Date.now();
    await Promise.all(Array.from({ length: 7 }, (_, index) => (transformer as (...args: unknown[]) => Promise<unknown>)(previous, "sendMessage", { chat_id: 100 + index, text: "hi" })));
    const offsets = sentAt.map((at) => at - started).sort((a, b) => a - b);
    expect(offsets.slice(0, 5).every((offset) => offset < 500)).toBe(true);
    expect(offsets[5]).toBeGreaterThanOrEqual(990);
    expect(offsets[6]).toBeGreaterThanOrEqual(990);
  });
});
