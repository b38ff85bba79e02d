/**
 * Phase 3: fold the middle into the summary. The middle is split into chunks that fit the
 * summarizer's own window, and each chunk updates the running summary in order, so a small
 * summarizer window makes compaction slower, never silently lossy. Each call is retried with
 * backoff; when the summarizer still fails, the fallback (the main model) redoes the fold.
 */
import type { CallBudget } from "../core/llm.js";
import type { ApiMessage, ChatMessage } from "../core/messages.js";
import { MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS, type TokenCounter } from "./tokens.js";
import type { Summarizer, SummaryResponse } from "./summarizer.js";
import { buildSummaryMessages, serializeMessage } from "./summary-prompt.js";
import { cutTextToTokens } from "./prune.js";
import { redactSecrets } from "./redact.js";

/** Our count is an estimate for another vendor's tokenizer: keep 15% of its window spare. */
export const SUMMARIZER_WINDOW_SAFETY = 0.85;
/** The length asked for may take at most this share of the summarizer's (usable) window. */
export const MAX_SUMMARY_SHARE_OF_SUMMARIZER_WINDOW = 0.15;
/** max_tokens may take at most this share of the usable window (target, headroom and reasoning). */
export const MAX_OUTPUT_SHARE_OF_SUMMARIZER_WINDOW = 0.3;
/**
 * max_tokens = 2 × the target + this: a summary that runs long must still end whole, and a
 * reasoning model spends completion tokens thinking before it writes a word.
 */
export const REASONING_ALLOWANCE_TOKENS = 2_048;
/**
 * A summary longer than this multiple of its target (our count) is not accepted: the chunk plan
 * reserves 1.5 × the target for the running summary, and the next compaction's budget counts it.
 */
export const MAX_SUMMARY_OVER_TARGET = 1.5;
/** Below this many tokens of turns per chunk, folding would take absurdly many calls. */
export const MIN_CHUNK_TOKENS = 256;

