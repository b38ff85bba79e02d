/**
 * REDIS_MIN_REPLICAS_ACK (1 by default with Sentinel) at the Telegram bot's own edge: with the
 * master's replicas frozen no replica can confirm a message, so the real adapter must not tell
 * Telegram it has the update — long polling leaves the offset below it, a webhook answers an
 * error — and once a replica is back Telegram's re-delivery is taken and answered once.
 */
import type { Update } from "grammy/types";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { startSentinelSetup, type SentinelSetup } from "../../helpers/redis-sentinel.js";
import { ADA, DM, closeChecked, sleep, startTelegramE2e, textOf, waitUntil, warmUpTokenizer, type TelegramE2e } from "../../helpers/telegram-pipeline.js";

const SECRET = "replicas-behind-secret";

describe("Telegram on Sentinel: no replica confirms a message, so Telegram is not told it arrived", () => {
  let setup: SentinelSetup;
  let e2e: TelegramE2e | undefined;
  const env = () => ({ REDIS_URL: "redis://127.0.0.1:1", REDIS_SENTINELS: setup.sentinels, REDIS_SENTINEL_MASTER: setup.master });
  /** Freezes every replica of the master; → wakes them. */
  const freezeReplicas = async () => {
    const masterPort = await setup.masterPort();
    const replicas = setup.nodes.filter((node) => node.port !== masterPort);
    for (const node of replicas) node.pause();
    return () => {
      for (const node of replicas) node.resume();
    };
  };

  beforeAll(async () => {
    warmUpTokenizer();
    setup = await startSentinelSetup();
  }, 120_000);
  afterEach(async () => {
    await closeChecked(e2e);
    e2e = undefined;
  });
  afterAll(async () => {
    await setup?.dispose();
  });

  it("long polling: the update stays unconfirmed while the replicas are frozen, then is answered once", async () => {
    e2e = await startTelegramE2e({ env: env() });
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "before" });
    await e2e.waitForSent(DM.id, 1, 60_000);
    const wake = await freezeReplicas();
    let update: Update;
    try {
      update = e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "while frozen" });
      await waitUntil(() => e2e!.telegram.fetchedUpTo >= update.update_id, "the update to be fetched");
      // Past the ingress's 3 s WAIT, twice over: the poller has had its answer and retried.
      await sleep(7_000);
      expect(e2e.telegram.confirmedOffset).toBeLessThanOrEqual(update.update_id);
      expect(e2e.sentTo(DM.id).map(textOf)).toEqual(["echo: before"]);
    } finally {
      wake();
    }
    await e2e.waitForSent(DM.id, 2, 60_000);
    await waitUntil(() => e2e!.telegram.confirmedOffset > update.update_id, "the update to be confirmed once stored", 30_000);
    await sleep(1_000);
    expect(e2e.sentTo(DM.id).map(textOf)).toEqual(["echo: before", "echo: while frozen"]);
  }, 180_000);

  it("webhook: the update is answered with an error while the replicas are frozen, then taken and answered once", async () => {
    e2e = await startTelegramE2e({ env: env(), webhookSecret: SECRET });
    const url = e2e.webhookUrl!;
    const dm = (updateId: number, messageId: number, text: string): Update => ({
      update_id: updateId,
      message: { message_id: messageId, date: Math.floor(Date.now() / 1000), chat: DM, from: ADA, text },
    });
    expect((await e2e.telegram.postWebhook(url, dm(900_001, 9_001, "before"), SECRET)).status).toBe(200);
    await e2e.waitForSent(DM.id, 1, 60_000);
    const wake = await freezeReplicas();
    try {
      const refused = await e2e.telegram.postWebhook(url, dm(900_002, 9_002, "while frozen"), SECRET);
      expect(refused.status).toBeGreaterThanOrEqual(500);
    } finally {
      wake();
    }
    await setup.waitForReplicas(2);
    // Telegram delivers it again; now it is stored, confirmed and answered — once.
    expect((await e2e.telegram.postWebhook(url, dm(900_002, 9_002, "while frozen"), SECRET)).status).toBe(200);
    await e2e.waitForSent(DM.id, 2, 60_000);
    await sleep(1_500);
    expect(e2e.sentTo(DM.id).map(textOf)).toEqual(["echo: before", "echo: while frozen"]);
  }, 180_000);
});
