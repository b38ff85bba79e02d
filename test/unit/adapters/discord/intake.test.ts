import { describe, expect, it } from "vitest";
import type { InboundMessage, IngressPort, SubmitResult } from "../../../../src/adapters/channel-adapter.js";
import { Intake } from "../../../../src/adapters/discord/intake.js";
import { silentLogger } from "../../../../src/logger.js";

/** What is not a gateway message (a button press) goes through the same per-channel queue. */

const inbound = (messageId: string, chatId = "300000000000000001"): InboundMessage => ({
  platform: "discord", sessionKey: `dc:${chatId}`, messageId, chatId, userId: "400000000000000001", userName: "Ada", chatType: "group", text: messageId, sentAt: 0,
});

function intakeWith(submit: IngressPort["submit"]): Intake {
  return new Intake({
    ingress: { submit }, logger: silentLogger, botUser: () => null, rules: { alwaysOnChannels: new Set(), maxMessageChars: 100 },
    isWatched: () => false, maxTextFileBytes: 400, textFileTimeoutMs: 1_000, submitRetryDelaysMs: [1, 1], notify: async () => undefined,
  });
}

describe("Intake.submitInOrder", () => {
  it("keeps a channel's order even when the first waits on something slow (an acknowledgement)", async () => {
    const submitted: string[] = [];
    const intake = intakeWith(async (message) => {
      submitted.push(message.messageId);
      return { status: "accepted" };
    });
    let acknowledge = (): void => {};
    const first = intake.submitInOrder(inbound("first"), new Promise<void>((resolve) => { acknowledge = resolve; }));
    const second = intake.submitInOrder(inbound("second"));
    const elsewhere = await intake.submitInOrder(inbound("elsewhere", "300000000000000002"));
    expect(elsewhere).toEqual({ status: "accepted" });
    expect(submitted).toEqual(["elsewhere"]);
    acknowledge();
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
    expect(await intake.submitInOrder(inbound("after"), Promise.reject(new Error("no ack")))).toBeUndefined();
    expect(await intake.submitInOrder(inbound("later"))).toEqual({ status: "duplicate" });
  });
});
