/**
 * What a gateway out of shutdown time records before it exits (delivery-shutdown.ts): every part
 * in flight — on the wire, or answered and its record not stored yet — and nothing else. The
 * whole path with real processes: test/integration/faults/delivery-sigterm.test.ts.
 */
import { describe, expect, it } from "vitest";
import type { OutboundReply } from "../../../src/core/channel.js";
import { DeliveryHandedBackError, DeliveryShutdown } from "../../../src/gateway/delivery-shutdown.js";
import { silentLogger } from "../../../src/logger.js";

const reply = { replyId: "r1", sessionKey: "tg:1", target: { platform: "telegram", chatId: "1" }, text: "hi" } as unknown as OutboundReply;

function shutdownRecording() {
  const records: Array<{ sessionKey: string; replyId: string; part: number }> = [];
  const unconfirmed: string[] = [];
  const shutdown = new DeliveryShutdown({
    outbox: { recordPart: async (sessionKey, _token, replyId, part) => void records.push({ sessionKey, replyId, part }) },
    leaseMs: 6_000,
    log: silentLogger,
    onPartUnconfirmed: (platform) => unconfirmed.push(platform),
  });
  return { shutdown, records, unconfirmed };
}

describe("DeliveryShutdown.recordPartsInFlight", () => {
  it("records a part on the wire as sent, counted as unconfirmed", async () => {
    const { shutdown, records, unconfirmed } = shutdownRecording();
    shutdown.requested("tg:1", "token", reply, 2, true);
    await shutdown.recordPartsInFlight();
    expect(records).toEqual([{ sessionKey: "tg:1", replyId: "r1", part: 2 }]);
    expect(unconfirmed).toEqual(["telegram"]);
  });

  it("records a part answered whose record is not stored yet, not counted as unconfirmed; once stored, nothing", async () => {
    const { shutdown, records, unconfirmed } = shutdownRecording();
    shutdown.requested("tg:1", "token", reply, 3, true);
    shutdown.requested("tg:1", "token", reply, 3, false);
    const entry = shutdown.sent("tg:1", "token", reply, 3);
    await shutdown.recordPartsInFlight();
    expect(records).toEqual([{ sessionKey: "tg:1", replyId: "r1", part: 3 }]);
    expect(unconfirmed).toEqual([]);
    shutdown.recorded("tg:1", entry);
    await shutdown.recordPartsInFlight();
    expect(records).toHaveLength(1);
  });

  it("records nothing for a request answered with a failure (not sent), nor after the reply settled", async () => {
    const { shutdown, records } = shutdownRecording();
    shutdown.requested("tg:1", "token", reply, 0, true);
    shutdown.requested("tg:1", "token", reply, 0, false);
    await shutdown.recordPartsInFlight();
    shutdown.sent("tg:1", "token", reply, 0);
    shutdown.settled("tg:1");
    await shutdown.recordPartsInFlight();
    expect(records).toEqual([]);
  });

  it("once stopping, a recorded part ends the delivery (handed back)", () => {
    const { shutdown } = shutdownRecording();
    const entry = shutdown.sent("tg:1", "token", reply, 1);
    shutdown.stop();
    expect(() => shutdown.recorded("tg:1", entry)).toThrow(DeliveryHandedBackError);
  });
});
