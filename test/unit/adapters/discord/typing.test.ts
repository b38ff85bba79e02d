import { DiscordAPIError, type SendableChannels } from "discord.js";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TypingIndicators } from "../../../../src/adapters/discord/typing.js";
import { silentLogger } from "../../../../src/logger.js";

const missingPermissions = (): DiscordAPIError =>
  new DiscordAPIError({ code: 50013, message: "Missing Permissions" }, 50013, 403, "POST", "https://discord.com/api/v10/channels/1/typing", { body: undefined, files: undefined });

/** A channel whose typing requests stay unanswered until the test answers them, in order. */
function slowChannel(): { channel: SendableChannels; pending: { resolve(): void; reject(error: unknown): void }[] } {
  const pending: { resolve(): void; reject(error: unknown): void }[] = [];
  const channel = {
    sendTyping: () =>
      new Promise<void>((resolve, reject) => {
        pending.push({ resolve, reject });
      }),
  } as unknown as SendableChannels;
  return { channel, pending };
}

describe("TypingIndicators", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("keeps one request in flight: ticks while Discord has not answered are skipped, so a refusal stops the loop with nothing queued behind it", async () => {
    const { channel, pending } = slowChannel();
    const typing = new TypingIndicators({ intervalMs: 100, timeoutMs: 60_000, resolveChannel: async () => channel, logger: silentLogger });
    typing.start("s1", "c1");
    await vi.advanceTimersByTimeAsync(1_000); // ten ticks while the first request hangs (a loaded gateway)
    expect(pending).toHaveLength(1);

    pending[0]!.reject(missingPermissions());
    await vi.advanceTimersByTimeAsync(1_000);
    expect(pending).toHaveLength(1);
    expect(typing.isTyping("s1")).toBe(false);
  });

  it("refreshes on every tick once the last request was answered, and keeps going after a transient failure", async () => {
    const { channel, pending } = slowChannel();
    const typing = new TypingIndicators({ intervalMs: 100, timeoutMs: 60_000, resolveChannel: async () => channel, logger: silentLogger });
    typing.start("s1", "c1");
    await vi.advanceTimersByTimeAsync(0);
    expect(pending).toHaveLength(1);
    pending[0]!.resolve();
    await vi.advanceTimersByTimeAsync(100);
    expect(pending).toHaveLength(2);
    pending[1]!.reject(new Error("socket hang up"));
    await vi.advanceTimersByTimeAsync(100);
    expect(pending).toHaveLength(3);
    expect(typing.isTyping("s1")).toBe(true);
    typing.stopAll();
  });

  it("a refusal answered after the next turn started does not stop that turn's loop", async () => {
    const { channel, pending } = slowChannel();
    const typing = new TypingIndicators({ intervalMs: 100, timeoutMs: 60_000, resolveChannel: async () => channel, logger: silentLogger });
    typing.start("s1", "c1");
    await vi.advanceTimersByTimeAsync(0);
    typing.start("s1", "c1"); // the next turn: a new loop with its own first request
    await vi.advanceTimersByTimeAsync(0);
    expect(pending).toHaveLength(2);
    pending[0]!.reject(missingPermissions());
    await vi.advanceTimersByTimeAsync(0);
    expect(typing.isTyping("s1")).toBe(true);
    typing.stopAll();
  });
});
