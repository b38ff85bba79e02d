/**
 * Context windows of well-known models, used when `LLM_CONTEXT_WINDOW` is not configured.
 * Local servers often run a smaller window than the model supports (Ollama defaults to
 * 2K-4K): the client learns the real one from the first overflow error that states it.
 */

/** The window assumed for a model in no table (SPEC §8). */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

/**
 * First match wins, so specific names come before their family. Matched against the lowercased
 * name with any provider prefix kept (`anthropic/claude-sonnet-4`, `meta-llama/llama-3.1-8b`),
 * and with Ollama's `llama3.1:8b` style as well as `llama-3.1-8b-instruct`.
 */
const KNOWN_WINDOWS: ReadonlyArray<readonly [pattern: RegExp, contextWindow: number]> = [
  [/gpt-4\.1/, 1_047_576],
  [/gpt-5[^/]*-chat/, 128_000],
  [/gpt-5/, 400_000],
  [/gpt-4o/, 128_000],
  [/gpt-4-turbo|gpt-4-\d{4}-preview/, 128_000],
  [/gpt-4-32k/, 32_768],
  [/gpt-4(?![\w.])/, 8_192],
  [/gpt-3\.5-turbo/, 16_385],
  [/(^|\/)o1-(mini|preview)/, 128_000],
  [/(^|\/)o[134](?![\w.])/, 200_000],
  [/claude/, 200_000],
  [/llama-?3\.[1-3]/, 131_072],
  [/llama-?3(?![.\d])/, 8_192],
  [/qwen-?2\.5/, 32_768],
  [/mistral-large|mistral-nemo|mistral-medium/, 131_072],
  [/mistral|mixtral/, 32_768],
];

/** The tabled window of a model, or undefined when the model is unknown. */
export function lookupContextWindow(model: string): number | undefined {
  const name = model.toLowerCase();
  return KNOWN_WINDOWS.find(([pattern]) => pattern.test(name))?.[1];
}

/** Configured value, else the table, else `DEFAULT_CONTEXT_WINDOW`. */
export function resolveContextWindow(model: string, configured?: number): number {
  if (configured !== undefined && Number.isFinite(configured) && configured > 0) return Math.floor(configured);
  return lookupContextWindow(model) ?? DEFAULT_CONTEXT_WINDOW;
}

/**
 * OpenAI's reasoning models (o-series, gpt-5) refuse `max_tokens` on chat completions and want
 * `max_completion_tokens`. Only their bare names (OpenAI itself) are matched: through OpenRouter
 * (`openai/gpt-5`) and local servers `max_tokens` is the field everyone accepts.
 */
export function usesMaxCompletionTokens(model: string): boolean {
  return /^(o\d|gpt-5)/.test(model.toLowerCase());
}
