/**
 * Token accounting with js-tiktoken (o200k_base, cl100k_base). Loading an encoding parses its
 * rank data (about 1.5 s for o200k_base), so each one is loaded at most once per process, on first use,
 * and counts are cached on the messages themselves (`MessageMeta.tokens`): a message is
 * encoded once in its whole life, and the per-turn check costs O(new messages).
 *
 * No input can stall the event loop (issue #10): byte-pair encoding is quadratic in the length
 * of one pre-token, and a run without whitespace ("a" × 16,000, 4,096 emoji, a long Cyrillic
 * word) or a long run of whitespace is a single pre-token. `splitForCounting` cuts every such
 * run into pieces of at most MAX_RUN_CHARS before encoding, so the cost of a text is linear in
 * its length. Each cut can change the count by about one token (a merge across it is lost),
 * so only runs longer than MAX_RUN_CHARS are affected: ordinary prose and code count exactly
 * as the plain encoder does. Text that is slow to encode however it is cut (every pre-token
 * new, as in random letters) is encoded for at most ENCODE_BUDGET_MS, the rest extrapolated
 * (docs/decisions.md, docs/benchmarks.md).
 */
import { createRequire } from "node:module";
import type { Tiktoken as TiktokenEncoder, TiktokenBPE } from "js-tiktoken/lite";
import type { ChatMessage, ToolDefinition } from "../core/messages.js";
import { attachmentTokens } from "./image-tokens.js";

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

/** Tool sets whose count is remembered per counter: a turn offers one or a few sets, re-checked every step. */
const TOOL_COUNT_CACHE_SIZE = 16;

/** Builds a counter over any text-counting function: the real encoders, the fallback, or a test's spy. */
export function createTokenCounter(encoding: string, countTextTokens: (text: string) => number): TokenCounter {
  const countText = (text: string): number => (text.length === 0 ? 0 : countTextTokens(text));
  // Callers build a new array per check, but of the same definition objects (a tool's definition
  // is never changed in place): a set seen before is recognised by its members, without
  // serializing it. A set of new objects is keyed by the JSON sent: encoding it again would cost
  // milliseconds per step for a large MCP tool set, serializing it costs microseconds.
  const toolSets: { tools: readonly ToolDefinition[]; count: number }[] = [];
  const toolCounts = new Map<string, number>();
  const countMessage = (message: ChatMessage): number => {
    const cached = message.tokens;
    if (cached !== undefined && cached.encoding === encoding) return cached.count;
    let count = MESSAGE_OVERHEAD_TOKENS + countText(message.content ?? "");
    if (message.role === "assistant" && message.tool_calls && message.tool_calls.length > 0) {
      // The calls travel as JSON (ids, names, argument strings); count them as such.
      count += countText(JSON.stringify(message.tool_calls));
    }
    // Opaque reasoning a provider wants back (DeepSeek) travels with the message: it costs what it weighs.
    if (message.role === "assistant" && message.reasoning_content) count += countText(message.reasoning_content);
    // Pictures sent as image parts (image-tokens.ts).
    count += attachmentTokens(message);
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
      if (tools.length === 0) return 0;
      const seen = toolSets.find((set) => set.tools.length === tools.length && set.tools.every((tool, index) => tool === tools[index]));
      if (seen) return seen.count;
      const json = JSON.stringify(tools);
      let count = toolCounts.get(json);
      if (count === undefined) {
        count = countText(json);
        if (toolCounts.size >= TOOL_COUNT_CACHE_SIZE) toolCounts.delete(toolCounts.keys().next().value!);
        toolCounts.set(json, count);
      }
      if (toolSets.length >= TOOL_COUNT_CACHE_SIZE) toolSets.shift();
      toolSets.push({ tools: [...tools], count });
      return count;
    },
  };
}

/** chars/4: only for when no encoder can be built. Rounds up so it errs towards compacting early. */
export const approximateTokenCounter = (): TokenCounter =>
  createTokenCounter(APPROXIMATE_ENCODING, (text) => Math.ceil(text.length / 4));

/**
 * The longest run of non-whitespace (or of whitespace) handed to the encoder in one piece. The
 * cost of a pre-token grows with the square of its length; at 128 characters it is negligible,
 * and ordinary words, identifiers and most URLs are shorter, so they are never cut.
 */
export const MAX_RUN_CHARS = 128;
/**
 * The bound is on UTF-8 bytes, since the byte-pair merge is quadratic in bytes: a run of CJK,
 * Cyrillic or emoji (two to four bytes a character) is cut into pieces of at most MAX_RUN_CHARS
 * bytes. js-tiktoken spends about 37 ms on one 128-character CJK pre-token, 9 ms at 64 and 3 ms
 * at 32 (docs/decisions.md). A run this long may already exceed the bound (three bytes a character).
 */
