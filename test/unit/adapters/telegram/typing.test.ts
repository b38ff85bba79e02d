import type { Api } from "grammy";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TypingIndicators } from "../../../../src/adapters/telegram/typing.js";
import type { ReplyTarget } from "../../../../src/adapters/channel-adapter.js";
import { silentLogger } from "../../../../src/logger.js";

const target: ReplyTarget = { platform: "telegram", chatId: "7000000001" };

function indicators(): { typing: TypingIndicators; calls: number[]; refuse(on: boolean): void } {
  const calls: number[] = [];
  let refusing = false;
  const api = {
    sendChatAction: () => {
      calls.push(Date.now());
      return refusing ? Promise.reject(Object.assign(new Error("Too Many Requests"), { error_code: 429 })) : Promise.resolve(true);
    },
  } as unknown as Api;
  const typing = new TypingIndicators({ api, logger: silentLogger, intervalMs: 4_000, maxMs: 600_000, signal: new AbortController().signal, track: () => undefined });
  return { typing, calls, refuse: (on) => (refusing = on) };
}

describe("telegram TypingIndicators", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("a start while the indicator still shows sends nothing now: one call per 4 s however often a busy chat's messages start it", async () => {
    const { typing, calls } = indicators();
    typing.start("tg:1", target); // a message waiting in the backlog
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    // Its turn begins a second later, and three more messages of the chat wait meanwhile.
    for (let index = 0; index < 4; index++) {
      await vi.advanceTimersByTimeAsync(700);
      typing.start("tg:1", target);
    }
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(1);
    // The refresh comes 4 s after the call that was answered, then every 4 s.
    await vi.advanceTimersByTimeAsync(4_000 - 2_800 - 1);
    expect(calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(4_000);
    expect(calls).toHaveLength(3);
    typing.stopAll();
    await vi.advanceTimersByTimeAsync(20_000);
    expect(calls).toHaveLength(3);
  });

  it("starts with a call at once after a stop (the answer went out and cleared it), or when the last call was refused", async () => {
    const { typing, calls, refuse } = indicators();
    typing.start("tg:1", target);
    await vi.advanceTimersByTimeAsync(0);
    typing.stop("tg:1");
    typing.start("tg:1", target);
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(2);
    // The budget skipped the next call (a 429 of its own): nothing shows, so a start calls at once.
    refuse(true);
    await vi.advanceTimersByTimeAsync(4_000);
    expect(calls).toHaveLength(3);
    refuse(false);
    await vi.advanceTimersByTimeAsync(1_000);
    typing.start("tg:1", target);
    await vi.advanceTimersByTimeAsync(0);
    expect(calls).toHaveLength(4);
    typing.stopAll();
  });
});
