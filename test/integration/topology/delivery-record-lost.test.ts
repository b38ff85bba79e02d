/**
 * A delivery's record lost with a failing master: Redis replicates asynchronously, so a master
 * can acknowledge FINISH_REPLY (the reply popped from the outbox after its send) and then lose
 * it — frozen past its failover and woken as a stale master for a moment, or killed before
 * passing it on; the new master still holds the reply and sends it again
 * (cluster-failover.test.ts's frozen master: one reply twice in about 1 run in 10). Here, on a
 * master with two replicas (Sentinel's setup, REDIS_MIN_REPLICAS_ACK=1), the replicas are
 * frozen as the part goes out, so nothing confirms the finish, and the pop is undone while it is
 * unconfirmed — what the new master would hold. The delivery writes the finish again until a
 * replica confirms it: the reply is sent once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { sessionKeys } from "../../../src/session/keys.js";
import { lastUserText, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { captureLogs, startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound } from "../../helpers/recording-adapter.js";
import { PartsPlatform } from "../../helpers/parts-platform.js";
import { startSentinelSetup, type SentinelSetup } from "../../helpers/redis-sentinel.js";
import { sleep } from "../../helpers/stall-run.js";

describe("a delivery's finish acknowledged by the master and lost", () => {
  let setup: SentinelSetup;
  let llm: FakeLlm;
  let pipeline: Pipeline | undefined;
  let master: Redis | undefined;

  beforeAll(async () => {
    setup = await startSentinelSetup();
    llm = await startFakeLlm();
    llm.setHandler((request) => ({ text: `${lastUserText(request)}:answer` }));
  }, 120_000);
  afterAll(async () => {
    master?.disconnect();
    await pipeline?.close();
    await llm?.close();
    await setup?.dispose();
  });

  it("is written again until a replica confirms it: the reply goes out once", async () => {
    const config = testConfig({
      REDIS_URL: "redis://127.0.0.1:1", REDIS_SENTINELS: setup.sentinels, REDIS_SENTINEL_MASTER: setup.master, REDIS_MIN_REPLICAS_ACK: "1", LLM_BASE_URL: llm.url,
    });
    const logs = captureLogs("warn");
    const platform = new PartsPlatform();
    pipeline = await startPipeline(config, [platform], { logs });
    const masterPort = await setup.masterPort();
    master = createRedis(`redis://127.0.0.1:${masterPort}`);
    const replicas = setup.nodes.filter((node) => node.port !== masterPort);
    const keys = sessionKeys(config.REDIS_PREFIX, inbound({ text: "" }).sessionKey);

    let before: Buffer | null = null;
    platform.hooks.afterPart = async (_part, { reply, last }) => {
      if (!last || reply.text !== "first:answer") return;
      // The part is out; what the finish is about to change, as the replicas hold it.
      before = await master!.dumpBuffer(keys.outbox);
      for (const replica of replicas) replica.pause();
    };
    await platform.submit("first", "m1");
    while (before === null || (await master.llen(keys.outbox)) > 0) await sleep(10);
    // The finish popped the reply, unconfirmed: undo it, as a new master promoted now would hold it.
    await master.restore(keys.outbox, 0, before);
    // Past the finish's WAIT (3 s): it was not confirmed (given up after 30 s: a delivery that
    // never waits for its record logs nothing, and sends the undone reply again below).
    const giveUp = Date.now() + 30_000;
    while (Date.now() < giveUp && !logs.lines.some((line) => line.includes("delivery-record-unconfirmed"))) await sleep(50);
    for (const replica of replicas) replica.resume();
    await setup.waitForReplicas(2);

    await platform.submit("second", "m2");
    while (!platform.accepted.includes("second:answer")) await sleep(50);
    expect(platform.accepted).toEqual(["first:answer", "second:answer"]);
    expect(await master.llen(keys.outbox)).toBe(0);
  }, 120_000);
});