export const MIN_LONG_RUN_CHARS = Math.ceil(MAX_RUN_CHARS / 3) + 1;
/** Ordinary text is encoded in pieces of at most this size, cut before a whitespace. */
export const MAX_PIECE_CHARS = 1_024;
/**
 * Once encoding one text has taken this much CPU time, the rest of it is extrapolated at the tokens per
 * character counted so far. Ordinary prose and code encode at 5–10 MB/s, so any ordinary
 * message (a 50,000-character tool output takes 5–10 ms) is counted exactly; text that is
 * slow to encode whatever the cutting (random letters or CJK: every pre-token new, 2–12 µs a
 * token) stops after this budget plus one piece.
 */
export const ENCODE_BUDGET_MS = 30;

/** Candidate runs: any run that may exceed MAX_RUN_CHARS bytes; `isLongRun` decides. */
const LONG_RUN = new RegExp(`\\S{${MIN_LONG_RUN_CHARS},}|\\s{${MIN_LONG_RUN_CHARS},}`, "g");
const WHITESPACE = /\s/;

const isLongRun = (run: string): boolean => run.length > MAX_RUN_CHARS || Buffer.byteLength(run, "utf8") > MAX_RUN_CHARS;

const isHighSurrogate = (text: string, index: number): boolean => {
  const code = text.charCodeAt(index);
  return code >= 0xd800 && code <= 0xdbff;
};

/** Cuts `text[start, end)` into pieces of at most `maxBytes` UTF-8 bytes, never inside a surrogate pair. */
function cutByBytes(text: string, start: number, end: number, maxBytes: number, pieces: string[]): void {
  let pieceStart = start;
  let bytes = 0;
  for (let index = start; index < end; ) {
    const code = text.charCodeAt(index);
    const pair = isHighSurrogate(text, index) && index + 1 < end;
    const size = pair ? 4 : code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
    if (bytes + size > maxBytes && index > pieceStart) {
      pieces.push(text.slice(pieceStart, index));
      pieceStart = index;
      bytes = 0;
    }
    bytes += size;
    index += pair ? 2 : 1;
  }
  if (pieceStart < end) pieces.push(text.slice(pieceStart, end));
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;

/**
 * Where to end an ordinary piece that starts at `start` and may reach `limit`: at the start of
 * a whitespace run that follows a letter or digit, where the pre-tokenizer splits anyway (a
 * word never takes trailing whitespace; punctuation may take trailing newlines). Else before
 * any whitespace, else at the limit.
 */
function ordinaryCut(text: string, start: number, limit: number): number {
  let anyWhitespace = -1;
  for (let index = limit; index > start; index -= 1) {
    if (!WHITESPACE.test(text[index]!)) continue;
    if (LETTER_OR_DIGIT.test(text[index - 1]!)) return index;
    if (anyWhitespace === -1) anyWhitespace = index;
  }
  if (anyWhitespace !== -1) return anyWhitespace;
  return isHighSurrogate(text, limit - 1) ? limit - 1 : limit;
}

/**
 * The pieces a text is encoded in. Every run of more than MAX_RUN_CHARS non-whitespace (or
 * whitespace) characters is cut into pieces of at most that size; the text between such runs
 * goes in pieces of at most MAX_PIECE_CHARS, cut just before a whitespace (where the
 * pre-tokenizer splits anyway, so those cuts change nothing). No piece holds a long run, so
 * encoding costs O(length × MAX_RUN_CHARS) instead of O(length²).
 */
export function splitForCounting(text: string): string[] {
  const pieces: string[] = [];
  let position = 0;
  let run: RegExpExecArray | null | undefined;
  while (position < text.length) {
    if (run !== null && (run === undefined || run.index < position)) {
      LONG_RUN.lastIndex = position;
      // The next run that must be cut; one of at most MAX_RUN_CHARS bytes is ordinary text.
      do run = LONG_RUN.exec(text);
      while (run && !isLongRun(run[0]));
    }
    const runStart = run ? run.index : text.length;
    if (runStart === position && run) {
      cutByBytes(text, position, position + run[0].length, MAX_RUN_CHARS, pieces);
      position += run[0].length;
      continue;
    }
    const limit = position + MAX_PIECE_CHARS;
    const end = runStart <= limit ? runStart : ordinaryCut(text, position, limit);
    pieces.push(text.slice(position, end));
    position = end;
  }
  return pieces;
}

const cpuMs = (): number => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1_000;
};

export interface CountBudget {
  /** @defaultValue ENCODE_BUDGET_MS */
  budgetMs?: number;
  /** Milliseconds of CPU time. @defaultValue the process's (user + system), so a busy machine pausing us counts for nothing */
  now?: () => number;
  /**
   * Milliseconds of wall time, never less than the CPU time this thread spends meanwhile: the
   * CPU clock (a system call) is read only once this one says the budget may be spent.
   * @defaultValue performance.now
   */
  wallNow?: () => number;
}

