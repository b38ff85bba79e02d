import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { httpError, startFakeLlm, withoutStamp, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp } from "../helpers/app-process.js";
import { TEST_API_KEY, testConfig, testEnv } from "../helpers/config.js";
import { captureLogs, startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../helpers/recording-adapter.js";
import { SessionStore } from "../../src/session/store.js";
import { createRedis } from "../../src/queue/index.js";

describe("LLM faults", () => {
  let llm: FakeLlm;
  let pipeline: Pipeline;
  let adapter: RecordingAdapter;
  let prefix: string;

  beforeEach(async () => {
    llm = await startFakeLlm();
    adapter = new RecordingAdapter("console");
    const config = testConfig({ LLM_BASE_URL: llm.url, LLM_TIMEOUT_MS: "700", LLM_MAX_RETRIES: "2" });
    prefix = config.REDIS_PREFIX;
    pipeline = await startPipeline(config, [adapter], { logs: captureLogs("debug", [TEST_API_KEY]) });
  });
  afterEach(async () => {
    await pipeline.close();
    await llm.close();
  });

  it("retries a 429 after its retry-after and answers", async () => {
    llm.enqueue(httpError.rateLimit({ retryAfterSeconds: 1 }));
    await adapter.submit(inbound({ text: "patience" }));
    await adapter.waitFor((sent) => sent.length === 1);
    expect(adapter.sent[0]?.reply.text).toBe("echo: patience");
    expect(llm.requests).toHaveLength(2);
    expect(llm.requests[1]!.at - llm.requests[0]!.at).toBeGreaterThanOrEqual(900);
  });

  it("retries a 500 and a timeout, then answers", async () => {
    llm.enqueue(httpError.server(500), { hang: true });
    await adapter.submit(inbound({ text: "still there?" }));
    await adapter.waitFor((sent) => sent.length === 1);
    expect(adapter.sent[0]?.reply.text).toBe("echo: still there?");
    expect(llm.requests).toHaveLength(3);
  });

  it("tells the user clearly on a permanent failure and keeps the session intact", async () => {
    llm.enqueue(httpError.unauthorized(`Incorrect API key provided: ${TEST_API_KEY}.`));
    const first = inbound({ text: "remember the number 42" });
    await adapter.submit(first);
    await adapter.waitFor((sent) => sent.length === 1);
    expect(adapter.sent[0]?.reply.kind).toBe("notice");
    expect(adapter.sent[0]?.reply.text).toMatch(/^Sorry — I couldn't get an answer from the model .*Your message is saved/);
    expect(adapter.sent[0]?.reply.text).not.toContain(TEST_API_KEY);
    expect(llm.requests).toHaveLength(1);

    const redis = createRedis(testConfig().REDIS_URL!);
    try {
      const store = new SessionStore(redis, prefix);
      const transcript = await store.readTranscript(first.sessionKey);
      expect(transcript.map((message) => withoutStamp(message.content ?? ""))).toEqual(["remember the number 42"]);
    } finally {
      redis.disconnect();
    }

    await adapter.submit(inbound({ text: "what number?" }));
    await adapter.waitFor((sent) => sent.length === 2);
    expect(adapter.sent[1]?.reply.text).toBe("echo: what number?");
    const users = llm.requests[1]!.body.messages.filter((message) => message.role === "user").map((message) => withoutStamp(String(message.content)));
    expect(users).toEqual(["remember the number 42", "what number?"]);
    // Neither the reply nor any log line carries the key the server quoted back.
    expect(pipeline.logs.lines.join("")).not.toContain(TEST_API_KEY);
  });
});

describe("secrets in logs", () => {
  it("never writes the API key, even at debug level and when the provider quotes it", async () => {
    const llm = await startFakeLlm();
    try {
      llm.enqueue(httpError.unauthorized(`Incorrect API key provided: ${TEST_API_KEY}.`));
      const app = spawnApp(testEnv({ LLM_BASE_URL: llm.url, CONSOLE: "auto", LOG_LEVEL: "trace", TELEGRAM_WEBHOOK_SECRET: "webhook-SECRET-value" }));
      app.child.stdin.end("hello\n");
      expect(await app.exited()).toBe(0);
      expect(app.stdout()).toMatch(/Sorry/);
      expect(app.stderr()).toContain("turn-failed");
      for (const secret of [TEST_API_KEY, "webhook-SECRET-value"]) {
        expect(app.stderr()).not.toContain(secret);
        expect(app.stdout()).not.toContain(secret);
      }
    } finally {
      await llm.close();
    }
  });
});
