import { describe, expect, it } from "vitest";
import type { InboundMessage, IngressPort, SubmitResult } from "../../../../src/adapters/channel-adapter.js";
import { Intake } from "../../../../src/adapters/discord/intake.js";
import { silentLogger, type Logger } from "../../../../src/logger.js";

/** What is not a gateway message (a button press) goes through the same per-channel queue. */

const inbound = (messageId: string, chatId = "300000000000000001"): InboundMessage => ({
  platform: "discord", sessionKey: `dc:${chatId}`, messageId, chatId, userId: "400000000000000001", userName: "Ada", chatType: "group", text: messageId, sentAt: 0,
});

function intakeWith(submit: IngressPort["submit"], options: { logger?: Logger; attemptTimeoutMs?: number; stepDeadlineMs?: number } = {}): Intake {
  return new Intake({
    ingress: { submit }, logger: options.logger ?? silentLogger, botUser: () => null, rules: { alwaysOnChannels: new Set(), maxMessageChars: 100 },
    isWatched: () => false, maxTextFileBytes: 400, textFileTimeoutMs: 1_000, submitRetryDelaysMs: [1, 1], notify: async () => undefined,
    ...(options.attemptTimeoutMs === undefined ? {} : { attemptTimeoutMs: options.attemptTimeoutMs }),
    ...(options.stepDeadlineMs === undefined ? {} : { stepDeadlineMs: options.stepDeadlineMs }),
  });
}

/** A logger that keeps each line's fields and message. */
function recordingLogger(): { logger: Logger; lines: Array<Record<string, unknown> & { msg: string }> } {
  const lines: Array<Record<string, unknown> & { msg: string }> = [];
  const record = (fields: unknown, msg?: string) => {
    lines.push({ ...(typeof fields === "object" && fields !== null ? fields : {}), msg: msg ?? String(fields) });
  };
  const logger = { warn: record, error: record, info: record, debug: () => undefined, trace: () => undefined, child: () => logger } as unknown as Logger;
  return { logger, lines };
}

describe("Intake.submitInOrder", () => {
  it("keeps a channel's order even when the first waits on something slow (a slow store)", async () => {
    const submitted: string[] = [];
    let release = (): void => {};
    const slow = new Promise<void>((resolve) => { release = resolve; });
    const intake = intakeWith(async (message) => {
      if (message.messageId === "first") await slow;
      submitted.push(message.messageId);
      return { status: "accepted" };
    });
    const first = intake.submitInOrder(inbound("first"));
    const second = intake.submitInOrder(inbound("second"));
    const elsewhere = await intake.submitInOrder(inbound("elsewhere", "300000000000000002"));
    expect(elsewhere).toEqual({ status: "accepted" });
    expect(submitted).toEqual(["elsewhere"]);
    release();
    expect(await first).toEqual({ status: "accepted" });
    await second;
    expect(submitted).toEqual(["elsewhere", "first", "second"]);
  });

  it("retries a failing ingress, answers undefined when every try failed, and goes on with the channel", async () => {
    let calls = 0;
    const intake = intakeWith(async (message): Promise<SubmitResult> => {
      calls += 1;
      if (message.messageId === "doomed") throw new Error("redis down");
      return { status: "duplicate" };
    });
    expect(await intake.submitInOrder(inbound("doomed"))).toBeUndefined();
    expect(calls).toBe(3);
    expect(await intake.submitInOrder(inbound("later"))).toEqual({ status: "duplicate" });
  });
});

describe("Intake deadlines (issue 28 item 9)", () => {
  it("logs a store that never answers with its channel and message, retries it, and takes the retry's answer", async () => {
    const { logger, lines } = recordingLogger();
    let calls = 0;
    // The first attempt hangs as on a frozen or half-open Redis connection; the retry answers.
    const intake = intakeWith(async () => (++calls === 1 ? new Promise<SubmitResult>(() => undefined) : { status: "accepted" }), { logger, attemptTimeoutMs: 50 });
    expect(await intake.submitInOrder(inbound("m1"))).toEqual({ status: "accepted" });
    expect(calls).toBe(2);
    expect(lines).toContainEqual(expect.objectContaining({ msg: "ingress submit failed", channelId: "300000000000000001", messageId: "m1", attempt: 1, overran: true }));
  });

  it("when every attempt overran, waits for one that still lands instead of giving up (logged meanwhile)", async () => {
    const { logger, lines } = recordingLogger();
    let land = (_result: SubmitResult): void => {};
    const first = new Promise<SubmitResult>((resolve) => { land = resolve; });
    let calls = 0;
    const intake = intakeWith(() => (++calls === 1 ? first : new Promise<SubmitResult>(() => undefined)), { logger, attemptTimeoutMs: 20 });
    const answer = intake.submitInOrder(inbound("m2"));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(calls).toBe(3);
    expect(lines.some((line) => line.msg.includes("still unanswered") && line.messageId === "m2")).toBe(true);
    land({ status: "accepted" });
    expect(await answer).toEqual({ status: "accepted" });
  });

  it("a channel whose step never ends is logged and the channel goes on (the backstop)", async () => {
    const { logger, lines } = recordingLogger();
    const intake = intakeWith(async () => ({ status: "accepted" }), { logger, stepDeadlineMs: 50 });
    // A press queued behind a step that hangs (what no inner deadline covered).
    (intake as unknown as { inChannelOrder(channelId: string, task: () => Promise<void>, messageId?: string): void })
      .inChannelOrder("300000000000000001", () => new Promise<void>(() => undefined), "stuck");
    expect(await intake.submitInOrder(inbound("after"))).toEqual({ status: "accepted" });
    expect(lines).toContainEqual(expect.objectContaining({ channelId: "300000000000000001", messageId: "stuck", msg: expect.stringContaining("overran its deadline") }));
  });
});
