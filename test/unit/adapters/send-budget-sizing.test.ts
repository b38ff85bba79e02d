/**
 * The send budget's sizing against issue 32's target — 25 answers a second through one bot with
 * p99 wait ≤ 1 s — and the platforms' limits.
 */
import { describe, expect, it } from "vitest";
import { discordBuckets } from "../../../src/adapters/discord/send-budget.js";
import { DEFAULT_TELEGRAM_SEND_LIMITS, telegramBuckets } from "../../../src/adapters/telegram/send-budget.js";
import { DELIVERY_CONCURRENCY } from "../../../src/gateway/gateway.js";

describe("the send budget's sizing", () => {
  it("lets a Telegram bot carry 25 answers a second with room to spare, never more than 28 in a second", () => {
    const [global] = telegramBuckets("42", "sendMessage", DEFAULT_TELEGRAM_SEND_LIMITS);
    // At 25 refilled (3 at once, before), the finals' own rate used the bucket to the full and
    // they queued for the whole run.
    expect(global!.perSecond).toBeGreaterThanOrEqual(26);
    expect(global!.capacity + global!.perSecond).toBeLessThanOrEqual(DEFAULT_TELEGRAM_SEND_LIMITS.perSecond);
    // Previews and typing keep under 80 % of it: below the 25 answers a second, so none then.
    expect(global!.headroomPerSecond).toBeLessThan(25);
  });

  it("lets a Discord bot's previews use only what 25 answers a second leave below 80 % of its rate", () => {
    const [global] = discordBuckets("/channels/1/messages", "POST", 45);
    expect(global!.capacity + global!.perSecond).toBeLessThanOrEqual(45);
    expect(global!.headroomPerSecond).toBeGreaterThan(25);
    expect(global!.headroomPerSecond).toBeLessThanOrEqual(0.8 * global!.perSecond);
  });

  it("gives the delivery queue slots for 30 replies a second each holding its slot 1.6 s (p90 measured under load)", () => {
    expect(DELIVERY_CONCURRENCY).toBeGreaterThanOrEqual(30 * 1.6);
  });
});
