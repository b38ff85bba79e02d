/**
 * Backpressure visible and fair (issue 32 item 2), with one turn at a time (WORKER_CONCURRENCY=1)
 * so that messages must queue: sessions are served in arrival order and a flooding group does not
 * starve the DMs behind it; a message that waits shows "typing…" while it waits; the wait is in
 * /metrics (longhaul_queue_wait_seconds) and in /status.
 */
import { describe, expect, it, vi } from "vitest";
import type { InboundMessage } from "../../../src/core/channel.js";
import { lastUserText, startFakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline } from "../../helpers/pipeline.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { sleep } from "../../helpers/stall-run.js";

describe("queue wait: fair, visible, signalled", () => {
  /**
   * One worker slot, warmed up, then `first`'s turn holding it: the model is held (`gate`) once
   * that turn's request is in, so whatever is submitted next must queue.
   */
  async function startHolding(env: Record<string, string>, first: InboundMessage) {
    const fake = closeAfterTest(await startFakeLlm());
    const adapter = new RecordingAdapter("console");
    const pipeline = closeAfterTest(await startPipeline(testConfig({ LLM_BASE_URL: fake.url, WORKER_CONCURRENCY: "1", ...env }), [adapter]));
    // The process's first turn builds the tokenizer: not part of what is measured here.
    await adapter.ask(inbound({ text: "warm up", chatId: "warm", messageId: "w0" }));
    const gate = fake.hold();
    await adapter.submit(first);
    await fake.waitForRequests(2);
    return { adapter, llm: fake, pipeline, gate };
  }

  it("a group flooding one message after another does not starve the DMs that arrive behind it (BUSY_MODE=queue: one message a turn)", async () => {
    const group = (index: number) => inbound({ text: `group ${index}`, chatId: "group", chatType: "group", userId: `member-${index % 3}`, messageId: `g${index}` });
    const { adapter, llm, gate } = await startHolding({ BUSY_MODE: "queue" }, group(0));
    // The group's turn is running; 15 more of its messages, then three people write privately.
    for (let index = 1; index <= 15; index++) await adapter.submit(group(index));
    for (const dm of ["d1", "d2", "d3"]) await adapter.submit(inbound({ text: `private ${dm}`, chatId: dm, userId: dm, messageId: dm }));
    gate.release();
    await adapter.waitFor((sent) => sent.length === 1 + 16 + 3);
    const order = llm.requests.slice(1).map((request) => lastUserText(request).replace(/^.*(group \d+|private d\d)$/s, "$1"));
    // Each session re-enters the queue behind those already waiting when its turn ends: the DMs,
    // which arrived during the group's first turn, go before the group's second.
    expect(order.slice(0, 5)).toEqual(["group 0", "private d1", "private d2", "private d3", "group 1"]);
    expect(order.slice(5)).toEqual(Array.from({ length: 14 }, (_, index) => `group ${index + 2}`));
  });

  it("a message queued behind a busy worker shows typing while it waits; its wait is in /metrics and /status", async () => {
    const { adapter, llm, pipeline, gate } = await startHolding({ TYPING_DELAY_MS: "300" }, inbound({ text: "long question", chatId: "a", userId: "a", messageId: "a1" }));
    await adapter.submit(inbound({ text: "queued question", chatId: "b", userId: "b", messageId: "b1" }));
    const ofB = () => adapter.activity.filter((activity) => activity.sessionKey === "console:b").map((activity) => `${activity.type}${activity.waiting ? " (waiting)" : ""}`);
    // While a1's turn holds the only slot, b1 has no turn, and the gateway shows typing for it.
    await vi.waitFor(() => expect(ofB()).toEqual(["turn-started (waiting)"]), { timeout: 10_000, interval: 20 });
    expect(llm.requests).toHaveLength(2);
    await sleep(700);
    gate.release();
    await adapter.waitFor((sent) => sent.length === 3);
    // b1's turn waited past the delay before it began: it shows typing at once and ends it.
    await vi.waitFor(() => expect(ofB()).toEqual(["turn-started (waiting)", "turn-started", "turn-finished"]), { timeout: 10_000, interval: 20 });

    const metric = await pipeline.metrics.registry.getSingleMetricAsString("longhaul_queue_wait_seconds");
    const value = (pattern: RegExp) => Number(pattern.exec(metric)?.[1]);
    expect(value(/^longhaul_queue_wait_seconds_count (\d+)$/m)).toBe(3);
    // b1 waited about a second (the 700 ms above and the wait for its typing); the others did not.
    expect(value(/^longhaul_queue_wait_seconds_bucket\{le="0.5"\} (\d+)$/m)).toBe(2);
    expect(value(/^longhaul_queue_wait_seconds_bucket\{le="5"\} (\d+)$/m)).toBe(3);

    const status = await adapter.ask(inbound({ text: "/status", chatId: "a", userId: "a", messageId: "a2" }));
    const line = status.split("\n").find((text) => text.startsWith("Queue: "));
    expect(line).toMatch(/^Queue: 0 waiting, 1 running · wait p50 \d+\.\d s, p99 (\d+\.\d) s \(last 5 min, 4 messages, this worker\)$/);
    expect(Number(/p99 (\d+\.\d) s/.exec(line!)![1])).toBeGreaterThanOrEqual(0.9);
  });
});
