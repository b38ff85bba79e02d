import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ContextOverflowError, RetryableError } from "../../../src/errors.js";
import { classifyLlmError } from "../../../src/llm/index.js";
import OpenAI from "openai";
import { rawErrorBody } from "../../../src/llm/sdk.js";
import { overflow, startFakeLlm, type FakeHttpError, type FakeLlm } from "../../fakes/fake-llm.js";
import { clientFor, rejectionOf, user } from "./helpers.js";

let fake: FakeLlm;
beforeEach(async () => {
  fake = await startFakeLlm();
});
afterEach(async () => {
  await fake.close();
});

const failureOf = async (response: FakeHttpError): Promise<Error> => {
  fake.enqueue(response);
  return rejectionOf(clientFor(fake, { model: "some-model" }).complete({ messages: [user("a very long prompt")] }));
};

describe("every backend's context-overflow body becomes a ContextOverflowError", () => {
  it.each([
    ["OpenAI context_length_exceeded", 8192, overflow.openai({ contextWindow: 8192 })],
    ["Anthropic 'prompt is too long' relayed by OpenRouter", 200_000, overflow.anthropicViaOpenRouter({ contextWindow: 200_000, requested: 210_000 })],
    ["OpenRouter's own check", 131_072, overflow.openRouter({ contextWindow: 131_072 })],
    ["vLLM", 4096, overflow.vllm({ contextWindow: 4096 })],
    ["vLLM, older flat body", 4096, overflow.vllmFlat({ contextWindow: 4096 })],
    ["llama.cpp exceed_context_size_error", 4096, overflow.llamaCpp({ contextWindow: 4096 })],
    ["Ollama /v1", 2048, overflow.ollama({ contextWindow: 2048 })],
  ] as const)("%s (states the window: %i)", async (_name, contextWindow, response) => {
    const error = await failureOf(response);

    expect(error).toBeInstanceOf(ContextOverflowError);
    expect((error as ContextOverflowError).contextWindow).toBe(contextWindow);
    expect(classifyLlmError(error)).toBe("overflow");
    expect(error.cause).toBeInstanceOf(OpenAI.APIError);
    expect((error.cause as InstanceType<typeof OpenAI.APIError>).status).toBe(response.status);
  });

  it("is never retried", async () => {
    fake.enqueue(overflow.vllm(), { text: "never reached" });
    await rejectionOf(clientFor(fake, { maxRetries: 2 }).complete({ messages: [user("long")] }));
    expect(fake.requests).toHaveLength(1);
  });

  it("reads the message of vLLM's flat body, which has no `error` key (the SDK alone reports it as '(no body)')", async () => {
    const response = overflow.vllmFlat({ contextWindow: 4096, requested: 5000 });
    const error = await failureOf(response);

    const cause = error.cause as InstanceType<typeof OpenAI.APIError>;
    expect(cause.message).toBe("400 status code (no body)");
    expect(rawErrorBody(cause.headers)).toBe(JSON.stringify(response.body));
    expect(cause.code).toBeUndefined();
    expect(error.message).toContain("maximum context length is 4096 tokens. However, you requested 5000 tokens");
  });

  it("names the provider's words behind OpenRouter's 'Provider returned error'", async () => {
    const error = await failureOf(overflow.anthropicViaOpenRouter({ requested: 215_000 }));
    expect(error.message).toContain("Provider returned error: prompt is too long: 215000 tokens > 200000 maximum");
  });

  it("leaves the window undefined when the body does not state it", async () => {
    const error = await failureOf({ status: 400, body: { error: { message: "the input length exceeds the context length", type: "invalid_request_error", param: null, code: null } } });

    expect(error).toBeInstanceOf(ContextOverflowError);
    expect((error as ContextOverflowError).contextWindow).toBeUndefined();
  });

  it("does not take a rate limit that mentions tokens for an overflow", async () => {
    const error = await failureOf({
      status: 429,
      body: { error: { message: "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 45000.", type: "tokens", param: null, code: "rate_limit_exceeded" } },
    });

    expect(error).toBeInstanceOf(RetryableError);
    expect(classifyLlmError(error)).toBe("rate-limit");
  });
});
