import type { ApiMessage, ToolCall, ToolDefinition } from "./messages.js";

/** A text part with an optional Anthropic cache breakpoint (OpenRouter passes it through). */
export interface TextPart {
  type: "text";
  text: string;
  cache_control?: { type: "ephemeral" };
}

/** An image for a vision model: a data URL (never a platform URL with a token in it). */
export interface ImagePart {
  type: "image_url";
  image_url: { url: string; detail?: "auto" | "low" | "high" };
  cache_control?: { type: "ephemeral" };
}

/**
 * A message as it goes on the wire: `ApiMessage`, whose content may be split into parts for
 * caching, and a user message's into text and image parts (src/media/vision.ts).
 */
export type WireMessage = ApiMessage | (Omit<ApiMessage, "content"> & { content: TextPart[] }) | { role: "user"; content: Array<TextPart | ImagePart> };

export interface TokenUsage {
  promptTokens: number;
  /** Output tokens billed, reasoning included (a provider that reports reasoning apart has it added). */
  completionTokens: number;
  cachedTokens: number;
}

export interface ChatRequest {
  messages: readonly WireMessage[];
  tools?: readonly ToolDefinition[];
  /**
   * With `tools`: `"auto"` (default) lets the model call them, `"none"` asks for text only while
   * the tools stay in the request (the tool loop's last step: Anthropic-family endpoints reject a
   * history with tool calls but no `tools`, and dropping them misses the prompt cache).
   */
  toolChoice?: "auto" | "none";
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
  /** Who pays for the call (budgets): handed down from the turn like `signal`; absent, nothing is metered. */
  budget?: CallBudget;
}

/** What a model call costs: money at the model's prices, and tokens in + out. */
export interface CallCost {
  usd: number;
  tokens: number;
}

/**
 * Pays for model calls: a turn's budget (src/budget `BudgetScope`). It travels with each request
 * (and each compaction, flush and transcription) from the turn that makes it to the metered
 * client, which calls `pay`; the layers between only pass it on.
 */
export interface CallBudget {
  /** Reserves `estimate` (throws BudgetExhaustedError when it does not fit, before anything is spent), runs `call`, settles what `actual` says it cost. */
  pay<T>(estimate: CallCost, call: () => Promise<T>, actual: (result: T) => CallCost): Promise<T>;
}

export interface ChatResult {
  content: string | null;
  /** Tool calls; each keeps the provider's opaque `extra_content` (Gemini 3 thought signatures). */
  toolCalls: ToolCall[];
  /** The provider's `reasoning_content` (DeepSeek thinking mode), stored on the assistant message that answers it. */
  reasoningContent?: string;
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
