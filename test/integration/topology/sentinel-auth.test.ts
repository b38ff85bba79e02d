/**
 * Sentinel with passwords, as a production setup has them: the data nodes with a requirepass
 * (REDIS_URL's password), the sentinels with their own (REDIS_SENTINEL_PASSWORD). Every
 * connection — the pipeline's, BullMQ's duplicates, the doctor's — must authenticate to both
 * kinds, before and after a failover (the sentinels' failover detector and the re-resolve of
 * the master ask the sentinels again).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatResult } from "../../../src/doctor/check.js";
import { redisResults } from "../../../src/doctor/doctor.js";
import { runAdmin } from "../../../src/cli/admin-commands.js";
import { withConfiguredRedis } from "../../../src/cli/redis.js";
import type { InboundMessage } from "../../../src/core/channel.js";
import { RetryableError } from "../../../src/errors.js";
import { ReplicasBehindError } from "../../../src/gateway/ingress.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig, uniquePrefix } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { startSentinelSetup, type SentinelSetup } from "../../helpers/redis-sentinel.js";

const DATA_PASSWORD = "data-pw-3141";
const SENTINEL_PASSWORD = "sentinel-pw-2718";

describe("Redis Sentinel with a requirepass on the data nodes and on the sentinels", () => {
  let setup: SentinelSetup;
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");
  const prefix = uniquePrefix("sentinel-auth");
  const env = (overrides: Record<string, string> = {}) => ({
    REDIS_URL: `redis://:${DATA_PASSWORD}@127.0.0.1:1`, REDIS_SENTINELS: setup.sentinels, REDIS_SENTINEL_MASTER: setup.master,
    REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD, REDIS_PREFIX: prefix, ...overrides,
  });
  /** As a platform does: offers the message until the ingress takes it (a failover refuses it for a moment), then waits for its answer. */
  const ask = async (message: InboundMessage, timeoutMs: number): Promise<string> => {
    const deadline = Date.now() + timeoutMs;
    const before = adapter.sent.length;
    for (;;) {
      try {
        await adapter.submit(message);
        break;
      } catch (error) {
        if (!(error instanceof ReplicasBehindError) && !(error instanceof RetryableError) || Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
    await adapter.waitFor((sent) => sent.slice(before).some((entry) => entry.reply.inReplyTo.includes(message.messageId)), Math.max(1_000, deadline - Date.now()));
    return adapter.sent.slice(before).find((entry) => entry.reply.inReplyTo.includes(message.messageId))!.reply.text;
  };
  const doctor = async (overrides: Record<string, string> = {}) =>
    (await redisResults(testConfig(env(overrides)), 5_000)).map((result) => formatResult(result, { color: false }));

  beforeAll(async () => {
    setup = await startSentinelSetup({ password: DATA_PASSWORD, sentinelPassword: SENTINEL_PASSWORD });
    llm = await startFakeLlm();
    llm.setHandler((request) => {
      const users = request.body.messages.filter((entry) => entry.role === "user");
      return { text: `ack ${String(users[users.length - 1]?.content)}` };
    });
    pipeline = await startPipeline(testConfig({ ...env(), LLM_BASE_URL: llm.url, JOB_LOCK_MS: "2000" }), [adapter]);
  }, 120_000);
  afterAll(async () => {
    await pipeline?.close();
    await llm?.close();
    await setup?.dispose();
  });

  it("npm run doctor: every line ok with both passwords; a wrong sentinel password is a failure naming it", async () => {
    const healthy = await doctor();
    expect(healthy.filter((line) => !line.startsWith("ok"))).toEqual([]);
    expect(healthy.join("\n")).toContain("3 of 3 sentinels agree");
    const wrong = await doctor({ REDIS_SENTINEL_PASSWORD: "not-it" });
    expect(wrong.filter((line) => line.startsWith("FAIL")).join("\n")).toMatch(/no sentinel answered.*refused the password/);
  });

  it("chats through the master, and again after the master is killed and the sentinels fail over", async () => {
    expect(await ask(inbound({ chatId: "a", messageId: "p-1", text: "first" }), 60_000)).toContain("first");
    const formerPort = await setup.masterPort();
    await setup.nodeAt(formerPort).kill();
    await setup.waitForFailover(formerPort);
    expect(await ask(inbound({ chatId: "a", messageId: "p-2", text: "second" }), 90_000)).toContain("second");
    expect(await ask(inbound({ chatId: "b", messageId: "p-3", text: "third" }), 60_000)).toContain("third");
    // The old master comes back; the sentinels (auth-pass) make it a replica of the new one.
    await setup.nodeAt(formerPort).start();
    await setup.waitForReplicas(2);
    expect(pipeline.logs.lines.filter((line) => /NOAUTH|WRONGPASS|invalid password/i.test(line))).toEqual([]);
  }, 180_000);

  it("npm run admin -- sessions, as its process runs it (a new connection through the sentinels), lists both chats on the new master", async () => {
    const config = testConfig(env());
    let out = "";
    const code = await withConfiguredRedis(config, (redis) => runAdmin({ redis, config, now: Date.now(), write: (text) => (out += text) }, ["sessions"]));
    expect(code).toBe(0);
    expect(out).toContain("console:a");
    expect(out).toContain("console:b");
  });
});
