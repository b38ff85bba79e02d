/**
 * Recognises a context-overflow refusal from the wording providers actually use. Pure text
 * matching so that `src/llm` (which sees the HTTP error) and the context engine share one rule.
 *
 * Wordings seen in the wild:
 * - OpenAI: code `context_length_exceeded`, "This model's maximum context length is 8192 tokens…"
 * - Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
 * - OpenRouter: "This endpoint's maximum context length is 131072 tokens. However, you requested…"
 * - vLLM: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens…"
 *   or "…longer than the maximum model length of 4096"
 * - llama.cpp: type `exceed_context_size_error`, "the request exceeds the available context size"
 *   with `n_ctx`
 * - Ollama: "the input length exceeds the context length", "prompt too long; exceeded max context
 *   length by N tokens", `exceed_context_size_error`; its /v1 relays llama.cpp's
 *   "request (N tokens) exceeds the available context size (4096 tokens)"
 * - OpenAI (newer): "Input tokens exceed the configured limit of 272000 tokens"; Anthropic with
 *   max_tokens: "input length and `max_tokens` exceed context limit: 195000 + 8192 > 200000"
 * - Mistral: "…too large for model with 32768 maximum context length"; Gemini's OpenAI-compatible
 *   endpoint: "…exceeds the maximum number of tokens allowed (1048576)"
 */

const OVERFLOW_CODES = new Set(["context_length_exceeded", "exceed_context_size_error", "string_above_max_length"]);

const OVERFLOW_PATTERN =
  /maximum context length|context[ _-]?(length|size|window)[ _-]?(exceeded|exceeds|is exceeded)|exceed(s|ed)? (the )?(available |maximum |max )?context|prompt (is )?too long|too many tokens|input (is )?too long|longer than the maximum model length|context_length_exceeded|exceed_context_size|reduce the length of the messages|exceeds the maximum number of tokens|tokens exceed the configured limit/i;

const WINDOW_PATTERNS: RegExp[] = [
  /maximum context length (?:is|of) (\d[\d,]*)/i,
  /context (?:length|size|window) (?:is|of) (\d[\d,]*)/i,
  /maximum model length (?:is|of) (\d[\d,]*)/i,
  /tokens? > (\d[\d,]*) maximum/i,
  // Anthropic, input + max_tokens: "exceed context limit: 195000 + 8192 > 200000"
  /exceed context limit: [\d\s+]+> (\d[\d,]*)/i,
  // Mistral: "too large for model with 32768 maximum context length"
  /(\d[\d,]*) maximum context length/i,
  // OpenAI: "Input tokens exceed the configured limit of 272000 tokens"
  /configured limit of (\d[\d,]*) tokens/i,
  // Gemini: "exceeds the maximum number of tokens allowed (1048576)"
  /maximum number of tokens allowed \((\d[\d,]*)\)/i,
  // llama.cpp's message, which Ollama's /v1 relays without the `n_ctx` field.
  /available context size \((\d[\d,]*) tokens?\)/i,
  /"?n_ctx"?\s*[:=]\s*(\d+)/i,
];

export interface OverflowVerdict {
  overflow: boolean;
  /** The real context window, when the error states it. */
  contextWindow?: number;
}

export interface ProviderErrorShape {
  status?: number;
  code?: unknown;
  type?: unknown;
  message?: string;
  /** The raw response body as text, when available (vLLM's flat bodies lose the message otherwise). */
  body?: string;
}

export function detectContextOverflow(error: ProviderErrorShape): OverflowVerdict {
  const text = `${error.message ?? ""}\n${error.body ?? ""}`;
  const byCode =
    (typeof error.code === "string" && OVERFLOW_CODES.has(error.code)) ||
    (typeof error.type === "string" && OVERFLOW_CODES.has(error.type));
  // A 5xx or 429 that mentions tokens is a capacity problem, not the prompt's length.
  const statusAllows = error.status === undefined || error.status === 400 || error.status === 413 || error.status === 422;
  const overflow = byCode || (statusAllows && OVERFLOW_PATTERN.test(text));
  if (!overflow) return { overflow: false };
  const contextWindow = extractWindow(text);
  return contextWindow === undefined ? { overflow: true } : { overflow: true, contextWindow };
}

function extractWindow(text: string): number | undefined {
  for (const pattern of WINDOW_PATTERNS) {
    const match = pattern.exec(text);
    if (match?.[1]) {
      const value = Number(match[1].replaceAll(",", ""));
      if (Number.isFinite(value) && value >= 256) return value;
    }
  }
  return undefined;
}
