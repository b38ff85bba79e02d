import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AbortedError } from "../../../src/errors.js";
import { CallGate, limitedClient, RATE_LIMIT_BASE_PAUSE_MS } from "../../../src/llm/limits.js";
import { httpError, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { clientFor, rejectionOf, user } from "./helpers.js";

/** A call that ends when the test says so. */
function pending<T>(value: T) {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { finish, call: async () => { await done; return value; } };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe("CallGate: a provider's caps", () => {
  it("holds no more than `concurrent` requests in flight, and starts the waiting ones in the order they came", async () => {
    const gate = new CallGate({ concurrent: 2 });
    const calls = [pending("a"), pending("b"), pending("c"), pending("d")];
    const started: string[] = [];
    const results = calls.map((entry, index) => gate.run(async () => {
      started.push("abcd"[index]!);
      return entry.call();
    }));
    await flush();
    expect(started).toEqual(["a", "b"]);
    expect(gate.inFlight).toBe(2);
    expect(gate.waiting).toBe(2);
    calls[1]!.finish();
    await flush();
    expect(started).toEqual(["a", "b", "c"]);
    calls[0]!.finish();
    calls[2]!.finish();
    calls[3]!.finish();
    expect(await Promise.all(results)).toEqual(["a", "b", "c", "d"]);
    expect(gate.inFlight).toBe(0);
  });

  it("a request aborted while it waits leaves the line at once, and the others still run", async () => {
    const gate = new CallGate({ concurrent: 1 });
    const first = pending(1);
    const running = gate.run(first.call);
    const controller = new AbortController();
    const waiting = gate.run(async () => 2, controller.signal);
    const after = gate.run(async () => 3);
    controller.abort();
    expect(await rejectionOf(waiting)).toBeInstanceOf(AbortedError);
    first.finish();
    expect(await running).toBe(1);
    expect(await after).toBe(3);
    expect(gate.waiting).toBe(0);
  });

  describe("with a clock", () => {
    beforeEach(() => {
      vi.useFakeTimers({ now: 1_000_000 });
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it("spreads `requestsPerMinute` evenly: one start every 60/N seconds", async () => {
      const gate = new CallGate({ requestsPerMinute: 60 });
      const startedAt: number[] = [];
      const results = [0, 1, 2].map(() => gate.run(async () => void startedAt.push(Date.now())));
      await vi.advanceTimersByTimeAsync(0);
      expect(startedAt).toEqual([1_000_000]);
      await vi.advanceTimersByTimeAsync(999);
      expect(startedAt).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(startedAt).toEqual([1_000_000, 1_001_000]);
      await vi.advanceTimersByTimeAsync(1_000);
      await Promise.all(results);
      expect(startedAt).toEqual([1_000_000, 1_001_000, 1_002_000]);
    });
  });
});

describe("limitedClient: a 429 pauses every request through the gate", () => {
  let fake: FakeLlm;
  beforeEach(async () => {
    fake = await startFakeLlm();
  });
  afterEach(async () => {
    await fake.close();
  });

  it("after a 429 with retry-after, no request reaches the provider before that time; then the waiting ones go, in order", async () => {
    const pauses: number[] = [];
    const gate = new CallGate({}, { onPause: (ms) => pauses.push(ms) });
    const client = limitedClient(clientFor(fake, { maxRetries: 0 }), [gate]);
    fake.enqueue(httpError.rateLimit({ retryAfterSeconds: 1 }), { text: "first" }, { text: "second" });

    const refused = await rejectionOf(client.complete({ messages: [user("one")] }));
    const refusedAt = Date.now();
    expect(pauses).toEqual([1_000]);
    const later = [client.complete({ messages: [user("two")] }), client.complete({ messages: [user("three")] })];
    await flush();
    expect(gate.waiting).toBe(2);
    expect(fake.requests).toHaveLength(1);

    const answers = await Promise.all(later);
    // Not before the pause was over (a lower bound only: the machine may be slow, never fast).
    expect(Date.now() - refusedAt).toBeGreaterThanOrEqual(990);
    expect(answers.map((answer) => answer.content)).toEqual(["first", "second"]);
    expect(fake.requests).toHaveLength(3);
    expect(refused.message).toMatch(/rate/i);
  }, 20_000);

  it("without retry-after the pause doubles with each 429 in a row, and a success resets it", async () => {
    const pauses: number[] = [];
    const gate = new CallGate({}, { onPause: (ms) => pauses.push(ms) });
    const client = limitedClient(clientFor(fake, { maxRetries: 0 }), [gate]);
    fake.enqueue(httpError.rateLimit(), httpError.rateLimit(), { text: "ok" }, httpError.rateLimit());

    await rejectionOf(client.complete({ messages: [user("a")] }));
    await rejectionOf(client.complete({ messages: [user("b")] }));
    expect((await client.complete({ messages: [user("c")] })).content).toBe("ok");
    await rejectionOf(client.complete({ messages: [user("d")] }));
    expect(pauses).toEqual([RATE_LIMIT_BASE_PAUSE_MS, 2 * RATE_LIMIT_BASE_PAUSE_MS, RATE_LIMIT_BASE_PAUSE_MS]);
  }, 20_000);

  it("keeps what the wrapped client knows: its model and window, learning included", () => {
    const inner = clientFor(fake, { contextWindow: 32_000 });
    const client = limitedClient(inner, [new CallGate({})]);
    expect(client.model).toBe("gpt-4o-mini");
    client.learnContextWindow(16_000);
    expect(client.contextWindow).toBe(16_000);
    expect(inner.contextWindow).toBe(16_000);
  });
});
