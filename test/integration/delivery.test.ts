import { describe, expect, it } from "vitest";
import type { OutboundReply, SendOptions } from "../../src/adapters/channel-adapter.js";
import { PermanentError, RetryableError } from "../../src/errors.js";
import { startFakeLlm } from "../fakes/fake-llm.js";
import { testConfig } from "../helpers/config.js";
import { captureLogs, startPipeline } from "../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../helpers/recording-adapter.js";
import { closeAfterTest } from "../helpers/close-after-test.js";

/** A platform that refuses the first `failures.length` sends with the given errors. */
class FlakyAdapter extends RecordingAdapter {
  attempts: number[] = [];
  constructor(private readonly failures: Error[]) {
    super("console");
  }
  override async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    this.attempts.push(Date.now());
    const failure = this.failures.shift();
    if (failure) throw failure;
    await super.send(reply, options);
  }
}

describe("reply delivery", () => {
  it("waits out a platform's retry-after without losing or doubling the reply", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const adapter = new FlakyAdapter([new RetryableError("429", { retryAfterMs: 1_500 })]);
    const pipeline = closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url }), [adapter]));
    await adapter.submit(inbound({ text: "slowly", messageId: "d1" }));
    await adapter.waitFor((sent) => sent.length === 1);
    expect(adapter.attempts).toHaveLength(2);
    expect(adapter.attempts[1]! - adapter.attempts[0]!).toBeGreaterThanOrEqual(1_400);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(adapter.sent).toHaveLength(1);
  });

  it("logs a send that does not answer with its chat, reply and part while it hangs (issue 28 item 9), then delivers it once", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    let thaw = (): void => {};
    const frozen = new Promise<void>((resolve) => { thaw = resolve; });
    class FrozenAdapter extends RecordingAdapter {
      override async send(reply: OutboundReply, options: SendOptions): Promise<void> {
        await frozen;
        await super.send(reply, options);
      }
    }
    const adapter = new FrozenAdapter("console");
    const logs = captureLogs("warn");
    const pipeline = closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url, DELIVERY_STEP_WARN_MS: "100" }), [adapter], { logs }));
    await adapter.submit(inbound({ text: "anyone there?", messageId: "f1" }));
    const overdue = () => logs.lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.msg === "delivery-step-overdue");
    await adapter.waitFor(() => overdue().length >= 2);
    expect(overdue()[0]).toMatchObject({ step: "send", chatId: "chat-1", part: 0, replyId: expect.stringContaining("#") });
    expect(adapter.sent).toHaveLength(0);
    thaw();
    await adapter.waitFor((sent) => sent.length === 1);
    const logged = overdue().length;
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(overdue()).toHaveLength(logged);
    expect(adapter.sent).toHaveLength(1);
  });

  it("drops a reply the platform refuses for good and delivers the next one", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const adapter = new FlakyAdapter([new PermanentError("403 bot was blocked by the user")]);
    const pipeline = closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url }), [adapter]));
    await adapter.submit(inbound({ text: "first", messageId: "p1" }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    await adapter.waitFor(() => adapter.attempts.length === 1);
    await adapter.submit(inbound({ text: "second", messageId: "p2" }));
    await adapter.waitFor((sent) => sent.length === 1);
    expect(adapter.sent[0]?.reply.text).toBe("echo: second");
  });

  it("leaves a reply to a gateway that has its platform: none is tried (and retried) by one that lacks it", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const config = testConfig({ LLM_BASE_URL: llm.url, ALLOWED_TELEGRAM_USERS: "user-1" });
    const consoleSide = new RecordingAdapter("console");
    const telegramSide = new RecordingAdapter("telegram");
    const consoleLogs = captureLogs("info");
    const telegramLogs = captureLogs("info");
    const pipeline = closeAfterTest(await startPipeline(config, [consoleSide], { logs: consoleLogs }));
    const other = await startPipeline(config, [telegramSide], { worker: false, logs: telegramLogs });
    try {
      for (let round = 0; round < 3; round++) {
        await consoleSide.submit(inbound({ text: `console ${round}`, messageId: `pc${round}` }));
        await telegramSide.submit(inbound({ platform: "telegram", chatId: "42", text: `telegram ${round}`, messageId: `pt${round}` }));
      }
      // Messages sent while a turn runs are answered together (collect): count answered ids.
      await consoleSide.waitFor(() => consoleSide.answeredIds().length === 3);
      await telegramSide.waitFor(() => telegramSide.answeredIds().length === 3);
      expect(consoleSide.sent.every((entry) => entry.reply.target.platform === "console")).toBe(true);
      expect(telegramSide.sent.every((entry) => entry.reply.target.platform === "telegram")).toBe(true);
      for (const logs of [consoleLogs, telegramLogs]) expect(logs.lines.join("")).not.toMatch(/delivery-failed|adapter in this gateway/);
    } finally {
      await other.close();
    }
  });
});
