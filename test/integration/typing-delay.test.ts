/**
 * TYPING_DELAY_MS (issue 18): the chat's "typing…" only for turns that take a while. Observed
 * where the adapters hear it — the real worker publishes, the real gateway dispatches to a
 * RecordingAdapter's onActivity. A turn's events carry its target (the message it answers), so
 * each list below names whose they are. Activities of one worker go out on one connection in
 * order: a later turn's events arriving proves that nothing earlier is still on its way.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { httpError, startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { testConfig } from "../helpers/config.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../helpers/recording-adapter.js";
import { sleep } from "../helpers/stall-run.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { createMetrics } from "../../src/metrics.js";
import { startWorkerRole, type WorkerRole } from "../../workers/worker-role.js";

describe("TYPING_DELAY_MS: typing only for turns that take a while", () => {
  let llm: FakeLlm | undefined;
  let pipeline: Pipeline | undefined;
  let worker: WorkerRole | undefined;
  let proxy: TcpProxy | undefined;
  afterEach(async () => {
    proxy?.resume();
    await pipeline?.gateway.stopIntake();
    await worker?.close();
    await pipeline?.close();
    await proxy?.close();
    worker = undefined;
    proxy = undefined;
    await llm?.close();
    pipeline = undefined;
    llm = undefined;
  });

  async function start(env: Record<string, string>) {
    const fake = await startFakeLlm();
    llm = fake;
    const adapter = new RecordingAdapter("console");
    pipeline = await startPipeline(testConfig({ LLM_BASE_URL: fake.url, ...env }), [adapter]);
    return { adapter, llm: fake };
  }
  // The turns' own events: a message still waiting for its turn gets its typing from the gateway (test/integration/gateway/queue-wait.test.ts).
  const seen = (adapter: RecordingAdapter) => adapter.activity.filter((activity) => !activity.waiting).map((activity) => `${activity.type} ${activity.target.replyToMessageId}`);
  const until = (check: () => void) => vi.waitFor(check, { timeout: 15_000, interval: 20 });

  it("by default a turn answered at once publishes nothing; one slower than the delay publishes started, then finished, once each", async () => {
    const { adapter, llm } = await start({});
    // The process's first turn (tokenizer, scripts) may take longer than any later one: not this test's matter.
    await adapter.ask(inbound({ text: "warm up", messageId: "w0" }));
    await adapter.ask(inbound({ text: "quick", messageId: "q1" }));
    llm.enqueue({ text: "slow answer", delayMs: 1_500 });
    expect(await adapter.ask(inbound({ text: "think", messageId: "s2" }))).toBe("slow answer");
    expect(await adapter.ask(inbound({ text: "quick again", messageId: "q3" }))).toBe("echo: quick again");
    llm.enqueue({ text: "another slow answer", delayMs: 1_500 });
    await adapter.ask(inbound({ text: "think again", messageId: "s4" }));
    await until(() => expect(seen(adapter)).toContain("turn-finished s4"));
    expect(seen(adapter).filter((event) => !event.endsWith(" w0"))).toEqual(["turn-started s2", "turn-finished s2", "turn-started s4", "turn-finished s4"]);
  });

  it("a turn that fails after the delay still publishes finished", async () => {
    const { adapter, llm } = await start({ TYPING_DELAY_MS: "200" });
    const gate = llm.hold();
    llm.enqueue(httpError.badRequest("Invalid value for 'temperature'.", "temperature"));
    await adapter.submit(inbound({ text: "hello?", messageId: "f1" }));
    await until(() => expect(seen(adapter)).toEqual(["turn-started f1"]));
    gate.release();
    await adapter.waitFor((sent) => sent.length === 1);
    expect(adapter.sent[0]!.reply.text).toMatch(/^Sorry — I couldn't get an answer from the model/);
    await until(() => expect(seen(adapter)).toEqual(["turn-started f1", "turn-finished f1"]));
  });

  it("a turn that throws after the delay (the model failing, the job retried later) publishes finished", async () => {
    const { adapter, llm } = await start({ TYPING_DELAY_MS: "200", LLM_MAX_RETRIES: "0" });
    const gate = llm.hold();
    llm.enqueue(httpError.server(503));
    await adapter.submit(inbound({ text: "are you there?", messageId: "r1" }));
    await until(() => expect(seen(adapter)).toEqual(["turn-started r1"]));
    gate.release();
    await until(() => expect(seen(adapter)).toEqual(["turn-started r1", "turn-finished r1"]));
    // The job's retry answers.
    await adapter.waitFor((sent) => sent.length === 1);
    expect(adapter.sent[0]!.reply.text).toBe("echo: are you there?");
    expect(llm.requests).toHaveLength(2);
  });

  it("an interrupted turn publishes finished before the turn that takes its messages over starts", async () => {
    const { adapter, llm } = await start({ TYPING_DELAY_MS: "200", BUSY_MODE: "interrupt" });
    const gate = llm.hold();
    await adapter.submit(inbound({ text: "write me a long essay", messageId: "i1" }));
    await until(() => expect(seen(adapter)).toEqual(["turn-started i1"]));
    await adapter.submit(inbound({ text: "actually, just a haiku", messageId: "i2" }));
    // The next turn answers both and replies to the newest; it too is held past the delay.
    await until(() => expect(seen(adapter)).toEqual(["turn-started i1", "turn-finished i1", "turn-started i2"]));
    gate.release();
    await adapter.waitFor((sent) => sent.length === 1);
    await until(() => expect(seen(adapter)).toEqual(["turn-started i1", "turn-finished i1", "turn-started i2", "turn-finished i2"]));
  });

  it("TYPING_DELAY_MS=0: every turn, however quick, publishes started then finished, as before", async () => {
    const { adapter } = await start({ TYPING_DELAY_MS: "0" });
    await adapter.ask(inbound({ text: "quick", messageId: "z1" }));
    await adapter.ask(inbound({ text: "quick again", messageId: "z2" }));
    await until(() => expect(seen(adapter)).toEqual(["turn-started z1", "turn-finished z1", "turn-started z2", "turn-finished z2"]));
  });

  it("a quick turn whose commit is held past the delay publishes no turn-started after its answer went out", async () => {
    const fake = await startFakeLlm();
    llm = fake;
    const adapter = new RecordingAdapter("console");
    const config = testConfig({ LLM_BASE_URL: fake.url, TYPING_DELAY_MS: "400" });
    pipeline = await startPipeline(config, [adapter], { worker: false });
    // The worker's own connections go through a proxy: pausing it holds Redis's answers to the
    // worker (its commands still run), so its commit is written but not yet answered.
    proxy = await startTcpProxy(config.REDIS_URL!);
    worker = await startWorkerRole({ config, redisAddress: proxy.url, logger: pipeline.logs.logger, metrics: createMetrics() });
    await adapter.ask(inbound({ text: "warm up", messageId: "w0" }));
    const gate = fake.hold();
    await adapter.submit(inbound({ text: "quick", messageId: "c1" }));
    await fake.waitForRequests(2);
    // The turn has run for a moment only; its answer comes at once, and its commit waits.
    proxy.pause();
    gate.release();
    // The gateway (not behind the proxy) delivers the committed answer while the worker waits.
    await adapter.waitFor((sent) => sent.some((entry) => entry.reply.text === "echo: quick"));
    // Well past TYPING_DELAY_MS since the turn began, still waiting for the commit's answer.
    await sleep(1_000);
    proxy.resume();
    await adapter.ask(inbound({ text: "next", messageId: "c2" }));
    // What c1 published went out on the worker's connection before c2's turn began; a moment
    // for the gateway's subscriber to hand it on.
    await sleep(200);
    expect(seen(adapter).filter((event) => event.endsWith(" c1"))).toEqual([]);
  });
});
