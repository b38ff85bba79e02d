/**
 * The compressor (SPEC §3, layer 2): prune → boundaries → summary → assemble, with the failure
 * policy around the summary. Pure apart from the summarizer call: it returns a new message
 * list and a record, and never mutates its input (only the token-count cache on messages).
 */
import { assemble, extractSummaryText, fixSummaryRoles, sanitizeToolPairs } from "./assemble.js";
import { findBoundaries, PROTECT_LAST_N_BUDGET_FACTOR, type Boundaries } from "./boundaries.js";
import { defaultHardLimit, thresholdTokens } from "./decisions.js";
import { groupMessages, groupTurns, isSummary, toolCallsById } from "./message-groups.js";
import type { ChatMessage, ToolDefinition } from "../core/messages.js";
import type { CallBudget } from "../core/llm.js";
import { cutGroupToFit, pruneToolResults } from "./prune.js";
import { DEFAULT_RETRY_POLICY, summarizeWithFallback, type RetryPolicy, type SummarizeStats } from "./summarize.js";
import type { Summarizer } from "./summarizer.js";
import { summaryBudget } from "./summary-prompt.js";
import type { TokenCounter } from "./tokens.js";
import { cutOversizedUserMessages, halveCutUserMessages, userTextCapTokens } from "./user-text.js";
import { fallbackDigest, splitFallbackDigest } from "./fallback-digest.js";

/**
 * Dropping turns stops this far under the threshold: stopping just under it would make the very
 * next step compact (and drop) again.
 */
export const DROP_TARGET_RATIO = 0.75;
/** The fallback digest of dropped turns may take this share of the threshold (the drop target leaves room for it). */
export const FALLBACK_DIGEST_SHARE = 0.1;

/**
 * The tail budget never falls under this share of `threshold × targetRatio`, however large the
 * fixed overhead — unless the hard limit leaves less than that share above the overhead.
 */
export const MIN_TAIL_SHARE = 0.25;

/**
 * The protected tail's budget (provider tokens): `targetRatio` of what the fixed overhead leaves
 * under the threshold, or of `MIN_TAIL_SHARE` of the threshold when that is more and fits under
 * the hard limit. Past it the floor made every compaction end over the hard limit when the
 * overhead took 80% of the window: each request was refused or cut, and every step paid a summary.
 */
export const tailBudgetTokens = (threshold: number, targetRatio: number, fixedTokens: number, hardLimitTokens = Number.POSITIVE_INFINITY): number =>
  Math.floor(tailBasisTokens(threshold, fixedTokens, hardLimitTokens) * targetRatio);

/** What `targetRatio` is a share of: the threshold after the fixed overhead, with the floor above. */
const tailBasisTokens = (threshold: number, fixedTokens: number, hardLimitTokens: number): number =>
  Math.max(threshold - fixedTokens, Math.min(threshold * MIN_TAIL_SHARE, Math.max(0, hardLimitTokens - fixedTokens)));

/**
 * The `targetRatio` whose tail budget is `tailTokens` (provider tokens), for the same threshold,
 * overhead and hard limit: how a caller that wants a tail of its own (`/compress`) asks compact()
 * for it. Never under 0.001: a tail of nothing still keeps the newest group.
 */
export function targetRatioForTail(tailTokens: number, threshold: number, fixedTokens: number, hardLimitTokens = Number.POSITIVE_INFINITY): number {
  const basis = tailBasisTokens(threshold, fixedTokens, hardLimitTokens);
  return basis > 0 ? Math.max(0.001, tailTokens / basis) : 0.001;
}

/** `idle`: in the background, while nobody waits (src/agent/idle-compaction.ts). */
export type CompactionReason = "hygiene" | "in-loop" | "overflow" | "manual" | "idle";

/**
 * - `compacted`: the middle was summarized (or, with nothing to summarize, only pruned);
 * - `failed`: every summarizer failed and the context was under the hard limit: it is returned unchanged;
 * - `dropped`: every summarizer failed over the hard limit: the oldest middle turns were removed
 *   (they stay in the transcript) — tell the user;
 * - `skipped`: nothing to fold or prune.
 */
export type CompactionStatus = "compacted" | "failed" | "dropped" | "skipped";

