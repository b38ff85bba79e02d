/** The LLM layer's public surface. Only this folder imports `undici` (for the LLM endpoint). */
export { createLlmClient, type LlmClientOptions, type OpenAiLlmClient } from "./client.js";
export { classifyLlmError, retryAfterMsFromHeaders, toLlmError, type LlmErrorKind } from "./errors.js";
export { detectProvider, PROFILES, PROVIDER_NAMES, type ProviderName, type ProviderProfile } from "./providers/index.js";
export { DEFAULT_CONTEXT_WINDOW, lookupContextWindow, resolveContextWindow } from "./models.js";
export { createSummarizer, type Summarizer } from "./summarizer.js";
export type { ChatRequest, ChatResult, LlmClient, TextPart, TokenUsage, WireMessage } from "../core/llm.js";
