/**
 * A reply read from a stale master and fenced on the new one: the one message answered twice in
 * cluster-failover.test.ts's frozen-master case (1 run in 39). The session's master frozen past
 * its failover and woken answers from its own copy for a moment: a turn's commit lands there
 * (its replica is the new master now, so it never gets it) and the delivery's BEGIN_DELIVERY
 * reads that reply back. By the delivery's fence the connection has followed the failover — a
 * Cluster client's slot map names the new master, a Sentinel client reconnected — so the fence's
 * lease renewal and WAIT went to the new master: the lease is free there (the begin never reached
 * it), HEARTBEAT takes it, a replica confirms, and the reply was sent; the new master then ran
 * the turn again and that answer was sent too.
 *
 * Played here with real servers and the switch made by hand: the stale master (no replica) and
 * the new master (with a replica, as the old master becomes once demoted), and the delivery's
 * connection moving from the first to the second right after BEGIN_DELIVERY answered — the
 * moment a slot map or a reconnect may change under a delivery.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OutboundReply } from "../../../src/core/channel.js";
import { turnStages, type StageMark } from "../../../src/core/stages.js";
import { startDeliveryWorker } from "../../../src/gateway/delivery.js";
import { createProducers, createRedis, type Redis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { uniquePrefix } from "../../helpers/config.js";
import { captureLogs } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { following } from "../../helpers/following-connection.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { claimed } from "../../helpers/session.js";
import { sleep } from "../../helpers/stall-run.js";

const SESSION = "console:stale";

describe("a delivery whose outbox head a stale master answered", () => {
  let staleServer: RedisServerHandle;
  let newServer: RedisServerHandle;
  let replicaServer: RedisServerHandle;
  const clients: Redis[] = [];

  beforeAll(async () => {
    [staleServer, newServer, replicaServer] = await Promise.all([startRedisServer(), startRedisServer(), startRedisServer()]);
    const replica = createRedis(replicaServer.url);
    clients.push(replica);
    await replica.replicaof("127.0.0.1", newServer.port);
    while (!/master_link_status:up/.test(await replica.info("replication"))) await sleep(50);
  }, 60_000);

  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await Promise.all([staleServer, newServer, replicaServer].map((server) => server?.dispose()));
  });

  it("sends nothing the new master does not hold: the message is answered once, by the turn the new master runs", async () => {
    const prefix = uniquePrefix();
    const [stale, fresh] = [createRedis(staleServer.url), createRedis(newServer.url)];
    clients.push(stale, fresh);
    const staleStore = new SessionStore(stale, prefix);
    const newStore = new SessionStore(fresh, prefix);
    const message = inbound({ text: "m1", messageId: "m1", sessionKey: SESSION });
    const answer = (text: string): OutboundReply => ({
      replyId: `${SESSION}#1#0`, sessionKey: SESSION, target: { platform: "console", chatId: message.chatId }, text, inReplyTo: ["m1"], kind: "answer",
    });
    const commit = async (store: SessionStore, token: string, text: string) => {
      const turn = claimed(await store.beginTurn(SESSION, token, { leaseMs: 10_000, mode: "all" }));
      const ended = await store.endTurn(SESSION, turn.claim, { state: turn.state, transcript: [{ id: "m1", role: "user", content: "m1" }], outbox: [answer(text)] });
      expect(ended).toMatchObject({ status: "committed", outbox: 1 });
    };
    // Both masters hold m1 waiting; the stale one also the commit that answered it, which the new one never got.
    await staleStore.appendInbox(message, 0);
    await newStore.appendInbox(message, 0);
    await commit(staleStore, "turn-on-stale", "answer from the lost commit");

    const { connection, switchOver } = following(stale, fresh);
    const adapter = new RecordingAdapter("console");
    const logs = captureLogs("warn");
    const producers = createProducers(fresh, prefix);
    const delivery = startDeliveryWorker({
      redisAddress: newServer.url, prefix, store: new SessionStore(connection, prefix), producers, adapters: new Map([["console", adapter]]),
      concurrency: 1, lockMs: 30_000, leaseMs: 30_000, logger: logs.logger, minReplicasAck: 1, replicaAckTimeoutMs: 1_000,
    });
    let begun = 0;
    const onStage = (mark: unknown) => {
      const { stage, sessionKey } = mark as StageMark;
      // The stale master answered BEGIN_DELIVERY; from now on the connection reaches the new master.
      if (stage === "delivery-begun" && sessionKey === SESSION && begun++ === 0) switchOver();
    };
    turnStages.subscribe(onStage);
    try {
      await producers.enqueueDelivery(SESSION, "console");
      // The first attempt: it sends the stale reply, or its fence fails (`delivery-failed`).
      const firstDone = Date.now() + 15_000;
      while (adapter.sent.length === 0 && !logs.lines.some((line) => line.includes("delivery-failed")) && Date.now() < firstDone) await sleep(20);
      expect(begun).toBeGreaterThan(0);

      // The new master's turn answers m1 (its claim's lease ran out), and its reply is delivered.
      await commit(newStore, "turn-on-new", "answer from the new master");
      await producers.enqueueDelivery(SESSION, "console");
      await adapter.waitFor((sent) => sent.some((entry) => entry.reply.text === "answer from the new master"), 20_000);
      await sleep(500);
      expect(adapter.sent.map((entry) => entry.reply.text)).toEqual(["answer from the new master"]);
      expect(await fresh.llen(newStore.keys(SESSION).outbox)).toBe(0);
    } finally {
      turnStages.unsubscribe(onStage);
      await delivery.close();
      await producers.close();
    }
  }, 60_000);
});
