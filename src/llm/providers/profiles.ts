/**
 * Provider dialects as data: one profile per family of OpenAI-compatible endpoint. Each says which
 * optional request fields the provider takes (a strict one refuses what it does not know: Gemini
 * `Unknown name "prompt_cache_key": Cannot find field`, Mistral "Extra inputs are not
 * permitted"), which opaque fields of an assistant step it wants back while the step is in the
 * context (DeepSeek's `reasoning_content`, Gemini 3's thought signatures in a tool call's
 * `extra_content`), how it reports reasoning tokens, and whether its template needs strictly
 * alternating roles. The request is shaped from the profile in dialect.ts; nothing else in the
 * house asks which provider it talks to.
 *
 * The profile comes from `LLM_PROVIDER` (or a `models:` entry's `provider`), else from the base
 * URL (detect.ts). SPEC §12 names the values.
 */

export const PROVIDER_NAMES = [
  "openai", "azure", "anthropic", "gemini", "deepseek", "mistral", "openrouter", "groq", "xai", "ollama", "vllm", "llamacpp", "lmstudio",
] as const;

export type ProviderName = (typeof PROVIDER_NAMES)[number];

/** Optional top-level request fields; a profile sends only those it lists. */
export type OptionalField = "prompt_cache_key" | "stream_options" | "parallel_tool_calls" | "user";

export interface ProviderProfile {
  readonly name: ProviderName;
  /** The optional fields the provider accepts; any other is left out of the request. */
  readonly accepts: ReadonlySet<OptionalField>;
  /**
   * The output cap's name: `max_tokens`, `max_completion_tokens`, or OpenAI's rule (its reasoning
   * models, o-series and gpt-5, refuse `max_tokens`).
   */
  readonly maxTokensField: "max_tokens" | "max_completion_tokens" | "openai-by-model";
  /** Opaque step fields sent back while the message is live; stripped everywhere else (Groq refuses unknown message properties). */
  readonly sendsBack: { readonly reasoningContent: boolean; readonly thoughtSignatures: boolean };
  /**
   * `in-completion`: `completion_tokens` already includes the reasoning (OpenAI, DeepSeek);
   * `apart`: reasoning is reported only in `completion_tokens_details.reasoning_tokens` and is
   * billed as output on top (Gemini's `thoughtsTokenCount`, xAI's Grok).
   */
  readonly reasoningTokens: "in-completion" | "apart";
  /** The provider's templates insist on user/assistant alternation (alternate-roles.ts). */
  readonly alternateRoles: boolean;
}

const fields = (...names: OptionalField[]): ReadonlySet<OptionalField> => new Set(names);
const nothingBack = { reasoningContent: false, thoughtSignatures: false } as const;

const profile = (name: ProviderName, rest: Omit<ProviderProfile, "name">): ProviderProfile => ({ name, ...rest });

export const PROFILES: Readonly<Record<ProviderName, ProviderProfile>> = {
  openai: profile("openai", {
    accepts: fields("prompt_cache_key", "stream_options", "parallel_tool_calls", "user"),
    maxTokensField: "openai-by-model", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  azure: profile("azure", {
    accepts: fields("stream_options", "parallel_tool_calls", "user"),
    maxTokensField: "openai-by-model", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  // Anthropic's OpenAI-compatible endpoint: caching goes by `cache_control` (src/context/caching.ts), not a key.
  anthropic: profile("anthropic", {
    accepts: fields("stream_options", "parallel_tool_calls"),
    maxTokensField: "max_tokens", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  // Google's OpenAI-compatible endpoint refuses any field it does not know.
  gemini: profile("gemini", {
    accepts: fields("stream_options"),
    maxTokensField: "max_tokens", sendsBack: { reasoningContent: false, thoughtSignatures: true }, reasoningTokens: "apart", alternateRoles: false,
  }),
  deepseek: profile("deepseek", {
    accepts: fields("stream_options"),
    maxTokensField: "max_tokens", sendsBack: { reasoningContent: true, thoughtSignatures: false }, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  // Mistral's API validates strictly ("Extra inputs are not permitted") and reports usage in the last chunk unasked.
  mistral: profile("mistral", {
    accepts: fields("parallel_tool_calls"),
    maxTokensField: "max_tokens", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  openrouter: profile("openrouter", {
    accepts: fields("prompt_cache_key", "stream_options", "parallel_tool_calls", "user"),
    maxTokensField: "max_tokens", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  groq: profile("groq", {
    accepts: fields("stream_options", "parallel_tool_calls", "user"),
    maxTokensField: "max_tokens", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  xai: profile("xai", {
    accepts: fields("stream_options", "parallel_tool_calls", "user"),
    maxTokensField: "max_tokens", sendsBack: nothingBack, reasoningTokens: "apart", alternateRoles: false,
  }),
  ollama: profile("ollama", {
    accepts: fields("stream_options"),
    maxTokensField: "max_tokens", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  vllm: profile("vllm", {
    accepts: fields("stream_options", "parallel_tool_calls", "user"),
    maxTokensField: "max_tokens", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  llamacpp: profile("llamacpp", {
    accepts: fields("stream_options"),
    maxTokensField: "max_tokens", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
  lmstudio: profile("lmstudio", {
    accepts: fields("stream_options"),
    maxTokensField: "max_tokens", sendsBack: nothingBack, reasoningTokens: "in-completion", alternateRoles: false,
  }),
};

export const isProviderName = (value: string): value is ProviderName => (PROVIDER_NAMES as readonly string[]).includes(value);