export interface CompactionSettings {
  /** The main model's window in tokens. */
  contextWindow: number;
  /**
   * COMPACTION_THRESHOLD (default 0.5): the result must land under the fixed overhead (system
   * prompt, tools, `extraTokens`) plus this fraction of the window it leaves (`compactionThreshold`).
   */
  compactionThreshold: number;
  /** COMPACTION_TARGET_RATIO (default 0.2): tail budget = (threshold tokens − fixed overhead) × this. */
  targetRatio: number;
  /** PROTECT_LAST_N (default 20): recent messages kept while within 1.5× the tail budget. */
  protectLastN: number;
  /** Over this, a failed summary drops old turns. Default: the window minus min(8,192, 10%) for the reply. */
  hardLimitTokens?: number;
  /**
   * The provider's tokens per token of our counter (the session's calibration, or the ratio
   * implied by the last real `prompt_tokens`). Every limit above is in the provider's tokens, so
   * every count is scaled by this before it is compared (issue #11: one unit). @defaultValue 1
   */
  tokenRatio?: number;
  /**
   * The most one user message outside the folded middle may take, in the provider's tokens; a
   * larger one (stored before the cap, or a window that shrank) is cut to it, head and tail
   * with a recall id. @defaultValue `USER_TEXT_WINDOW_SHARE` (25%) of the window
   */
  userTextMaxTokens?: number;
}

/** One compaction, for logs, metrics and /usage. */
export interface CompactionRecord {
  reason: CompactionReason;
  status: CompactionStatus;
  /** Messages + tool definitions + `extraTokens`, calibrated (× `tokenRatio`): the unit of every limit. */
  tokensBefore: number;
  tokensAfter: number;
  /** The threshold this compaction worked against, after the fixed overhead: judge `tokensAfter` by it (anti-thrash). */
  thresholdTokens: number;
  messagesBefore: number;
  messagesAfter: number;
  /** Tool results replaced by placeholders (phase 1) or cut to fit (tail). */
  prunedMessages: number;
  /** Tokens those replacements removed. */
  prunedTokens: number;
  summaryTokens: number;
  /** Every request made, failed attempts and chunks included. */
  summarizerCalls: number;
  /** The model that wrote the summary; null when none did. */
  summarizerModel: string | null;
  summarizerPromptTokens: number;
  summarizerCompletionTokens: number;
  /** Requests the fold took (more than 1 when the summarizer's window is small). */
  chunks: number;
  durationMs: number;
  droppedMessages: number;
}

export interface CompactInput {
  /** The live context, system prompt first. Not mutated. */
  messages: readonly ChatMessage[];
  /** Counted into every token figure, as they are sent with every request. */
  tools?: readonly ToolDefinition[];
  /**
   * Tokens every request adds beyond the messages and tools (the memory snapshot and pins
   * appended to the system prompt), in the counter's units: counted once in every measure, so
   * the hard limit, the drop target and `tokensAfter` see the request as it is sent. @defaultValue 0
   */
  extraTokens?: number;
  settings: CompactionSettings;
  reason: CompactionReason;
  /** `/compress <focus>`: the topic the summary should keep the most detail on. */
  focus?: string;
  /** The chat's time zone: the summarizer reads every message's date in it. Default UTC. */
  timeZone?: string;
  summarizer: Summarizer;
  /** Tried after the summarizer has failed every attempt; usually the main model. */
  fallbackSummarizer?: Summarizer;
  counter: TokenCounter;
  /** Ids for the new messages (the summary, stub results); the caller stores them in the transcript. */
  newId(): string;
  retry?: Partial<RetryPolicy>;
  /** Aborting rejects with the signal's reason; nothing has changed then. */
  signal?: AbortSignal;
  /** Who pays for the summarizer's calls (budgets), passed on to it. */
  budget?: CallBudget;
  now?(): number;
}

export interface CompactResult {
  status: CompactionStatus;
  messages: ChatMessage[];
  record: CompactionRecord;
  /** Why the summary failed (`failed` and `dropped`): a SummarizerFailedError. */
  error?: unknown;
}

type PlanInput = Pick<CompactInput, "messages" | "tools" | "extraTokens" | "settings" | "counter">;

