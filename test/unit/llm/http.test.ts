/**
 * The client's HTTP behaviour against the fake LLM over real HTTP: what it sends, the openai
 * SDK's retry semantics with our policy on top (counted by the requests the server saw), timeouts
 * of the headers and of a stalled stream, dropped connections, aborts, errors inside a stream, and
 * keep-alive reuse (seen server-side as the connection each request came on).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AbortedError, PermanentError, RetryableError } from "../../../src/errors.js";
import { classifyLlmError } from "../../../src/llm/index.js";
import { httpError, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { API_KEY, capturingLogger, clientFor, rejectionOf, user } from "./helpers.js";

let fake: FakeLlm;
beforeEach(async () => {
  fake = await startFakeLlm();
});
afterEach(async () => {
  await fake.close();
});

const gaps = () => fake.requests.slice(1).map((request, index) => request.at - fake.requests[index]!.at);

describe("what goes on the wire", () => {
  it("sends the key and JSON through the openai SDK (its retry-count header)", async () => {
    const client = clientFor(fake);
    await client.complete({ messages: [user("plain")] });
    await client.complete({ messages: [user("streamed")], onText: () => undefined });

    const [plain, streamed] = fake.requests;
    for (const request of [plain!, streamed!]) {
      expect(request.headers.authorization).toBe(`Bearer ${API_KEY}`);
      expect(request.headers["content-type"]).toBe("application/json");
      expect(request.headers["x-stainless-retry-count"]).toBe("0");
      expect(request.url).toBe("/v1/chat/completions");
    }
  });
});

describe("retries", () => {
  it("retries a 500 twice, backing off about 0.5 s then 1 s (less up to 25 %), then succeeds", async () => {
    fake.enqueue(httpError.server(500), httpError.server(500), { text: "third time" });

    const result = await clientFor(fake, { maxRetries: 2 }).complete({ messages: [user("hi")] });

    expect(result.content).toBe("third time");
    expect(fake.requests).toHaveLength(3);
    const [first, second] = gaps();
    expect(first).toBeGreaterThanOrEqual(370);
    expect(second).toBeGreaterThanOrEqual(740);
  });

  it("gives up after maxRetries with the last failure", async () => {
    fake.enqueue(httpError.server(502), httpError.server(503), httpError.server(500));

    const error = await rejectionOf(clientFor(fake, { maxRetries: 1 }).complete({ messages: [user("hi")] }));

    expect(error).toBeInstanceOf(RetryableError);
    expect(classifyLlmError(error)).toBe("server");
    expect(fake.requests).toHaveLength(2);
  });

  it("obeys x-should-retry both ways, and waits retry-after-ms and an HTTP-date retry-after", async () => {
    const client = clientFor(fake, { maxRetries: 2 });
    fake.enqueue({ ...httpError.server(503), headers: { "x-should-retry": "false" } });
    expect(classifyLlmError(await rejectionOf(client.complete({ messages: [user("a")] })))).toBe("server");
    expect(fake.requests).toHaveLength(1);

    fake.enqueue({ ...httpError.badRequest("try again"), headers: { "x-should-retry": "true" } }, { text: "then fine" });
    expect((await client.complete({ messages: [user("b")] })).content).toBe("then fine");
    expect(fake.requests).toHaveLength(3);

    fake.enqueue(httpError.rateLimit({ retryAfterMs: 300 }), { text: "after 300 ms" });
    await client.complete({ messages: [user("c")] });
    expect(gaps()[3]).toBeGreaterThanOrEqual(280);

    fake.enqueue({ ...httpError.rateLimit(), headers: { "retry-after": new Date(Date.now() + 2_000).toUTCString() } }, { text: "after the date" });
    await client.complete({ messages: [user("d")] });
    expect(gaps()[5]).toBeGreaterThanOrEqual(900);
  });

  it("a 401 is an auth error, never retried", async () => {
    fake.enqueue(httpError.unauthorized(), { text: "never reached" });

    const error = await rejectionOf(clientFor(fake, { maxRetries: 3 }).complete({ messages: [user("hi")], onText: () => undefined }));

    expect(error).toBeInstanceOf(PermanentError);
    expect(classifyLlmError(error)).toBe("auth");
    expect(fake.requests).toHaveLength(1);
  });

  it("retries headers that never come as a timeout", async () => {
    fake.enqueue({ hang: true }, { text: "second attempt" });

    const result = await clientFor(fake, { timeoutMs: 300, maxRetries: 1 }).complete({ messages: [user("hi")], onText: () => undefined });

    expect(result.content).toBe("second attempt");
    expect(fake.requests).toHaveLength(2);
    expect(gaps()[0]).toBeGreaterThanOrEqual(280);
  });
});

describe("logging", () => {
  it("logs each failed attempt with its number, then the step's outcome, never the key", async () => {
    const { logger, lines } = capturingLogger();
    const client = clientFor(fake, { logger, maxRetries: 2, timeoutMs: 300 });
    fake.enqueue(httpError.server(500), { hang: true }, { text: "third attempt" }, httpError.unauthorized(`Incorrect API key provided: ${API_KEY}.`));

    await client.complete({ messages: [user("a")], onText: () => undefined });
    await rejectionOf(client.complete({ messages: [user("b")] }));

    const entries = lines.map((line) => JSON.parse(line) as { msg: string; attempt?: number; status?: number; error?: string; kind?: string });
    expect(entries.filter((entry) => entry.msg === "llm attempt failed").map((entry) => [entry.attempt, entry.status ?? "no status"])).toEqual([[1, 500], [2, "no status"], [1, 401]]);
    expect(entries.filter((entry) => entry.msg === "llm step finished")).toHaveLength(1);
    expect(entries.find((entry) => entry.msg === "llm step failed")).toMatchObject({ kind: "auth" });
    for (const line of lines) expect(line).not.toContain(API_KEY);
  });
});

describe("a stream that stops", () => {
  it("stalled before any text: retried as a timeout", async () => {
    fake.enqueue({ text: "lost words", stallAfterTokens: 0 }, { text: "fresh words" });
    const deltas: string[] = [];

    const result = await clientFor(fake, { timeoutMs: 300, maxRetries: 1 }).complete({ messages: [user("hi")], onText: (delta) => deltas.push(delta) });

    expect(result.content).toBe("fresh words");
    expect(deltas.join("")).toBe("fresh words");
    expect(fake.requests).toHaveLength(2);
  });

  it("stalled after text went out: fails as a timeout after about timeoutMs of silence, not retried", async () => {
    fake.enqueue({ text: "a b c d e f", stallAfterTokens: 2 }, { text: "never reached" });
    const deltas: string[] = [];
    const started = Date.now();

    const error = await rejectionOf(clientFor(fake, { timeoutMs: 400, maxRetries: 2 }).complete({ messages: [user("hi")], onText: (delta) => deltas.push(delta) }));

    expect(error).toBeInstanceOf(RetryableError);
    expect(classifyLlmError(error)).toBe("timeout");
    expect(deltas.join("")).toBe("a b");
    expect(fake.requests).toHaveLength(1);
    // The stream would stall forever: what ends it is the idle timeout, no sooner.
    expect(Date.now() - started).toBeGreaterThanOrEqual(380);
  });

  it("connection reset after text went out: a connection RetryableError, not retried; before any text: retried", async () => {
    fake.enqueue({ text: "a b c d", dropAfterTokens: 2 });
    const deltas: string[] = [];
    const error = await rejectionOf(clientFor(fake, { maxRetries: 2 }).complete({ messages: [user("hi")], onText: (delta) => deltas.push(delta) }));
    expect(error).toBeInstanceOf(RetryableError);
    expect(classifyLlmError(error)).toBe("connection");
    expect(deltas.join("")).toBe("a b");
    expect(fake.requests).toHaveLength(1);

    fake.enqueue({ text: "gone", dropAfterTokens: 0 }, { text: "back again" });
    const result = await clientFor(fake, { maxRetries: 1 }).complete({ messages: [user("hi")], onText: () => undefined });
    expect(result.content).toBe("back again");
    expect(fake.requests).toHaveLength(3);
  });

  it("an error object inside a stream chunk (OpenRouter's mid-stream error) fails the step with the provider's words", async () => {
    fake.enqueue({ text: "a b c", streamError: { afterTokens: 1, error: { code: 502, message: "Provider disconnected unexpectedly" } } });
    const deltas: string[] = [];

    const error = await rejectionOf(clientFor(fake).complete({ messages: [user("hi")], onText: (delta) => deltas.push(delta) }));

    expect(error).toBeInstanceOf(RetryableError);
    expect(classifyLlmError(error)).toBe("server");
    expect(error.message).toContain("Provider disconnected unexpectedly");
    expect(deltas.join("")).toBe("a");
  });

  it("a stream with no choice in any chunk fails instead of answering nothing", async () => {
    fake.enqueue({ status: 200, headers: { "content-type": "text/event-stream" }, body: ": keep-alive\n\ndata: [DONE]\n\n" });

    const error = await rejectionOf(clientFor(fake).complete({ messages: [user("hi")], onText: () => undefined }));

    expect(error).toBeInstanceOf(RetryableError);
    expect(error.message).toContain("no choice in any chunk");
  });

  it("a server that ignores stream: true and sends one JSON completion is read as one", async () => {
    fake.enqueue({ status: 200, body: { id: "x", object: "chat.completion", created: 0, model: "llama3.1:8b", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "whole answer" } }] } });
    const deltas: string[] = [];

    const result = await clientFor(fake).complete({ messages: [user("hi")], onText: (delta) => deltas.push(delta) });

    expect(result).toMatchObject({ content: "whole answer", finishReason: "stop", model: "llama3.1:8b" });
    expect(deltas).toEqual(["whole answer"]);
  });
});

describe("abort", () => {
  it("ends a stalled stream at once, long before its timeout", async () => {
    fake.enqueue({ text: "a b c d", stallAfterTokens: 1 });
    const controller = new AbortController();
    const started = Date.now();

    const pending = clientFor(fake, { timeoutMs: 20_000 }).complete({ messages: [user("hi")], signal: controller.signal, onText: () => void setTimeout(() => controller.abort(), 50) });

    const error = await rejectionOf(pending);
    expect(error).toBeInstanceOf(AbortedError);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("ends a long retry wait at once, without another request", async () => {
    fake.enqueue(httpError.rateLimit({ retryAfterSeconds: 30 }), { text: "never reached" });
    const controller = new AbortController();
    const started = Date.now();
    const pending = clientFor(fake, { maxRetries: 2 }).complete({ messages: [user("hi")], signal: controller.signal, onText: () => undefined });
    await fake.waitForRequests(1);

    controller.abort();

    expect(await rejectionOf(pending)).toBeInstanceOf(AbortedError);
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(fake.requests).toHaveLength(1);
  });
});

describe("keep-alive", () => {
  const run = async (client: ReturnType<typeof clientFor>, calls: number, between: () => Promise<unknown>) => {
    for (let index = 0; index < calls; index++) {
      if (index === 10) fake.enqueue(httpError.server(500));
      if (index === 20) fake.enqueue(httpError.badRequest("Invalid value for 'temperature'", "temperature"));
      const request = { messages: [user(`call ${index}`)] };
      await (index % 2 === 0 ? client.complete(request) : client.complete({ ...request, onText: () => undefined })).catch(() => undefined);
      await between();
    }
  };
  const connections = () => new Set(fake.requests.map((request) => request.connection)).size;

  it("makes many sequential calls, plain and streamed, failed ones too, over one connection", async () => {
    // As in a turn, something else happens between two calls (at least one event-loop turn).
    await run(clientFor(fake, { maxRetries: 1 }), 30, () => new Promise((resolve) => setImmediate(resolve)));

    expect(fake.requests).toHaveLength(31);
    expect(connections()).toBe(1);
  });

  it("back to back, uses at most two: undici frees a connection one event-loop turn after its response ended", async () => {
    await run(clientFor(fake, { maxRetries: 1 }), 30, async () => undefined);

    expect(fake.requests).toHaveLength(31);
    expect(connections()).toBeLessThanOrEqual(2);
  });
});
