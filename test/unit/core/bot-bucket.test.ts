import { describe, expect, it } from "vitest";
import { botBucket, type SendBucket } from "../../../src/core/send-budget.js";
import { DEFAULT_TELEGRAM_SEND_LIMITS, telegramBuckets } from "../../../src/adapters/telegram/send-budget.js";
import { discordBuckets } from "../../../src/adapters/discord/send-budget.js";

/**
 * Finals through one bucket as the budget's script grants them (a final borrows: it is told to
 * wait until its slot), arriving at `arrivals` (ms) → when each is sent.
 */
function sendTimes(bucket: SendBucket, arrivals: readonly number[]): number[] {
  let level = bucket.capacity;
  let at = 0;
  return arrivals.map((arrival) => {
    level = Math.min(bucket.capacity, level + ((arrival - at) * bucket.perSecond) / 1_000);
    at = arrival;
    level -= 1;
    return arrival + (level < 0 ? (-level * 1_000) / bucket.perSecond : 0);
  });
}

const mostInAnySecond = (times: readonly number[]) => Math.max(...times.map((start) => times.filter((time) => time >= start && time < start + 1_000).length));

describe("the bot's bucket", () => {
  it("keeps up with 27 finals a second for a minute under a limit of 28, and never lets more than 28 go in a second", () => {
    const bucket = botBucket(28);
    const arrivals = Array.from({ length: 27 * 60 }, (_, index) => Math.floor((index * 1_000) / 27));
    const sent = sendTimes(bucket, arrivals);
    const delays = sent.map((time, index) => time - arrivals[index]!);
    // A tenth at once (3, refilled at 25 a second) fell 4.7 s behind by the end of the minute.
    expect(Math.max(...delays)).toBeLessThan(100);
    expect(mostInAnySecond(sent)).toBeLessThanOrEqual(28);
    // A burst after a quiet spell: 60 finals at once go at most 28 in any second.
    expect(mostInAnySecond(sendTimes(bucket, Array.from({ length: 60 }, () => 0)))).toBeLessThanOrEqual(28);
  });

  it("is the global bucket of every Telegram call and every Discord request", () => {
    expect(telegramBuckets("42", "sendMessage", DEFAULT_TELEGRAM_SEND_LIMITS)[0]).toEqual(botBucket(DEFAULT_TELEGRAM_SEND_LIMITS.perSecond));
    expect(telegramBuckets("42", "sendChatAction", DEFAULT_TELEGRAM_SEND_LIMITS)).toEqual([botBucket(DEFAULT_TELEGRAM_SEND_LIMITS.perSecond)]);
    expect(discordBuckets("/channels/42/messages", "POST", 45)[0]).toEqual(botBucket(45));
    expect(discordBuckets("/channels/42/typing", "POST", 45)).toEqual([botBucket(45)]);
  });
});
