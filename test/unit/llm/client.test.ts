import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AbortedError, PermanentError, RetryableError } from "../../../src/errors.js";
import { classifyLlmError } from "../../../src/llm/index.js";
import { httpError, startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { API_KEY, capturingLogger, clientFor, rejectionOf, system, user } from "./helpers.js";

let fake: FakeLlm;
beforeEach(async () => {
  fake = await startFakeLlm();
});
afterEach(async () => {
  await fake.close();
});

const weatherTool = {
  type: "function" as const,
  function: { name: "get_weather", description: "Weather in a city", parameters: { type: "object", properties: { city: { type: "string" } } } },
};

describe("complete: what is sent and what comes back", () => {
  it("maps a text reply with usage, cached tokens included, and sends the request as given", async () => {
    fake.enqueue({ text: "Hello!", usage: { prompt_tokens: 1200, completion_tokens: 7, prompt_tokens_details: { cached_tokens: 1024 } } });
    const client = clientFor(fake, { maxOutputTokens: 512 });

    const result = await client.complete({ messages: [system("Be brief."), user("Hi")] });

    expect(result).toEqual({
      content: "Hello!",
      toolCalls: [],
      finishReason: "stop",
      usage: { promptTokens: 1200, completionTokens: 7, cachedTokens: 1024 },
      model: "gpt-4o-mini",
    });
    const [request] = fake.requests;
    expect(request?.body).toEqual({
      model: "gpt-4o-mini",
      messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
      max_tokens: 512,
    });
    expect(request?.headers.authorization).toBe(`Bearer ${API_KEY}`);
  });

  it("reports cached tokens as 0 when the server leaves prompt_tokens_details out, and no usage when it sends none", async () => {
    fake.enqueue({ text: "a" }, { text: "b", usage: null });
    const client = clientFor(fake);

    const echoed = await client.complete({ messages: [user("ping")] });
    const bare = await client.complete({ messages: [user("ping")] });

    expect(echoed.usage?.cachedTokens).toBe(0);
    expect(echoed.usage?.promptTokens).toBeGreaterThan(0);
    expect(bare.usage).toBeUndefined();
    expect(fake.requests[0]?.body).not.toHaveProperty("max_tokens");
  });

  it("maps parallel tool calls and sends tools, tool_choice, max_tokens and prompt_cache_key as given", async () => {
    fake.enqueue({
      toolCalls: [
        { name: "get_weather", arguments: { city: "Paris" }, id: "call_a" },
        { name: "get_weather", arguments: '{"city":"Lima"}', id: "call_b" },
      ],
    });
    const client = clientFor(fake, { maxOutputTokens: 4096 });

    const result = await client.complete({ messages: [user("Weather in Paris and Lima?")], tools: [weatherTool], maxTokens: 300, promptCacheKey: "tg:42" });

    expect(result.content).toBeNull();
    expect(result.finishReason).toBe("tool_calls");
    expect(result.toolCalls).toEqual([
      { id: "call_a", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
      { id: "call_b", type: "function", function: { name: "get_weather", arguments: '{"city":"Lima"}' } },
    ]);
    const body = fake.requests[0]?.body;
    expect(body?.tools).toEqual([weatherTool]);
    expect(body?.tool_choice).toBe("auto");
    expect(body?.max_tokens).toBe(300);
    expect(body?.prompt_cache_key).toBe("tg:42");
  });

  it("sends an assistant tool call and its result back, and text parts with cache_control unchanged", async () => {
    const client = clientFor(fake);
    const call = { id: "call_1", type: "function" as const, function: { name: "get_weather", arguments: '{"city":"Oslo"}' } };
    const messages = [
      { role: "system" as const, content: [{ type: "text" as const, text: "You are helpful.", cache_control: { type: "ephemeral" as const } }] },
      user("Weather in Oslo?"),
      { role: "assistant" as const, content: null, tool_calls: [call] },
      { role: "tool" as const, tool_call_id: "call_1", content: "-3°C" },
    ];

    await client.complete({ messages, tools: [weatherTool] });

    expect(fake.requests[0]?.body.messages).toEqual(messages);
  });

  it("uses max_completion_tokens for OpenAI reasoning models, which refuse max_tokens", async () => {
    await clientFor(fake, { model: "gpt-5-mini" }).complete({ messages: [user("x")], maxTokens: 100 });
    await clientFor(fake, { model: "openai/gpt-5-mini" }).complete({ messages: [user("x")], maxTokens: 100 });

    expect(fake.requests[0]?.body).toMatchObject({ max_completion_tokens: 100 });
    expect(fake.requests[0]?.body).not.toHaveProperty("max_tokens");
    expect(fake.requests[1]?.body).toMatchObject({ max_tokens: 100 });
  });

  it("gives a tool call without id or arguments an id and '{}'", async () => {
    fake.enqueue({ status: 200, body: {
      id: "x", object: "chat.completion", created: 0, model: "llama3.1:8b",
      choices: [{ index: 0, finish_reason: "tool_calls", message: { role: "assistant", content: "", tool_calls: [{ function: { name: "now", arguments: "" } }] } }],
    } });

    const result = await clientFor(fake).complete({ messages: [user("time?")] });

    expect(result.model).toBe("llama3.1:8b");
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]?.id).toMatch(/^call_/);
    expect(result.toolCalls[0]?.function).toEqual({ name: "now", arguments: "{}" });
  });
});

