/**
 * The auxiliary summarizer of compaction (SPEC §3, phase 3) on top of an `LlmClient`: usually a
 * cheaper model with its own endpoint (`SUMMARY_*`). The context engine builds the prompt; this
 * only runs it and returns the text.
 */
import type { Summarizer } from "../context/summarizer.js";
import { RetryableError } from "../errors.js";
import type { LlmClient } from "../core/llm.js";

export type { Summarizer };

/**
 * Reasoning models served by Ollama, vLLM or llama.cpp (qwen3, deepseek-r1) often put their
 * thinking inline in `content`; it is not part of the summary.
 */
const THINKING = /<think>[\s\S]*?<\/think>/g;

/** The context engine's `Summarizer` over a client; its window follows what the client learns. */
export function createSummarizer(client: LlmClient): Summarizer {
  return {
    get model() {
      return client.model;
    },
    get contextWindow() {
      return client.contextWindow;
    },
    async summarize({ messages, maxTokens, signal }) {
      const result = await client.complete({ messages, maxTokens, ...(signal ? { signal } : {}) });
      const text = (result.content ?? "").replace(THINKING, "").trim();
      // An empty answer is usually a glitch (or a reasoning model that spent the budget
      // thinking): worth a retry, and the caller falls back to the main model after that.
      if (text === "") throw new RetryableError(`summarizer ${client.model} returned no text (finish_reason ${result.finishReason ?? "none"})`);
      return result.usage === undefined ? { text } : { text, usage: result.usage };
    },
  };
}
