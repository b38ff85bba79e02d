/**
 * The seam between the context engine and a model that writes summaries. `src/llm` implements
 * it over an OpenAI-compatible endpoint (SUMMARY_* settings, else the main model); tests use
 * in-memory fakes. The engine never imports `openai`.
 */
import type { CallBudget, TokenUsage } from "../core/llm.js";
import type { ApiMessage } from "../core/messages.js";

export interface SummaryRequest {
  messages: ApiMessage[];
  /** Sent as `max_tokens`: room above the length the prompt asks for (reasoning included). */
  maxTokens: number;
  signal?: AbortSignal;
  /** Who pays for the call (budgets); the summarizer hands it to its client. */
  budget?: CallBudget;
}

export interface SummaryResponse {
  text: string;
  usage?: TokenUsage;
  /** The API's `finish_reason`; `"length"` (cut at max_tokens) makes the attempt a failure. */
  finishReason?: string | null;
}

export interface Summarizer {
  readonly model: string;
  /** The summarizer's own window (SUMMARY_CONTEXT_WINDOW): the middle is folded in chunks that fit it. */
  readonly contextWindow: number;
  summarize(request: SummaryRequest): Promise<SummaryResponse>;
}
