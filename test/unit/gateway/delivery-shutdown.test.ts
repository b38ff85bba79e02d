/**
 * What a gateway out of shutdown time records before it exits (delivery-shutdown.ts): every part
 * in flight — on the wire, or answered and its record not stored yet — and nothing else. The
 * whole path with real processes: test/integration/faults/delivery-sigterm.test.ts.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Api, HttpError } from "grammy";
import { describe, expect, it } from "vitest";
import { wireTransformer } from "../../../src/adapters/telegram/on-wire.js";
import { sendReply } from "../../../src/adapters/telegram/send-reply.js";
import type { OutboundReply } from "../../../src/core/channel.js";
import { DeliveryHandedBackError, DeliveryShutdown } from "../../../src/gateway/delivery-shutdown.js";
import { silentLogger } from "../../../src/logger.js";

const reply = { replyId: "r1", sessionKey: "tg:1", target: { platform: "telegram", chatId: "1" }, text: "hi" } as unknown as OutboundReply;

function shutdownRecording() {
  const records: Array<{ sessionKey: string; replyId: string; part: number }> = [];
  const unconfirmed: string[] = [];
  const marks: Array<{ sessionKey: string; replyId: string; part: number }> = [];
  const shutdown = new DeliveryShutdown({
    outbox: {
      recordPart: async (sessionKey, _token, replyId, part) => void records.push({ sessionKey, replyId, part }),
      markOnWire: async (sessionKey, replyId, part) => void marks.push({ sessionKey, replyId, part }),
    },
    leaseMs: 6_000,
    log: silentLogger,
    onPartUnconfirmed: (platform) => unconfirmed.push(platform),
  });
  return { shutdown, records, unconfirmed, marks };
}

const discordReply = { replyId: "r2", sessionKey: "dc:5", target: { platform: "discord", chatId: "5" }, text: "hi" } as unknown as OutboundReply;

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

  it("marks a Discord channel part on the wire (nonce-protected) instead of recording it, not counted as unconfirmed; once answered, records it", async () => {
    const { shutdown, records, unconfirmed, marks } = shutdownRecording();
    shutdown.noncedOnWire("dc:5", "token", discordReply, 1);
    await shutdown.recordPartsInFlight();
    expect(marks).toEqual([{ sessionKey: "dc:5", replyId: "r2", part: 1 }]);
    expect(records).toEqual([]);
    expect(unconfirmed).toEqual([]);
    shutdown.sent("dc:5", "token", discordReply, 1);
    await shutdown.recordPartsInFlight();
    expect(records).toEqual([{ sessionKey: "dc:5", replyId: "r2", part: 1 }]);
    expect(marks).toHaveLength(1);
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

  /**
   * A Bot API client as bot.ts builds it (the wire transformer innermost), answering `answer`
   * itself (or failing with it); outside the wire transformer, one await (a timer: an exit timer
   * could run there) between Telegram's answer and what follows it, in which the process exits.
   */
  function apiExitingAfterAnswer(answer: { ok: true; result: unknown } | { ok: false; error_code: number; description: string } | Error, exit: () => Promise<void>): Api {
    const api = new Api("1:test");
    api.config.use(() => (answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer as never)));
    api.config.use(wireTransformer);
    api.config.use(async (previous, method, payload, signal) => {
      try {
        return await previous(method, payload, signal);
      } finally {
        await sleep(5);
        await exit();
      }
    });
    return api;
  }

  it("records a part Telegram answered when the exit comes between the answer and its report, not in the same tick", async () => {
    const { shutdown, records, unconfirmed } = shutdownRecording();
    const message = { message_id: 7, date: 0, chat: { id: 1, type: "private", first_name: "Ada" }, text: "hi" };
    const api = apiExitingAfterAnswer({ ok: true, result: message }, () => shutdown.recordPartsInFlight());
    let reported = false;
    await sendReply(api, reply.target, "hi", {
      logger: silentLogger,
      onPartRequest: (part, onWire, outcome) => shutdown.requested("tg:1", "token", reply, part, onWire, outcome),
      onPartSent: () => Promise.resolve(void (reported = true)),
    });
    expect(reported).toBe(true);
    expect(records).toEqual([{ sessionKey: "tg:1", replyId: "r1", part: 0 }]);
    expect(unconfirmed).toEqual([]);
  });

  it("records nothing for a part Telegram refused when the exit comes between the refusal and its error", async () => {
    const { shutdown, records } = shutdownRecording();
    const api = apiExitingAfterAnswer({ ok: false, error_code: 429, description: "Too Many Requests: retry after 1" }, () => shutdown.recordPartsInFlight());
    await expect(sendReply(api, reply.target, "hi", {
      logger: silentLogger,
      onPartRequest: (part, onWire, outcome) => shutdown.requested("tg:1", "token", reply, part, onWire, outcome),
    })).rejects.toThrow(/429/);
    expect(records).toEqual([]);
  });

  it("records a part whose outcome is unknown (a 502, a connection reset) when the exit comes between the failure and its report, counted as unconfirmed", async () => {
    for (const failure of [{ ok: false as const, error_code: 502, description: "Bad Gateway" }, new HttpError("Network request for 'sendMessage' failed!", Object.assign(new Error("socket hang up"), { code: "ECONNRESET" }))]) {
      const { shutdown, records, unconfirmed } = shutdownRecording();
      const api = apiExitingAfterAnswer(failure, () => shutdown.recordPartsInFlight());
      await sendReply(api, reply.target, "hi", {
        logger: silentLogger,
        onPartRequest: (part, onWire, outcome) => shutdown.requested("tg:1", "token", reply, part, onWire, outcome),
        onPartSent: () => Promise.resolve(),
      });
      expect(records).toEqual([{ sessionKey: "tg:1", replyId: "r1", part: 0 }]);
      expect(unconfirmed).toEqual(["telegram"]);
    }
  });

  it("records nothing for a part whose request never reached Telegram (connection refused) when the exit comes before its error", async () => {
    const { shutdown, records } = shutdownRecording();
    const refused = new HttpError("Network request for 'sendMessage' failed!", Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
    const api = apiExitingAfterAnswer(refused, () => shutdown.recordPartsInFlight());
    await expect(sendReply(api, reply.target, "hi", {
      logger: silentLogger,
      onPartRequest: (part, onWire, outcome) => shutdown.requested("tg:1", "token", reply, part, onWire, outcome),
    })).rejects.toThrow();
    expect(records).toEqual([]);
  });
});