export interface RetryPolicy {
  /** Calls per summarizer before giving up on it, first one included. Default 3. */
  attempts: number;
  /** Delay before the second call; doubles for each further one. Default 1,000 ms. */
  baseDelayMs: number;
  /** One call that takes longer counts as failed (and is aborted). Default 120,000 ms. */
  timeoutMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { attempts: 3, baseDelayMs: 1_000, timeoutMs: 120_000 };

/** Delay before retry number `retry` (1 for the second call). */
export const backoffDelay = (retry: number, baseDelayMs: number): number => baseDelayMs * 2 ** (retry - 1);

export class SummarizerTimeoutError extends Error {
  override readonly name = "SummarizerTimeoutError";
  constructor(readonly model: string, readonly timeoutMs: number) {
    super(`summarizer ${model} did not answer within ${timeoutMs} ms`);
  }
}

/** The summarizer stopped at max_tokens (`finish_reason: "length"`) even with more room: a cut summary is never used. */
export class SummaryTruncatedError extends Error {
  override readonly name = "SummaryTruncatedError";
  constructor(readonly model: string, readonly maxTokens: number) {
    super(`summarizer ${model} stopped at max_tokens (${maxTokens}) before finishing the summary`);
  }
}

/** The summarizer wrote more than `MAX_SUMMARY_OVER_TARGET` × the length asked for, twice: the budget holds at worst. */
export class SummaryTooLongError extends Error {
  override readonly name = "SummaryTooLongError";
  constructor(readonly model: string, readonly targetTokens: number) {
    super(`summarizer ${model} wrote more than ${MAX_SUMMARY_OVER_TARGET} × the ${targetTokens} tokens asked for`);
  }
}

/** The summarizer's window cannot hold the prompt, a chunk of turns and the summary. */
export class SummarizerWindowError extends Error {
  override readonly name = "SummarizerWindowError";
}

/** Every summarizer failed; `failures` holds each one's last error, in order. */
export class SummarizerFailedError extends Error {
  override readonly name = "SummarizerFailedError";
  constructor(readonly failures: ReadonlyArray<{ model: string; error: unknown }>) {
    const last = failures.at(-1);
    super(`summary failed (${failures.map((failure) => failure.model).join(", ")})`, { cause: last?.error });
  }
}

/** Accumulated across attempts, failed ones included, for the compaction record and /usage. */
export interface SummarizeStats {
  calls: number;
  promptTokens: number;
  completionTokens: number;
}

export interface SummarizeInput {
  /** The middle, previous summary excluded (it comes as `previousSummary`). */
  middle: readonly ChatMessage[];
  previousSummary?: string;
  /** The length to ask for (summaryBudget); max_tokens leaves room above it. */
  budgetTokens: number;
  focus?: string;
  /** The zone the messages' dates are shown in (the chat's). Default UTC. */
  timeZone?: string;
  counter: TokenCounter;
  /** Tool names by call id, to label tool results. */
  toolNames: ReadonlyMap<string, string>;
  retry: RetryPolicy;
  signal?: AbortSignal;
  /** Who pays for each call (budgets), passed on to the summarizer. */
  budget?: CallBudget;
}

export interface SummarizeOutcome {
  text: string;
  model: string;
  chunks: number;
}

export async function summarizeWithFallback(
  input: SummarizeInput,
  summarizers: readonly Summarizer[],
  stats: SummarizeStats,
): Promise<SummarizeOutcome> {
  const failures: Array<{ model: string; error: unknown }> = [];
  for (const summarizer of summarizers) {
    try {
      return await foldMiddle(input, summarizer, stats);
    } catch (error) {
      if (input.signal?.aborted) throw input.signal.reason;
      failures.push({ model: summarizer.model, error });
    }
  }
  throw new SummarizerFailedError(failures);
}

export interface ChunkPlan {
  /** The length every call asks for: the budget, capped by the summarizer's window. */
  targetTokens: number;
  /** max_tokens of every call: 2 × target + the reasoning allowance, capped by the window. */
  maxTokens: number;
  /** The summarizer's usable window: a retry after a `length` stop may grow max_tokens up to what a request leaves of it. */
  usableWindow: number;
  /** Serialized turns per call, in order; every middle message appears in exactly one. */
  chunks: string[];
}

export function planChunks(input: SummarizeInput, summarizer: Summarizer): ChunkPlan {
  const { counter } = input;
  const window = Math.floor(summarizer.contextWindow * SUMMARIZER_WINDOW_SAFETY);
  const targetTokens = Math.max(1, Math.min(input.budgetTokens, Math.floor(window * MAX_SUMMARY_SHARE_OF_SUMMARIZER_WINDOW)));
  const maxTokens = Math.max(targetTokens, Math.min(2 * targetTokens + REASONING_ALLOWANCE_TOKENS, Math.floor(window * MAX_OUTPUT_SHARE_OF_SUMMARIZER_WINDOW)));
  const frame = buildSummaryMessages({
    previousSummary: "",
    turns: "",
    targetTokens,
    part: { index: 999, count: 999 },
    ...(input.focus !== undefined && { focus: input.focus }),
  });
  const frameTokens =
    REPLY_PRIMING_TOKENS + frame.reduce((sum, message) => sum + MESSAGE_OVERHEAD_TOKENS + counter.countText(message.content ?? ""), 0);
  // Chunk 1 carries the previous summary, later ones the running summary (about the target, a
  // little over it at times).
  const summaryReserve = Math.max(Math.ceil(1.5 * targetTokens), counter.countText(input.previousSummary ?? ""));
  const capacity = window - frameTokens - maxTokens - summaryReserve;
  if (capacity < MIN_CHUNK_TOKENS) {
    throw new SummarizerWindowError(
      `the window of ${summarizer.model} (${summarizer.contextWindow} tokens) leaves ${capacity} tokens per chunk of turns; at least ${MIN_CHUNK_TOKENS} are needed`,
    );
  }

  const chunks: string[] = [];
  let current: string[] = [];
  let currentTokens = 0;
  for (const message of input.middle) {
    // Secrets are taken out before the summarizer reads them (it is told not to copy them too).
    let entry = redactSecrets(serializeMessage(message, input.toolNames, input.timeZone));
    let entryTokens = estimateEntryTokens(message, entry, counter);
    if (entryTokens > capacity) entryTokens = counter.countText(entry) + 1;
    if (entryTokens > capacity) {
      // One message bigger than a whole chunk still goes, once, cut to fit (its head keeps the id label).
      const fullChars = entry.length;
      entry = cutTextToTokens(entry, capacity - 1, counter, (shown) => `[… cut to fit the summarizer: ${shown} of ${fullChars} chars …]`);
      entryTokens = counter.countText(entry) + 1;
    }
    if (current.length > 0 && currentTokens + entryTokens > capacity) {
      chunks.push(current.join("\n"));
      current = [];
      currentTokens = 0;
    }
    current.push(entry);
    currentTokens += entryTokens;
  }
  if (current.length > 0) chunks.push(current.join("\n"));
  return { targetTokens, maxTokens, usableWindow: window, chunks };
}

/** Tokens the entry's label and line breaks add on top of the message's own count. */
const ENTRY_LABEL_TOKENS = 12;

/**
 * An entry's tokens, from the message's cached count scaled to the entry's length (a long
 * message is clipped in the transcript) rather than by encoding the whole middle again, which
 * made a 1M-token compaction spend seconds in the tokenizer. The 15% window safety covers the
 * estimate's error; an entry that looks too big for a chunk is counted exactly.
 */
function estimateEntryTokens(message: ChatMessage, entry: string, counter: TokenCounter): number {
  // A pruned result is shown as its kept original, which its cached count does not cover.
  const cached = message.tokens?.encoding === counter.encoding && message.foldText === undefined ? message.tokens.count : undefined;
  const sourceChars = (message.content ?? "").length + (message.role === "assistant" ? JSON.stringify(message.tool_calls ?? []).length : 0);
  if (cached === undefined || sourceChars === 0) return counter.countText(entry) + 1;
  return Math.ceil((cached * Math.min(entry.length, sourceChars)) / sourceChars) + ENTRY_LABEL_TOKENS;
}

async function foldMiddle(input: SummarizeInput, summarizer: Summarizer, stats: SummarizeStats): Promise<SummarizeOutcome> {
  const plan = planChunks(input, summarizer);
  let running = input.previousSummary === undefined ? undefined : redactSecrets(input.previousSummary);
  for (const [position, turns] of plan.chunks.entries()) {
    const messages = buildSummaryMessages({
      turns,
      targetTokens: plan.targetTokens,
      part: { index: position + 1, count: plan.chunks.length },
      ...(running !== undefined && { previousSummary: running }),
      ...(input.focus !== undefined && { focus: input.focus }),
    });
    // The one retry after a summary ran long asks for half the length, in the same room.
    const shorterTarget = Math.max(1, Math.floor(plan.targetTokens / 2));
    const shorter = appendToLast(
      buildSummaryMessages({
        turns,
        targetTokens: shorterTarget,
        part: { index: position + 1, count: plan.chunks.length },
        ...(running !== undefined && { previousSummary: running }),
        ...(input.focus !== undefined && { focus: input.focus }),
      }),
      `Your previous answer ran past its length limit. Write a shorter summary, about ${shorterTarget} tokens: keep what is pending and current, cut historical detail, and finish every heading.`,
    );
    const response = await callWithRetry(summarizer, { messages, shorter, maxTokens: plan.maxTokens }, plan, input, stats);
    running = redactSecrets(response.text.trim());
  }
  return { text: running ?? "", model: summarizer.model, chunks: plan.chunks.length };
}

/** The messages with `note` added to the last one (the instruction). */
function appendToLast(messages: ApiMessage[], note: string): ApiMessage[] {
  const last = messages.at(-1);
  if (last === undefined || typeof last.content !== "string") return messages;
  return [...messages.slice(0, -1), { ...last, content: `${last.content}\n\n${note}` } as ApiMessage];
}

/**
 * Calls until one whole summary of a bounded length comes back (issue #31). A failure is
 * retried with backoff. A summary that stopped at max_tokens (`finish_reason: "length"`), or
 * that came back longer than `MAX_SUMMARY_OVER_TARGET` × the target, is a failed attempt whose
 * text is never used: it is asked again at once, in the same room, for half the length
 * (`shorter`). A second such answer gives up on this summarizer (the fallback, then the failure
 * policy, take over): a summary never gets more room than its target allows.
 */
async function callWithRetry(
  summarizer: Summarizer,
  request: { messages: ApiMessage[]; shorter: ApiMessage[]; maxTokens: number },
  plan: Pick<ChunkPlan, "targetTokens">,
  input: SummarizeInput,
  stats: SummarizeStats,
): Promise<SummaryResponse> {
  const { retry, signal } = input;
  const { maxTokens } = request;
  let lastError: unknown;
  let messages = request.messages;
  let shortened = false;
  for (let attempt = 1; attempt <= Math.max(1, retry.attempts); attempt += 1) {
    const overLong = lastError instanceof SummaryTruncatedError || lastError instanceof SummaryTooLongError;
    if (attempt > 1 && !(overLong && shortened)) await sleep(backoffDelay(attempt - 1, retry.baseDelayMs), signal);
    signal?.throwIfAborted();
    stats.calls += 1;
    let response: SummaryResponse;
    try {
      response = await callOnce(summarizer, { messages, maxTokens, ...(input.budget ? { budget: input.budget } : {}) }, retry.timeoutMs, signal);
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      // An error that says no retry can help (a used-up budget: src/errors.ts) ends the attempts.
      if (typeof error === "object" && error !== null && (error as { final?: unknown }).final === true) throw error;
      lastError = error;
      continue;
    }
    if (response.usage) {
      stats.promptTokens += response.usage.promptTokens;
      stats.completionTokens += response.usage.completionTokens;
    }
    const tooLong = response.finishReason === "length"
      ? new SummaryTruncatedError(summarizer.model, maxTokens)
      : input.counter.countText(response.text) > MAX_SUMMARY_OVER_TARGET * plan.targetTokens
        ? new SummaryTooLongError(summarizer.model, plan.targetTokens)
        : undefined;
    if (tooLong !== undefined) {
      if (shortened) throw tooLong;
      lastError = tooLong;
      messages = request.shorter;
      shortened = true;
      // The shorter ask does not use up an attempt of the policy (it happens once).
      attempt -= 1;
      continue;
    }
    if (response.text.trim() === "") {
      lastError = new Error(`summarizer ${summarizer.model} returned an empty summary`);
      continue;
    }
    return response;
  }
  throw lastError;
}

/** One call, raced against the timeout and the caller's signal (a summarizer may ignore its signal). */
function callOnce(
  summarizer: Summarizer,
  request: { messages: ApiMessage[]; maxTokens: number },
  timeoutMs: number,
  signal: AbortSignal | undefined,
): Promise<SummaryResponse> {
  return new Promise<SummaryResponse>((resolve, reject) => {
    const controller = new AbortController();
    const settle = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = () => {
      settle();
      controller.abort(signal?.reason);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      settle();
      const error = new SummarizerTimeoutError(summarizer.model, timeoutMs);
      controller.abort(error);
      reject(error);
    }, timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    let pending: Promise<SummaryResponse>;
    try {
      pending = summarizer.summarize({ ...request, signal: controller.signal });
    } catch (error) {
      settle();
      reject(error);
      return;
    }
    pending.then(
      (response) => {
        settle();
        resolve(response);
      },
      (error: unknown) => {
        settle();
        reject(error);
      },
    );
  });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  if (ms <= 0) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
