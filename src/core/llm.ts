import type { ApiMessage, ToolCall, ToolDefinition } from "./messages.js";

/** A text part with an optional Anthropic cache breakpoint (OpenRouter passes it through). */
export interface TextPart {
  type: "text";
  text: string;
  cache_control?: { type: "ephemeral" };
}

/** A message as it goes on the wire: `ApiMessage`, whose content may be split into parts for caching. */
export type WireMessage = ApiMessage | (Omit<ApiMessage, "content"> & { content: TextPart[] });

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

export interface ChatRequest {
  messages: readonly WireMessage[];
  tools?: readonly ToolDefinition[];
  /** Sent as `max_tokens`. */
  maxTokens?: number;
  /** OpenAI prompt caching: requests with the same key share a cache shard (the session id). */
  promptCacheKey?: string;
  signal?: AbortSignal;
  /**
   * Set: the answer is streamed (`stream: true`, usage in the last chunk) and each piece of
   * text is handed here as it arrives. The result is the same as without it. Unset: one
   * plain request, as before streaming existed (STREAMING=off).
   */
  onText?: (delta: string) => void;
}

export interface ChatResult {
  content: string | null;
  toolCalls: ToolCall[];
  finishReason: string | null;
  /** Absent when the server does not report usage. */
  usage?: TokenUsage;
  model: string;
}

/** One OpenAI-compatible model endpoint. Implemented by `createLlmClient` in `src/llm`. */
export interface LlmClient {
  readonly model: string;
  /** Context window in tokens (configured, tabled, or learned from an overflow error). */
  readonly contextWindow: number;
  complete(request: ChatRequest): Promise<ChatResult>;
}