export interface OverheadInput extends Pick<CompactInput, "messages" | "tools" | "extraTokens" | "counter"> {
  /** `CompactionSettings.tokenRatio`. @defaultValue 1 */
  tokenRatio?: number;
}

/** Tool definitions and the system block (`extraTokens`), in the counter's units: with the messages, a request's size. */
const beyondMessages = (input: Pick<CompactInput, "tools" | "extraTokens" | "counter">): number =>
  input.counter.countTools(input.tools ?? []) + Math.max(0, input.extraTokens ?? 0);

/**
 * The part of every request that does not change with the conversation, in the provider's
 * tokens: tool definitions, the system block and the system prompt. They open every request
 * (the provider's cached prefix); the compaction threshold counts on what they leave of the
 * window (`compactionThreshold`).
 */
export function fixedOverheadTokens(input: OverheadInput): number {
  const first = input.messages[0];
  const system = first?.role === "system" ? input.counter.countMessage(first) : 0;
  return Math.ceil((beyondMessages(input) + system) * (input.tokenRatio ?? 1));
}

/** The units and the boundaries a compaction of `input` works with (phase 2). */
function planOf(input: PlanInput) {
  const { messages, counter, settings } = input;
  const ratio = settings.tokenRatio ?? 1;
  // Everything a request carries besides the messages: tool definitions and the system block.
  const fixedTokens = beyondMessages(input);
  // Limits are in the provider's tokens (calibrated); the counter's figures are scaled up to
  // them, and the per-message budgets (tail, cut) scaled down to the counter's.
  const toCounterUnits = (tokens: number) => Math.floor(tokens / ratio);
  const hardLimit = settings.hardLimitTokens ?? defaultHardLimit(settings.contextWindow);
  const overhead = fixedOverheadTokens({ ...input, tokenRatio: ratio });
  const threshold = thresholdTokens(settings.contextWindow, settings.compactionThreshold, { fixedTokens: overhead, hardLimitTokens: hardLimit });
  // The tail's share is of what the fixed overhead leaves under the threshold, as in a window
  // without it. At least a quarter of the usual budget, so that when the hard limit caps the
  // threshold (a huge tool list) the latest turns are still kept.
  const tailBudget = toCounterUnits(tailBudgetTokens(threshold, settings.targetRatio, overhead, hardLimit));
  const boundaries = findBoundaries(messages, { counter, tailBudgetTokens: tailBudget, protectLastN: settings.protectLastN });
  return { ratio, fixedTokens, overhead, toCounterUnits, hardLimit, threshold, tailBudget, boundaries };
}

/**
 * Whether a compaction of `input` would fold anything into a summary (a middle with more than
 * the previous summary), without running it: the memory flush before a fold is paid only then
 * (issue #31).
 */
export function foldsMessages(input: PlanInput): boolean {
  const { boundaries } = planOf(input);
  return input.messages.slice(boundaries.headEnd, boundaries.keptStart).some((message) => !isSummary(message));
}

