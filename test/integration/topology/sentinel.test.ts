/**
 * The pipeline (ingress, BullMQ queues, worker, delivery) on a real Sentinel setup: a master,
 * two replicas, three sentinels (test/helpers/redis-sentinel.ts). The rule under test: a message
 * is acknowledged to its platform only once a replica holds it (WAIT, REDIS_MIN_REPLICAS_ACK,
 * 1 by default with Sentinel), so a failover — the master killed, or frozen past the sentinels'
 * down-after — loses no acknowledged message, and none is answered twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReplicasBehindError } from "../../../src/gateway/ingress.js";
import { redisResults } from "../../../src/doctor/doctor.js";
import { formatResult } from "../../../src/doctor/check.js";
import type { InboundMessage, SubmitResult } from "../../../src/core/channel.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { DOWN_AFTER_MS, startSentinelSetup, type SentinelSetup } from "../../helpers/redis-sentinel.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Counts every message id across the replies: a message answered twice shows as 2. */
function answerCounts(adapter: RecordingAdapter): Map<string, number> {
  const counts = new Map<string, number>();
  for (const id of adapter.answeredIds()) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

describe("Redis Sentinel: failover under a running chat", () => {
  let setup: SentinelSetup;
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  /** Ids whose submit resolved (accepted or duplicate): what a platform counts as delivered. */
  const acknowledged = new Set<string>();
  /** Ids the test offered (some only once their platform retried). */
  const offered = new Set<string>();
  const failures: unknown[] = [];

  /**
   * Plays a platform: sends until the ingress acknowledges, each attempt with a deadline, as
   * the adapters do (Telegram re-offers an unconfirmed update, Discord's intake retries).
   */
  const deliver = async (message: InboundMessage): Promise<void> => {
    offered.add(message.messageId);
    // Generous: the failover itself takes seconds, and these files share two loaded CPUs.
    const giveUpAt = Date.now() + 150_000;
    while (Date.now() < giveUpAt) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("submit attempt timed out")), 10_000);
      });
      try {
        const result: SubmitResult = await Promise.race([adapter.submit(message), deadline]);
        if (result.status === "accepted" || result.status === "duplicate") {
          acknowledged.add(message.messageId);
          return;
        }
        throw new Error(`unexpected ${result.status}`);
      } catch (error) {
        failures.push(error);
        await sleep(500);
      } finally {
        clearTimeout(timer);
      }
    }
    throw new Error(`${message.messageId} was never acknowledged (last: ${String(failures[failures.length - 1])})`);
  };
  const message = (index: number) => inbound({ chatId: `c${index % 3}`, messageId: `s-${index}`, text: `m${index}` });

  beforeAll(async () => {
    setup = await startSentinelSetup();
    llm = await startFakeLlm();
    llm.setHandler((request) => {
      const users = request.body.messages.filter((entry) => entry.role === "user");
      return { text: `ack ${String(users[users.length - 1]?.content)}`, delayMs: 150 };
    });
    // REDIS_URL points nowhere useful: with REDIS_SENTINELS set, the sentinels name the master.
    pipeline = await startPipeline(testConfig({
      REDIS_URL: "redis://127.0.0.1:1", REDIS_SENTINELS: setup.sentinels, REDIS_SENTINEL_MASTER: setup.master,
      LLM_BASE_URL: llm.url, JOB_LOCK_MS: "2000",
    }), [adapter]);
  }, 120_000);

  afterAll(async () => {
    await pipeline?.close();
    await llm?.close();
    await setup?.dispose();
  });

  it("doctor: the sentinels agree, the replicas the ingress waits for are online, the master keeps what it acknowledges", async () => {
    const doctor = async (overrides: Record<string, string> = {}) => (await redisResults(testConfig({
      REDIS_URL: "redis://127.0.0.1:1", REDIS_SENTINELS: setup.sentinels, REDIS_SENTINEL_MASTER: setup.master, ...overrides,
    }), 5_000)).map((result) => formatResult(result, { color: false }));
    const masterPort = await setup.masterPort();
    const healthy = await doctor();
    expect(healthy.filter((line) => !line.startsWith("ok"))).toEqual([]);
    expect(healthy.join("\n")).toContain(`3 of 3 sentinels agree: master "${setup.master}" is 127.0.0.1:${masterPort}`);
    expect(healthy.join("\n")).toContain("2 replicas online; the ingress waits for 1 to confirm each message");
    expect(healthy.join("\n")).toMatch(/AOF on, fsync every second/);
    expect(healthy.join("\n")).toMatch(/maxmemory-policy noeviction/);

    expect((await doctor({ REDIS_MIN_REPLICAS_ACK: "2" })).filter((line) => !line.startsWith("ok"))).toEqual([
      expect.stringMatching(/^WARN.*2 replicas online, exactly REDIS_MIN_REPLICAS_ACK=2: after a failover the ingress refuses messages/),
    ]);
    expect((await doctor({ REDIS_MIN_REPLICAS_ACK: "3" })).filter((line) => !line.startsWith("ok"))).toEqual([
      expect.stringMatching(/^FAIL.*2 replicas online, fewer than REDIS_MIN_REPLICAS_ACK=3: the ingress would acknowledge no message/),
    ]);
    expect((await doctor({ REDIS_SENTINEL_MASTER: "elsewhere" })).filter((line) => !line.startsWith("ok"))).toEqual([
      expect.stringMatching(/^FAIL.*monitor no master named "elsewhere"/),
    ]);
    const sentinel = setup.sentinelNodes[0]!;
    await sentinel.kill();
    try {
      expect((await doctor()).filter((line) => !line.startsWith("ok"))).toEqual([
        expect.stringMatching(new RegExp(`^WARN.*1 of 3 sentinels did not answer \\(127\\.0\\.0\\.1:${sentinel.port}: connection refused\\): a failover needs a majority`)),
      ]);
    } finally {
      await sentinel.start();
    }
  });

  it("chats through the master the sentinels name", async () => {
    for (let index = 0; index < 3; index++) await deliver(message(index));
    await adapter.waitFor(() => answerCounts(adapter).size === 3, 60_000);
    expect([...answerCounts(adapter).keys()].sort()).toEqual(["s-0", "s-1", "s-2"]);
    for (const entry of adapter.sent) for (const id of entry.reply.inReplyTo) expect(entry.reply.text).toContain(`m${id.slice(2)}`);
  });

  it("acknowledges nothing while no replica confirms it (WAIT 1 by default), and answers it once when one does", async () => {
    const masterPort = await setup.masterPort();
    const others = setup.nodes.filter((node) => node.port !== masterPort);
    for (const node of others) node.pause();
    try {
      await expect(adapter.submit(message(3))).rejects.toBeInstanceOf(ReplicasBehindError);
    } finally {
      for (const node of others) node.resume();
    }
    expect(acknowledged.has("s-3")).toBe(false);
    // The platform offers it again: now a replica confirms, and it is acknowledged (a duplicate
    // of the stored copy, which the worker answers once).
    await deliver(message(3));
    await adapter.waitFor(() => answerCounts(adapter).has("s-3"), 60_000);
    expect(answerCounts(adapter).get("s-3")).toBe(1);
  });

  const chatThrough = async (first: number, fault: () => Promise<void>): Promise<void> => {
    const sends: Array<Promise<void>> = [];
    let next = first;
    for (; next < first + 6; next++) {
      sends.push(deliver(message(next)));
      await sleep(80);
    }
    // Turns are in flight now: the fault strikes under them, and the chat keeps going.
    const faulted = fault();
    for (; next < first + 14; next++) {
      sends.push(deliver(message(next)));
      await sleep(150);
    }
    await faulted;
    await Promise.all(sends);
  };

  const expectEveryAcknowledgedAnsweredOnce = async () => {
    const ids = [...offered].sort();
    expect([...acknowledged].sort()).toEqual(ids);
    await adapter.waitFor(() => ids.every((id) => answerCounts(adapter).has(id)), 90_000);
    const counts = answerCounts(adapter);
    expect(ids.filter((id) => counts.get(id) !== 1)).toEqual([]);
    const replyIds = adapter.sent.map((entry) => entry.reply.replyId);
    expect(new Set(replyIds).size).toBe(replyIds.length);
  };

  it("the master killed (SIGKILL) mid-chat: 0 acknowledged messages lost, 0 answered twice", async () => {
    const formerPort = await setup.masterPort();
    await chatThrough(4, async () => {
      await setup.nodeAt(formerPort).kill();
      await setup.waitForFailover(formerPort);
    });
    await expectEveryAcknowledgedAnsweredOnce();
    // The dead host comes back (its supervisor restarts it) and the sentinels make it a replica.
    await setup.nodeAt(formerPort).start();
    await setup.waitForReplicas(2);
  }, 180_000);

  it("the master frozen (SIGSTOP) past the sentinels' down-after mid-chat: 0 lost, 0 answered twice", async () => {
    const formerPort = await setup.masterPort();
    const frozen = setup.nodeAt(formerPort);
    await chatThrough(18, async () => {
      frozen.pause();
      try {
        await setup.waitForFailover(formerPort);
        // Past the failover: the frozen master's clients have moved on; it wakes as a stale master.
        await sleep(DOWN_AFTER_MS);
      } finally {
        frozen.resume();
      }
    });
    await expectEveryAcknowledgedAnsweredOnce();
    await setup.waitForReplicas(2);
  }, 180_000);
});
