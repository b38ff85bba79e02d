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
    async summarize({ messages, maxTokens, signal, budget }) {
      const result = await client.complete({ messages, maxTokens, ...(signal ? { signal } : {}), ...(budget ? { budget } : {}) });
      // An unclosed <think> is thinking cut off at max_tokens: nothing of it is summary.
      const text = (result.content ?? "").replace(THINKING, "").replace(/<think>[\s\S]*$/, "").trim();
      const finishReason = result.finishReason;
      // A stop at max_tokens goes back to the engine as it is (it retries with more room); an
      // empty answer otherwise is usually a glitch: worth a retry, then the fallback.
      if (text === "" && finishReason !== "length") throw new RetryableError(`summarizer ${client.model} returned no text (finish_reason ${finishReason ?? "none"})`);
      return { text, finishReason, ...(result.usage === undefined ? {} : { usage: result.usage }) };
    },
  };
}