export async function compact(input: CompactInput): Promise<CompactResult> {
  const now = input.now ?? Date.now;
  const startedAt = now();
  input.signal?.throwIfAborted();
  const { messages, counter, settings } = input;
  const { ratio, fixedTokens, overhead, toCounterUnits, hardLimit, threshold, tailBudget, boundaries } = planOf(input);
  const measure = (list: readonly ChatMessage[]) => Math.ceil((counter.countMessages(list) + fixedTokens) * ratio);
  const tokensBefore = measure(messages);

  // Phase 1 + 2.
  const { headEnd, keptStart } = boundaries;
  const pruned = pruneToolResults(messages, { from: headEnd, to: boundaries.protectedStart }, counter);
  const cutTools = cutNewestGroup(pruned.messages, boundaries, PROTECT_LAST_N_BUDGET_FACTOR * tailBudget, counter);
  const userCap = settings.userTextMaxTokens === undefined
    ? userTextCapTokens(settings.contextWindow, ratio, undefined, { fixedTokens: overhead, hardLimitTokens: hardLimit })
    : toCounterUnits(settings.userTextMaxTokens);
  const capped = cutOversizedUserMessages(cutTools.messages, { from: headEnd, to: keptStart }, userCap, counter);
  // An overflow: the request did not fit by the provider's count; a paste the cap cut shows half as much.
  const working = input.reason === "overflow" ? halveCutUserMessages(capped.messages, { from: headEnd, to: keptStart }, counter) : { messages: capped.messages, cutMessages: 0, cutTokens: 0 };
  const prunedMessages = pruned.prunedMessages + cutTools.cutMessages + capped.cutMessages + working.cutMessages;
  const prunedTokens = pruned.prunedTokens + cutTools.cutTokens + capped.cutTokens + working.cutTokens;

  const stats: SummarizeStats = { calls: 0, promptTokens: 0, completionTokens: 0 };
  const finish = (status: CompactionStatus, result: ChatMessage[], details: Partial<CompactionRecord> = {}, error?: unknown): CompactResult => {
    const record: CompactionRecord = {
      reason: input.reason,
      status,
      tokensBefore,
      tokensAfter: measure(result),
      thresholdTokens: threshold,
      messagesBefore: messages.length,
      messagesAfter: result.length,
      prunedMessages: status === "failed" || status === "skipped" ? 0 : prunedMessages,
      prunedTokens: status === "failed" || status === "skipped" ? 0 : prunedTokens,
      summaryTokens: 0,
      summarizerCalls: stats.calls,
      summarizerModel: null,
      summarizerPromptTokens: stats.promptTokens,
      summarizerCompletionTokens: stats.completionTokens,
      chunks: 0,
      droppedMessages: 0,
      ...details,
      durationMs: now() - startedAt,
    };
    return error === undefined ? { status, messages: result, record } : { status, messages: result, record, error };
  };

  const middle = messages.slice(headEnd, keptStart);
  const toFold = middle.filter((message) => !isSummary(message));
  if (toFold.length === 0) {
    // Nothing new since the last summary: only pruning can help, and it needs no summarizer.
    if (prunedMessages === 0) return finish("skipped", [...messages]);
    return finish("compacted", sanitizeToolPairs(working.messages, input.newId).messages);
  }

  // Phase 3.
  const previousSummaries = middle.filter(isSummary).map((message) => extractSummaryText(message.content ?? ""));
  // The budget scales with what is being folded: the middle as the conversation held it, not
  // as phase 1 pruned it (the summarizer reads the originals), else tool-heavy sessions would
  // always get the minimum budget. The previous summary counts whole (summaryBudget).
  const middleTokens = toFold.reduce((sum, message) => sum + counter.countMessage(message), 0);
  const previousSummaryTokens = previousSummaries.reduce((sum, text) => sum + counter.countText(text), 0);
  const toolNames = new Map([...toolCallsById(messages)].map(([id, call]) => [id, call.function.name]));
  const summarizers =
    input.fallbackSummarizer && input.fallbackSummarizer !== input.summarizer ? [input.summarizer, input.fallbackSummarizer] : [input.summarizer];
  try {
    const outcome = await summarizeWithFallback(
      {
        middle: toFold,
        budgetTokens: summaryBudget({ middleTokens, previousSummaryTokens, contextWindow: settings.contextWindow, fixedTokens: overhead, hardLimitTokens: hardLimit }),
        counter,
        toolNames,
        retry: { ...DEFAULT_RETRY_POLICY, ...input.retry },
        ...(previousSummaries.length > 0 && { previousSummary: previousSummaries.join("\n\n") }),
        ...(input.focus !== undefined && { focus: input.focus }),
        ...(input.timeZone !== undefined && { timeZone: input.timeZone }),
        ...(input.signal !== undefined && { signal: input.signal }),
        ...(input.budget !== undefined && { budget: input.budget }),
      },
      summarizers,
      stats,
    );
    input.signal?.throwIfAborted();

    // Phase 4.
    const summaryId = input.newId();
    const assembled = assemble({
      head: working.messages.slice(0, headEnd),
      summary: { id: summaryId, text: outcome.text, at: now() },
      kept: working.messages.slice(keptStart),
      addNote: true,
    });
    const result = sanitizeToolPairs(assembled, input.newId).messages;
    const summaryMessage = result.find((message) => message.id === summaryId);
    return finish("compacted", result, {
      summaryTokens: summaryMessage ? counter.countMessage(summaryMessage) : 0,
      summarizerModel: outcome.model,
      chunks: outcome.chunks,
    });
  } catch (error) {
    if (input.signal?.aborted) throw input.signal.reason;
    if (tokensBefore <= hardLimit) return finish("failed", [...messages], {}, error);
    // The digest of what is dropped takes room: turns are dropped until it fits under the target too.
    const digestTokens = toCounterUnits(Math.floor(threshold * FALLBACK_DIGEST_SHARE));
    const dropped = dropOldestTurns(working.messages, boundaries, toCounterUnits(Math.floor(threshold * DROP_TARGET_RATIO)) - digestTokens, counter, fixedTokens);
    if (dropped.removed.length === 0) {
      const result = fixSummaryRoles(sanitizeToolPairs(assemble({ head: dropped.messages.slice(0, headEnd), kept: dropped.messages.slice(headEnd), addNote: true }), input.newId).messages);
      return finish("dropped", result, { droppedMessages: 0 }, error);
    }
    // The previous summary stays, with the fallback digest of the dropped turns after it, as one
    // new summary message: the next compaction that works folds both into a real summary. A
    // digest an earlier drop left is merged into this one, within the same room.
    const previous = dropped.messages.find(isSummary);
    const earlier = splitFallbackDigest(previous === undefined ? "" : extractSummaryText(previous.content ?? ""));
    const digest = fallbackDigest(dropped.removed, {
      toolNames, maxTokens: digestTokens, counter, earlier: earlier.digestLines, ...(input.timeZone !== undefined && { timeZone: input.timeZone }),
    });
    const text = earlier.summary === "" ? digest : `${earlier.summary}\n\n${digest}`;
    const rest = dropped.messages.slice(headEnd).filter((message) => message !== previous);
    const result = fixSummaryRoles(sanitizeToolPairs(
      assemble({ head: dropped.messages.slice(0, headEnd), summary: { id: input.newId(), text, at: now() }, kept: rest, addNote: true }),
      input.newId,
    ).messages);
    return finish("dropped", result, { droppedMessages: dropped.removed.length }, error);
  }
}

