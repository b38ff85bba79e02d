import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { testConfig } from "../helpers/config.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../helpers/recording-adapter.js";
import { startRedisServer, type RedisServerHandle } from "../helpers/redis-server.js";

describe("Redis stopped and restarted (AOF on) during a stream of messages", () => {
  let redis: RedisServerHandle;
  let llm: FakeLlm;
  let pipeline: Pipeline;
  const adapter = new RecordingAdapter("console");

  beforeAll(async () => {
    redis = await startRedisServer({ appendOnly: true });
    llm = await startFakeLlm();
    llm.setHandler((request) => {
      const users = request.body.messages.filter((message) => message.role === "user");
      return { text: `ack ${String(users[users.length - 1]?.content)}`, delayMs: 150 };
    });
    pipeline = await startPipeline(testConfig({ REDIS_URL: redis.url, LLM_BASE_URL: llm.url, JOB_LOCK_MS: "2000" }), [adapter]);
  });

  afterAll(async () => {
    await pipeline?.close();
    await llm?.close();
    await redis?.dispose();
  });

  it("answers every message exactly once", async () => {
    const ids: string[] = [];
    const send = async (index: number) => {
      const message = inbound({ chatId: `c${index % 3}`, messageId: `r-${index}`, text: `m${index}` });
      ids.push(message.messageId);
      const result = await adapter.submit(message);
      expect(result.status).toBe("accepted");
    };
    for (let index = 0; index < 12; index++) {
      await send(index);
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    // Turns are in flight now: stop Redis under them, keep sending, bring it back.
    await redis.stop();
    const during = Promise.all([12, 13, 14].map((index) => send(index)));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await redis.start();
    await during;
    for (let index = 15; index < 24; index++) {
      await send(index);
      await new Promise((resolve) => setTimeout(resolve, 60));
    }
    // A second outage between turns.
    await adapter.waitFor((sent) => new Set(sent.flatMap((entry) => entry.reply.inReplyTo)).size === 24, 60_000);
    await redis.restart();
    await send(24);
    await adapter.waitFor((sent) => new Set(sent.flatMap((entry) => entry.reply.inReplyTo)).size === 25, 60_000);

    const answered = adapter.answeredIds();
    expect(answered.sort()).toEqual([...ids].sort());
    const replyIds = adapter.sent.map((entry) => entry.reply.replyId);
    expect(new Set(replyIds).size).toBe(replyIds.length);
  });
});
