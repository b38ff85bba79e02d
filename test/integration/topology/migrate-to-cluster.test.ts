/**
 * `npm run admin -- migrate-to-cluster OLD_REDIS_URL`: a deployment that ran on one Redis — chats
 * with their sessions, a reply waiting for its platform (outbox entry and delivery job, delayed
 * after failed sends), a reminder not yet due (a delayed BullMQ job) — is stopped, copied onto a
 * real 3-master Cluster, and started there: the reply is delivered, the reminder rings, and the
 * chats go on with their history.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdmin } from "../../../src/cli/admin-commands.js";
import { clusterKeyName } from "../../../src/cli/migrate-to-cluster.js";
import type { OutboundReply } from "../../../src/core/channel.js";
import { RetryableError } from "../../../src/errors.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import type { SendOptions } from "../../../src/adapters/channel-adapter.js";
import { startFakeLlm, textOf, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { startRedisCluster, type RedisClusterHandle } from "../../helpers/redis-cluster.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";
import { remindMePlan, schedulingModel } from "../../helpers/schedule.js";

/** A platform that is down while `down` is set: every send fails as a network error would. */
class FlakyAdapter extends RecordingAdapter {
  down = false;
  override async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    if (this.down) throw new RetryableError("platform unreachable");
    return super.send(reply, options);
  }
}

describe("npm run admin -- migrate-to-cluster", () => {
  let single: RedisServerHandle;
  let cluster: RedisClusterHandle;
  let llm: FakeLlm;
  let clusterClient: Redis;
  let pipeline: Pipeline | undefined;
  const prefix = `mig${Date.now().toString(36)}`;
  const onSingle = () => testConfig({ REDIS_URL: single.url, REDIS_PREFIX: prefix, LLM_BASE_URL: llm.url });
  const onCluster = () => testConfig({ REDIS_URL: "redis://127.0.0.1:1", REDIS_CLUSTER_NODES: cluster.nodeList, REDIS_PREFIX: prefix, LLM_BASE_URL: llm.url });
  const admin = async (argv: string[]) => {
    let out = "";
    const code = await runAdmin({ redis: clusterClient, config: onCluster(), now: Date.now(), write: (text) => (out += text) }, argv);
    return { code, out };
  };

  beforeAll(async () => {
    [single, cluster, llm] = await Promise.all([startRedisServer({ appendOnly: true }), startRedisCluster(), startFakeLlm()]);
    llm.setHandler(schedulingModel(remindMePlan));
    clusterClient = createRedis({ kind: "cluster", nodes: cluster.nodes.map((node) => ({ host: "127.0.0.1", port: node.port })) });
  }, 120_000);
  afterAll(async () => {
    await pipeline?.close();
    clusterClient?.disconnect();
    await llm?.close();
    await cluster?.dispose();
    await single?.dispose();
  });

  it("names BullMQ's keys with their queue's hash tag, every other key as it was", () => {
    expect(clusterKeyName("lh", "lh:turns:wait")).toBe("lh:{turns}:turns:wait");
    expect(clusterKeyName("lh", "lh:deliveries-telegram:42")).toBe("lh:{deliveries-telegram}:deliveries-telegram:42");
    expect(clusterKeyName("lh", "lh:schedule:delayed")).not.toBe("lh:schedule:delayed");
    expect(clusterKeyName("lh", "lh:{tg:1}:inbox")).toBe("lh:{tg:1}:inbox");
    expect(clusterKeyName("lh", "lh:turnsx:wait")).toBe("lh:turnsx:wait");
  });

  it("a deployment with sessions, a queued reply and a pending reminder moves onto the Cluster and goes on there", async () => {
    // On one Redis: two chats, a reminder set for later, and a reply its platform cannot take yet.
    const before = new FlakyAdapter("console");
    pipeline = await startPipeline(onSingle(), [before]);
    expect(await before.ask(inbound({ chatId: "a", text: "hello, I am Ada" }), 60_000)).toContain("hello, I am Ada");
    const confirmation = await before.ask(inbound({ chatId: "b", text: "remind me in 40s to water the plants" }), 60_000);
    expect(confirmation).toMatch(/^Done\. Scheduled r1, a reminder: “water the plants”/);
    before.down = true;
    await before.submit(inbound({ chatId: "a", text: "are you still there?" }));
    const singleClient = createRedis(single.url);
    try {
      const outbox = `${prefix}:{console:a}:outbox`;
      for (let waited = 0; (await singleClient.llen(outbox)) === 0; waited += 100) {
        if (waited > 60_000) throw new Error("the reply never reached the outbox");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    } finally {
      singleClient.disconnect();
    }

    // Refused while the bot runs: its connections are on the source.
    const refused = await admin(["migrate-to-cluster", single.url]);
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/^Refused: \d+ longhaul connection\(s\) on the source .*stop every gateway and worker first/);

    await pipeline.close();
    pipeline = undefined;
    expect(before.sent.map((entry) => entry.reply.text).join("\n")).not.toContain("Reminder");

    const migrated = await admin(["migrate-to-cluster", single.url]);
    expect(migrated.code).toBe(0);
    expect(migrated.out).toMatch(/^Copied [1-9]\d* key\(s\) of mig\w+ to the Cluster \([1-9]\d* BullMQ key\(s\) under their queue's hash tag\)/);
    // A second run finds the prefix taken: nothing is copied over what the Cluster holds.
    const again = await admin(["migrate-to-cluster", single.url]);
    expect(again).toEqual({ code: 1, out: expect.stringMatching(/^Refused: the Cluster already holds keys of REDIS_PREFIX/) });

    // On the Cluster: the waiting reply is delivered, the reminder rings, the chats remember.
    const after = new RecordingAdapter("console");
    pipeline = await startPipeline(onCluster(), [after]);
    const texts = () => after.sent.map((entry) => entry.reply.text);
    await after.waitFor(() => texts().some((text) => text.includes("are you still there?")), 60_000);
    await after.waitFor(() => texts().includes("⏰ Reminder: water the plants"), 120_000);
    const requests = llm.requests.length;
    expect(await after.ask(inbound({ chatId: "a", text: "what did I say first?" }), 60_000)).toContain("what did I say first?");
    const lastRequest = llm.requests[requests]!.body.messages.map((message) => textOf(message.content)).join("\n");
    expect(lastRequest).toContain("hello, I am Ada");
    expect(lastRequest).toContain("are you still there?");
    let sessions = "";
    await runAdmin({ redis: clusterClient, config: onCluster(), now: Date.now(), write: (text) => (sessions += text) }, ["sessions"]);
    expect(sessions).toContain("console:a");
    expect(sessions).toContain("console:b");
    // Each answer once: nothing delivered on one Redis is delivered again on the Cluster.
    expect(texts().filter((text) => text.includes("hello, I am Ada"))).toEqual([]);
    expect(texts().filter((text) => text.includes("are you still there?"))).toHaveLength(1);
    expect(texts().filter((text) => text === "⏰ Reminder: water the plants")).toHaveLength(1);
  }, 300_000);
});