interface WorkingMessages {
  messages: ChatMessage[];
  cutMessages: number;
  cutTokens: number;
}

/** The newest group is kept whatever its size; its tool results are cut when it alone exceeds what the tail may hold. */
function cutNewestGroup(messages: ChatMessage[], boundaries: Boundaries, maxTokens: number, counter: TokenCounter): WorkingMessages {
  const newest = groupMessages(messages).at(-1);
  if (newest === undefined || newest.start < boundaries.protectedStart) return { messages, cutMessages: 0, cutTokens: 0 };
  const group = messages.slice(newest.start);
  const cut = cutGroupToFit(group, maxTokens, counter);
  if (cut.cutMessages === 0) return { messages, cutMessages: 0, cutTokens: 0 };
  const sum = (list: readonly ChatMessage[]) => list.reduce((total, message) => total + counter.countMessage(message), 0);
  return {
    messages: [...messages.slice(0, newest.start), ...cut.messages],
    cutMessages: cut.cutMessages,
    cutTokens: sum(group) - sum(cut.messages),
  };
}

/**
 * The last resort (every summarizer failed and the context is over the hard limit): remove
 * whole middle turns, oldest first, until the context is back under the target (75% of the
 * compaction threshold), in the counter's units.
 * The previous summary is never dropped. The turns remain in the transcript for `recall`.
 */
function dropOldestTurns(
  messages: readonly ChatMessage[],
  boundaries: Boundaries,
  targetTokens: number,
  counter: TokenCounter,
  fixedTokens: number,
): { messages: ChatMessage[]; removed: ChatMessage[] } {
  const removed = new Set<number>();
  let tokens = counter.countMessages(messages) + fixedTokens;
  for (const turn of groupTurns(messages, boundaries.headEnd, boundaries.keptStart)) {
    if (tokens < targetTokens) break;
    for (let index = turn.start; index < turn.end; index += 1) {
      if (isSummary(messages[index]!)) continue;
      removed.add(index);
      tokens -= counter.countMessage(messages[index]!);
    }
  }
  return { messages: messages.filter((_, index) => !removed.has(index)), removed: messages.filter((_, index) => removed.has(index)) };
}