/**
 * A count over `encodePiece` that never hands it a long run and stops encoding once it has
 * spent its CPU budget, extrapolating the rest. CPU time rather than wall time: on a loaded
 * machine the wall clock also counts the time other processes ran, which would make ordinary
 * messages extrapolated at random. The budget runs from the end of the first piece (at most
 * MAX_PIECE_CHARS, without long runs, so its cost is bounded): a text of one piece — almost
 * every message — reads no clock at all.
 */
export const boundedCount =
  (encodePiece: (piece: string) => number, { budgetMs = ENCODE_BUDGET_MS, now = cpuMs, wallNow = () => performance.now() }: CountBudget = {}) =>
  (text: string): number => {
    let cpuStarted: number | undefined;
    let wallStarted = 0;
    let tokens = 0;
    let chars = 0;
    for (const piece of splitForCounting(text)) {
      if (chars > 0) {
        if (cpuStarted === undefined) {
          cpuStarted = now();
          wallStarted = wallNow();
        } else if (wallNow() - wallStarted >= budgetMs && now() - cpuStarted >= budgetMs) {
          return tokens + Math.ceil(((text.length - chars) * tokens) / chars);
        }
      }
      tokens += encodePiece(piece);
      chars += piece.length;
    }
    return tokens;
  };

/** Counts one piece of text in an encoding, special-token text counted as ordinary text. */
export type PieceEncoder = (piece: string) => number;
export type EncoderLoader = (encoding: EncodingName) => PieceEncoder;

const requireFromHere = createRequire(import.meta.url);

/**
 * A js-tiktoken encoder that only counts. Its constructor also builds the table `decode` reads (a
 * Uint8Array per token, with its own ArrayBuffer: 200,000 of them for o200k_base, ~47 MB of the
 * ~63 MB the encoder holds), which counting never reads: it is emptied here. Measured (issue 32):
 * an idle `npm start` process held 148 MB of heap, 250 MB RSS, the decode table the largest
 * part. Nothing in longhaul decodes tokens; `decode` would return "" for ordinary tokens.
 */
export function countingEncoder(Tiktoken: typeof TiktokenEncoder, ranks: TiktokenBPE): TiktokenEncoder {
  const tiktoken = new Tiktoken(ranks);
  // js-tiktoken's `textMap` (marked internal): rank → bytes, for decode() only.
  (tiktoken as unknown as { textMap?: Map<number, Uint8Array> }).textMap?.clear();
  return tiktoken;
}

/**
 * js-tiktoken's encoder for one encoding, built on first use and then shared by the whole process
 * (tests included): building one parses its rank file, about 1.5 s and 150 MB for o200k_base
 * (about 20 MB of heap stays, the decode table emptied: countingEncoder), so there is never a second. `js-tiktoken/lite` with the one rank file asked for: the other
 * encodings are never loaded. No allowed and no disallowed special tokens: `<|endoftext|>` in
 * user text is ordinary text, where the encoder would throw by default.
 */
const encoders = new Map<EncodingName, PieceEncoder>();
const loadJsTiktoken: EncoderLoader = (encoding) => {
  let encoder = encoders.get(encoding);
  if (encoder === undefined) {
    const { Tiktoken } = requireFromHere("js-tiktoken/lite") as { Tiktoken: typeof TiktokenEncoder };
    const ranks = requireFromHere(encoding === "cl100k_base" ? "js-tiktoken/ranks/cl100k_base" : "js-tiktoken/ranks/o200k_base") as { default?: TiktokenBPE } & TiktokenBPE;
    const tiktoken = countingEncoder(Tiktoken, ranks.default ?? ranks);
    encoder = (piece) => tiktoken.encode(piece, [], []).length;
    encoders.set(encoding, encoder);
  }
  return encoder;
};

/**
 * A counter for one encoding, loading the encoder now. Special tokens such as `<|endoftext|>`
 * in user text are counted as the ordinary text they are (no allowed and no disallowed special
 * tokens), where the tokenizer would throw by default. Long runs are cut (`splitForCounting`).
 * Falls back to chars/4 if the encoder cannot be loaded.
 */
export function buildTokenCounter(encoding: EncodingName, loadEncoder: EncoderLoader = loadJsTiktoken, budget: CountBudget = {}): TokenCounter {
  let encodePiece: PieceEncoder;
  try {
    encodePiece = loadEncoder(encoding);
  } catch {
    return approximateTokenCounter();
  }
  return createTokenCounter(encoding, boundedCount(encodePiece, budget));
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
