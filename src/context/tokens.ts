/**
 * Token accounting with js-tiktoken. Building an encoder parses its rank file, which costs about
 * 1.5 s and 150 MB (STACK.md §6), so each encoding is built at most once per process, on first
 * use, and counts are cached on the messages themselves (`MessageMeta.tokens`): a message is
 * encoded once in its whole life, and the per-turn check costs O(new messages).
 */
import { createRequire } from "node:module";
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import type { ChatMessage, ToolDefinition } from "../core/messages.js";

export type EncodingName = "o200k_base" | "cl100k_base";

/** The pseudo-encoding of the chars/4 estimate, so its cached counts never pass for real ones. */
export const APPROXIMATE_ENCODING = "approx-chars/4";

/**
 * Role, separators and the message frame, per message. OpenAI's cookbook counts 3 for the
 * frame plus the role token; calibration against `prompt_tokens` absorbs the rest.
 */
export const MESSAGE_OVERHEAD_TOKENS = 4;
/** Every reply is primed with `<|start|>assistant<|message|>`. */
export const REPLY_PRIMING_TOKENS = 3;

export interface TokenCounter {
  /** The encoding the counts are in; cached counts under another encoding are recounted. */
  readonly encoding: string;
  countText(text: string): number;
  /** Reads `message.tokens` when it is in this encoding; otherwise counts and stores it there. */
  countMessage(message: ChatMessage): number;
  /** The whole request's messages, reply priming included. */
  countMessages(messages: readonly ChatMessage[]): number;
  countTools(tools: readonly ToolDefinition[]): number;
}

/**
 * cl100k_base for the GPT-4 / GPT-3.5 generation and the older embeddings; o200k_base for
 * everything else (GPT-4o onwards, and the best estimate we have for other vendors' models,
 * which calibration then corrects). A provider prefix such as `openai/` is ignored.
 */
export function encodingForModel(model: string): EncodingName {
  const name = model.toLowerCase().split("/").pop() ?? "";
  return /^(gpt-3\.5|gpt-35|gpt-4(-|$)|text-embedding-(ada-002|3))/.test(name) ? "cl100k_base" : "o200k_base";
}

/** Builds a counter over any text-counting function: the real encoders, the fallback, or a test's spy. */
export function createTokenCounter(encoding: string, countTextTokens: (text: string) => number): TokenCounter {
  const countText = (text: string): number => (text.length === 0 ? 0 : countTextTokens(text));
  const countMessage = (message: ChatMessage): number => {
    const cached = message.tokens;
    if (cached !== undefined && cached.encoding === encoding) return cached.count;
    let count = MESSAGE_OVERHEAD_TOKENS + countText(message.content ?? "");
    if (message.role === "assistant" && message.tool_calls && message.tool_calls.length > 0) {
      // The calls travel as JSON (ids, names, argument strings); count them as such.
      count += countText(JSON.stringify(message.tool_calls));
    }
    // The cache is the only field the engine ever writes on a message it does not own.
    message.tokens = { encoding, count };
    return count;
  };
  return {
    encoding,
    countText,
    countMessage,
    countMessages(messages) {
      let total = REPLY_PRIMING_TOKENS;
      for (const message of messages) total += countMessage(message);
      return total;
    },
    countTools(tools) {
      return tools.length === 0 ? 0 : countText(JSON.stringify(tools));
    },
  };
}

/** chars/4: only for when no encoder can be built. Rounds up so it errs towards compacting early. */
export const approximateTokenCounter = (): TokenCounter =>
  createTokenCounter(APPROXIMATE_ENCODING, (text) => Math.ceil(text.length / 4));

export type RanksLoader = (encoding: EncodingName) => TiktokenBPE;

const requireFromHere = createRequire(import.meta.url);

/** Loads a rank file synchronously and only when first asked for (the CommonJS build of the same file). */
const requireRanks: RanksLoader = (encoding) =>
  encoding === "cl100k_base"
    ? (requireFromHere("js-tiktoken/ranks/cl100k_base") as TiktokenBPE)
    : (requireFromHere("js-tiktoken/ranks/o200k_base") as TiktokenBPE);

/**
 * A counter for one encoding, building the encoder now. Special tokens such as `<|endoftext|>`
 * in user text are counted as the ordinary text they are (no allowed and no disallowed special
 * tokens), where js-tiktoken would throw by default. Falls back to chars/4 if the ranks cannot
 * be loaded or parsed.
 */
export function buildTokenCounter(encoding: EncodingName, loadRanks: RanksLoader = requireRanks): TokenCounter {
  let tiktoken: Tiktoken;
  try {
    tiktoken = new Tiktoken(loadRanks(encoding));
  } catch {
    return approximateTokenCounter();
  }
  return createTokenCounter(encoding, (text) => tiktoken.encode(text, [], []).length);
}

const countersByEncoding = new Map<EncodingName, TokenCounter>();

/** The process-wide counter for a model's encoding, built on first use. */
export function getTokenCounter(model: string): TokenCounter {
  const encoding = encodingForModel(model);
  let counter = countersByEncoding.get(encoding);
  if (counter === undefined) {
    counter = buildTokenCounter(encoding);
    countersByEncoding.set(encoding, counter);
  }
  return counter;
}
