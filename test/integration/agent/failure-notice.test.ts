/**
 * When the model fails for good: the chat gets a plain notice (never the provider's or the
 * connection's own words, which name hosts and addresses), the log gets the detail, and what
 * the batch did before the failure — a `/new` — stays done.
 */
import { describe, expect, it } from "vitest";
import { echo, httpError, lastUserText, startFakeLlm, withoutStamp } from "../../fakes/fake-llm.js";
import { createRedis } from "../../../src/queue/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { testConfig } from "../../helpers/config.js";
import { captureLogs, startPipeline } from "../../helpers/pipeline.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";

const PROVIDER_TEXT = "upstream connect error to 10.20.30.40:443 (llm-backend.internal.example)";

describe("a turn that fails for good", () => {
  it("tells the chat without the provider's text, and logs that text", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    llm.enqueue(httpError.badRequest(PROVIDER_TEXT));
    const adapter = new RecordingAdapter("console");
    const logs = captureLogs("info");
    const pipeline = closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: llm.url }), [adapter], { logs }));
    await adapter.submit(inbound({ text: "hello?", messageId: "f1" }));
    await adapter.waitFor((sent) => sent.length === 1);
    const notice = adapter.sent[0]!.reply.text;
    expect(notice).toMatch(/^Sorry — I couldn't get an answer from the model .*Your message is saved/);
    for (const leak of ["10.20.30.40", "llm-backend", "upstream"]) expect(notice).not.toContain(leak);
    expect(logs.lines.join("")).toContain("10.20.30.40");
  });

  it("keeps the /new of a batch [/new, hi] whose chat part failed", async () => {
    const llm = closeAfterTest(await startFakeLlm());
    const adapter = new RecordingAdapter("console");
    const config = testConfig({ LLM_BASE_URL: llm.url });
    const pipeline = closeAfterTest(await startPipeline(config, [adapter]));
    await adapter.submit(inbound({ text: "remember: old topic", messageId: "n1" }));
    await adapter.waitFor((sent) => sent.length === 1);
    // Hold the model so that /new and hi arrive together in one batch, then fail it for good.
    const gate = llm.hold();
    await adapter.submit(inbound({ text: "something in between", messageId: "n2" }));
    await llm.waitForRequests(2);
    llm.setHandler((request) => (lastUserText(request) === "hi" ? httpError.unauthorized() : echo(request)));
    await adapter.submit(inbound({ text: "/new", messageId: "n3" }));
    await adapter.submit(inbound({ text: "hi", messageId: "n4" }));
    gate.release();
    await adapter.waitFor((sent) => sent.length === 4);
    expect(adapter.sent.map((entry) => entry.reply.text.slice(0, 40))).toEqual([
      "echo: remember: old topic",
      "echo: something in between",
      "Started a new conversation. The previous",
      "Sorry — I couldn't get an answer from th",
    ]);
    const redis = createRedis(config.REDIS_URL!);
    try {
      const store = new SessionStore(redis, config.REDIS_PREFIX);
      const state = await store.load("console:chat-1");
      // The fresh session holds "hi" (kept, unanswered); the old conversation is archived.
      expect(state.live.filter((message) => message.role === "user").map((message) => withoutStamp(message.content ?? ""))).toEqual(["hi"]);
      expect((await store.readTranscript("console:chat-1")).map((message) => withoutStamp(message.content ?? ""))).toEqual(["hi"]);
      const archives = await redis.keys(`${config.REDIS_PREFIX}:{console:chat-1}:archive:*`);
      expect(archives.filter((key) => !key.endsWith(":index"))).toHaveLength(1);
      expect((await redis.lrange(archives.find((key) => !key.endsWith(":index"))!, 0, -1)).join("")).toContain("remember: old topic");
    } finally {
      redis.disconnect();
    }
  });
});
