import { describe, expect, it } from "vitest";
import { detectContextOverflow, type ProviderErrorShape } from "../../../src/context/overflow.js";

// Error bodies as providers send them (status, and the parsed fields the openai client exposes).
const overflows: Array<[string, ProviderErrorShape, number | undefined]> = [
  [
    "OpenAI context_length_exceeded",
    {
      status: 400,
      code: "context_length_exceeded",
      type: "invalid_request_error",
      message: "This model's maximum context length is 128000 tokens. However, your messages resulted in 130532 tokens. Please reduce the length of the messages.",
    },
    128_000,
  ],
  [
    "OpenAI input over the configured limit",
    { status: 400, code: "context_length_exceeded", message: "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 301221 tokens. Please reduce the length of the messages." },
    272_000,
  ],
  [
    "Anthropic prompt is too long",
    { status: 400, type: "invalid_request_error", message: "prompt is too long: 210350 tokens > 200000 maximum" },
    200_000,
  ],
  [
    "Anthropic input + max_tokens over the limit",
    { status: 400, message: "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000, decrease input length or `max_tokens` and try again" },
    200_000,
  ],
  [
    "OpenRouter",
    {
      status: 400,
      message: "This endpoint's maximum context length is 131072 tokens. However, you requested about 140293 tokens (132101 of text input, 8192 in the output). Please reduce the length of either one, or use the \"middle-out\" transform to compress your prompt automatically.",
    },
    131_072,
  ],
  [
    "vLLM (OpenAI-style wording, flat body)",
    {
      status: 400,
      body: '{"object":"error","message":"This model\'s maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}',
    },
    4_096,
  ],
  [
    "vLLM V1 decoder prompt",
    { status: 400, message: "The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that `max_model_len` is no smaller than the number of text tokens." },
    8_192,
  ],
  [
    "vLLM max_tokens too large",
    { status: 400, message: "'max_tokens' or 'max_completion_tokens' is too large: 2048. This model's maximum context length is 8192 tokens and your request has 7000 input tokens (2048 > 8192 - 7000)." },
    8_192,
  ],
  [
    "llama.cpp server",
    {
      status: 400,
      type: "exceed_context_size_error",
      message: "the request exceeds the available context size, try increasing it",
      body: '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5210,"n_ctx":4096}}',
    },
    4_096,
  ],
  [
    "llama.cpp server, older wording",
    { status: 400, message: "the request exceeds the available context size. try increasing the context size or enable context shift" },
    undefined,
  ],
  [
    "Ollama /v1 relaying llama.cpp",
    { status: 400, message: "request (5210 tokens) exceeds the available context size (4096 tokens), try increasing it" },
    4_096,
  ],
  ["Ollama input length", { status: 400, message: "the input length exceeds the context length" }, undefined],
  ["Ollama prompt too long", { status: 400, message: "prompt too long; exceeded max context length by 1042 tokens" }, undefined],
  [
    "Mistral",
    { status: 400, message: "Prompt contains 40112 tokens and 0 draft tokens, too large for model with 32768 maximum context length" },
    32_768,
  ],
  [
    "Gemini OpenAI-compatible endpoint",
    { status: 400, message: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)." },
    1_048_576,
  ],
  [
    "llama-cpp-python's server",
    { status: 400, message: "Requested tokens (5210) exceed context window of 4096" },
    4_096,
  ],
  [
    "a proxy that names only the error class (LiteLLM)",
    { status: 400, message: "litellm.ContextWindowExceededError: litellm.BadRequestError: request rejected by the deployment" },
    undefined,
  ],
  [
    "OpenAI, one message over the API's string limit (characters, not a window)",
    {
      status: 400,
      code: "string_above_max_length",
      message: "Invalid 'messages[1].content': string too long. Expected a string with maximum length 10485760, but got a string with length 12000000 instead.",
    },
    undefined,
  ],
  ["a 413 from a proxy", { status: 413, message: "Request too large: the prompt is too long for this model" }, undefined],
  ["a server that writes \"prompt too long\"", { status: 400, message: "Error: prompt too long" }, undefined],
  ["a server that writes \"input too long\"", { status: 400, message: "Input too long for requested model" }, undefined],
];

describe("detectContextOverflow", () => {
  it.each(overflows)("recognises %s", (_name, error, contextWindow) => {
    const verdict = detectContextOverflow(error);
    expect(verdict.overflow).toBe(true);
    expect(verdict.contextWindow).toBe(contextWindow);
  });

  it.each<[string, ProviderErrorShape]>([
    ["a rate limit that mentions tokens", { status: 429, message: "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000, Used 29000, Requested 5000." }],
    ["a server error", { status: 500, message: "The server had an error while processing your request." }],
    ["an overloaded Anthropic", { status: 529, type: "overloaded_error", message: "Overloaded" }],
    ["a bad request about something else", { status: 400, message: "Invalid value for 'temperature': must be between 0 and 2." }],
    ["an auth error", { status: 401, message: "Incorrect API key provided" }],
  ])("does not mistake %s for an overflow", (_name, error) => {
    expect(detectContextOverflow(error)).toEqual({ overflow: false });
  });

  it("trusts the code even without a status or message", () => {
    expect(detectContextOverflow({ code: "context_length_exceeded" })).toEqual({ overflow: true });
  });
});