describe("complete: retries (the openai SDK's semantics) and failures", () => {
  it("retries a 429 after the retry-after it states, then succeeds", async () => {
    fake.enqueue(httpError.rateLimit({ retryAfterSeconds: 1 }), { text: "after the wait" });

    const result = await clientFor(fake, { maxRetries: 2 }).complete({ messages: [user("hi")] });

    expect(result.content).toBe("after the wait");
    const [first, second] = fake.requests;
    expect(fake.requests).toHaveLength(2);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(900);
  });

  it("retries a 500 and succeeds", async () => {
    fake.enqueue(httpError.server(500), { text: "recovered" });

    const result = await clientFor(fake, { maxRetries: 1 }).complete({ messages: [user("hi")] });

    expect(result.content).toBe("recovered");
    expect(fake.requests).toHaveLength(2);
  });

  it("turns a 429 left after the retries into a RetryableError carrying retry-after", async () => {
    fake.enqueue(httpError.rateLimit({ retryAfterSeconds: 1 }));

    const error = await rejectionOf(clientFor(fake, { maxRetries: 0 }).complete({ messages: [user("hi")] }));

    expect(error).toBeInstanceOf(RetryableError);
    expect((error as RetryableError).retryAfterMs).toBe(1000);
    expect(classifyLlmError(error)).toBe("rate-limit");
    expect(error.cause).toBeDefined();
  });

  it("does not sleep through an absurd retry-after: fails at once and leaves the wait to the caller", async () => {
    fake.enqueue(httpError.rateLimit({ retryAfterSeconds: 3600 }), { text: "never reached" });
    const started = Date.now();

    const error = await rejectionOf(clientFor(fake, { maxRetries: 2 }).complete({ messages: [user("hi")] }));

    expect(Date.now() - started).toBeLessThan(1_000);
    expect(fake.requests).toHaveLength(1);
    expect(error).toBeInstanceOf(RetryableError);
    expect((error as RetryableError).retryAfterMs).toBe(3_600_000);
  });

  it("retries a timeout, then gives up with a RetryableError", async () => {
    fake.setHandler(() => ({ hang: true }));
    const started = Date.now();

    const error = await rejectionOf(clientFor(fake, { timeoutMs: 300, maxRetries: 1 }).complete({ messages: [user("hi")] }));

    expect(fake.requests).toHaveLength(2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(600);
    expect(error).toBeInstanceOf(RetryableError);
    expect(classifyLlmError(error)).toBe("timeout");
  });

  it("times out a response whose body stalls after the headers (the SDK's own timeout stops at the headers)", async () => {
    let arrivals = 0;
    const stalling = createServer((request, response) => {
      arrivals += 1;
      request.resume();
      request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).write('{"id":"chatcmpl-1",'));
    });
    await new Promise<void>((resolve) => stalling.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(stalling.address() as AddressInfo).port}/v1`;
    try {
      const error = await rejectionOf(clientFor({ url }, { timeoutMs: 300, maxRetries: 1 }).complete({ messages: [user("hi")] }));

      expect(error).toBeInstanceOf(RetryableError);
      expect(classifyLlmError(error)).toBe("timeout");
      expect(arrivals).toBe(2);
    } finally {
      stalling.closeAllConnections();
      stalling.close();
    }
  });

  it("maps a refused connection to a RetryableError", async () => {
    const closed = await startFakeLlm();
    await closed.close();

    const error = await rejectionOf(clientFor(closed).complete({ messages: [user("hi")] }));

    expect(error).toBeInstanceOf(RetryableError);
    expect(classifyLlmError(error)).toBe("connection");
  });

  it.each([
    ["401 bad key", httpError.unauthorized(), "auth"],
    ["403 forbidden", { status: 403, body: { error: { message: "Project does not have access to model", type: "invalid_request_error", param: null, code: "model_not_found" } } }, "auth"],
    ["404 unknown model", { status: 404, body: { error: { message: "model 'nope' not found", type: "not_found_error", param: null, code: null } } }, "bad-request"],
    ["400 not an overflow", httpError.badRequest("Invalid value for 'temperature'", "temperature"), "bad-request"],
  ] as const)("%s → PermanentError without a retry", async (_name, response, kind) => {
    fake.enqueue(response, { text: "never reached" });

    const error = await rejectionOf(clientFor(fake, { maxRetries: 2 }).complete({ messages: [user("hi")] }));

    expect(error).toBeInstanceOf(PermanentError);
    expect(classifyLlmError(error)).toBe(kind);
    expect(fake.requests).toHaveLength(1);
  });

  it("maps an error sent inside a 200 (OpenRouter after a provider failed mid-request)", async () => {
    fake.enqueue({ status: 200, body: { error: { message: "Provider returned error", code: 502, metadata: { provider_name: "Fireworks", raw: "upstream connect error" } } } });

    const error = await rejectionOf(clientFor(fake).complete({ messages: [user("hi")] }));

    expect(error).toBeInstanceOf(RetryableError);
    expect(classifyLlmError(error)).toBe("server");
    expect(error.message).toContain("Provider returned error: upstream connect error");
  });
});

describe("complete: abort", () => {
  it("rejects with AbortedError when the signal fires mid-request", async () => {
    fake.setHandler(() => ({ hang: true }));
    const controller = new AbortController();
    const pending = clientFor(fake).complete({ messages: [user("hi")], signal: controller.signal });
    await fake.waitForRequests(1);

    controller.abort();

    const error = await rejectionOf(pending);
    expect(error).toBeInstanceOf(AbortedError);
    expect(classifyLlmError(error)).toBe("aborted");
  });

  it("sends nothing when the signal already fired", async () => {
    const error = await rejectionOf(clientFor(fake).complete({ messages: [user("hi")], signal: AbortSignal.abort() }));

    expect(error).toBeInstanceOf(AbortedError);
    expect(fake.requests).toHaveLength(0);
  });

  it("does not wait for the SDK's retry sleep to end", async () => {
    fake.enqueue(httpError.rateLimit({ retryAfterSeconds: 1 }));
    const controller = new AbortController();
    const started = Date.now();
    const pending = clientFor(fake, { maxRetries: 2 }).complete({ messages: [user("hi")], signal: controller.signal });
    await fake.waitForRequests(1);

    controller.abort();

    expect(await rejectionOf(pending)).toBeInstanceOf(AbortedError);
    expect(Date.now() - started).toBeLessThan(800);
  });
});

describe("complete: context window", () => {
  it("reports the configured window, else the table, else 128000", () => {
    expect(clientFor(fake, { contextWindow: 32_000 }).contextWindow).toBe(32_000);
    expect(clientFor(fake, { model: "gpt-4o-mini" }).contextWindow).toBe(128_000);
    expect(clientFor(fake, { model: "llama3:8b" }).contextWindow).toBe(8_192);
    expect(clientFor(fake, { model: "some-local-finetune" }).contextWindow).toBe(128_000);
  });

  it("learns the real window from an overflow error and reports the smaller value", async () => {
    const client = clientFor(fake, { model: "qwen2.5:7b", contextWindow: 32_768 });
    fake.enqueue({
      status: 400,
      body: { error: { code: 400, message: "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it", type: "exceed_context_size_error", n_prompt_tokens: 9000, n_ctx: 8192 } },
    });

    await rejectionOf(client.complete({ messages: [user("long")] }));

    expect(client.contextWindow).toBe(8_192);
    client.learnContextWindow(65_536);
    expect(client.contextWindow).toBe(32_768);
  });
});

describe("logging", () => {
  it("never writes the API key, even when the server quotes it back in an error", async () => {
    const { logger, lines } = capturingLogger();
    const client = clientFor(fake, { logger, maxRetries: 1, timeoutMs: 300 });
    fake.enqueue(
      httpError.unauthorized(`Incorrect API key provided: ${API_KEY}.`),
      httpError.server(503),
      { hang: true },
      { hang: true },
      httpError.rateLimit({ retryAfterSeconds: 7200 }),
      { text: "fine" },
    );

    const unauthorized = await rejectionOf(client.complete({ messages: [user("a")] }));
    await rejectionOf(client.complete({ messages: [user("b")] }));
    await rejectionOf(client.complete({ messages: [user("c")] }));
    await client.complete({ messages: [user("d")] });

    expect(unauthorized.message).toContain("Incorrect API key provided: [REDACTED]");
    expect(unauthorized.message).not.toContain(API_KEY);
    expect(lines.length).toBeGreaterThan(4);
    expect(lines.join("")).toContain("llm step failed");
    for (const line of lines) expect(line).not.toContain(API_KEY);
  });
});

describe("complete with onText: streaming", () => {
  it("hands text on as it arrives and returns what the whole completion would, usage from the last chunk", async () => {
    const reply = { text: "Streaming works fine 🙂 here", usage: { prompt_tokens: 30, completion_tokens: 6, prompt_tokens_details: { cached_tokens: 16 } } };
    fake.enqueue(reply, reply);
    const client = clientFor(fake);
    const deltas: string[] = [];

    const streamedResult = await client.complete({ messages: [user("Hi")], onText: (delta) => deltas.push(delta) });
    const plain = await client.complete({ messages: [user("Hi")] });

    expect(streamedResult).toEqual(plain);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join("")).toBe(reply.text);
    expect(fake.requests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(fake.requests[1]?.body).not.toHaveProperty("stream");
  });

  it("assembles parallel tool calls from their pieces", async () => {
    fake.enqueue({ text: null, toolCalls: [{ name: "get_weather", arguments: { city: "Reykjavík, Iceland" }, id: "a" }, { name: "get_weather", arguments: "{\"city\":\"Oslo\"}", id: "b" }] });
    const client = clientFor(fake);

    const result = await client.complete({ messages: [user("weather?")], tools: [weatherTool], onText: () => undefined });

    expect(result.content).toBeNull();
    expect(result.finishReason).toBe("tool_calls");
    expect(result.toolCalls).toEqual([
      { id: "a", type: "function", function: { name: "get_weather", arguments: JSON.stringify({ city: "Reykjavík, Iceland" }) } },
      { id: "b", type: "function", function: { name: "get_weather", arguments: "{\"city\":\"Oslo\"}" } },
    ]);
  });

  it("fails with a RetryableError when the connection drops mid-answer, after the text so far went out", async () => {
    fake.enqueue({ text: "a b c d e f g h", dropAfterTokens: 3 });
    const client = clientFor(fake);
    const deltas: string[] = [];

    const error = await rejectionOf(client.complete({ messages: [user("Hi")], onText: (delta) => deltas.push(delta) }));

    expect(error).toBeInstanceOf(RetryableError);
    expect(deltas.join("")).toBe("a b c");
  });

  it("a stream that stalls fails as a timeout instead of hanging, and an abort stops it at once", async () => {
    fake.enqueue({ text: "slow words arrive here", tokensPerSecond: 1 });
    const client = clientFor(fake, { timeoutMs: 400 });
    const stalled = await rejectionOf(client.complete({ messages: [user("Hi")], onText: () => undefined }));
    expect(stalled).toBeInstanceOf(RetryableError);

    fake.enqueue({ text: "slow words arrive here", tokensPerSecond: 5 });
    const controller = new AbortController();
    const deltas: string[] = [];
    const pending = client.complete({ messages: [user("Hi")], signal: controller.signal, onText: (delta) => { deltas.push(delta); controller.abort(); } });
    expect(await rejectionOf(pending)).toBeInstanceOf(AbortedError);
    const seen = deltas.length;
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(deltas.length).toBe(seen);
  });
});
