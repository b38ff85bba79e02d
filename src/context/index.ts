/**
 * The context engine (SPEC §3): pure code, no Redis, no HTTP, no config. Everything other
 * folders may use is exported here; the rest of `src/context` is private.
 *
 * Tokens (tokens.ts, calibration.ts)
 *   getTokenCounter(model: string): TokenCounter            one per encoding per process, built on first use
 *   encodingForModel(model: string): "o200k_base" | "cl100k_base"
 *   createTokenCounter(encoding: string, countText: (text: string) => number): TokenCounter
 *   TokenCounter { encoding; countText(text); countMessage(message) (cached in message.tokens);
 *                  countMessages(messages) (+REPLY_PRIMING_TOKENS, 3); countTools(tools) }
 *   initialCalibration(): CalibrationState                    { ratio: 1, samples: 0 }
 *   updateCalibration(state, { estimatedTokens, reportedPromptTokens })
 *     → { state, observedRatio, suspectedTruncation }         log a warning when suspectedTruncation
 *   calibratedCount(state, estimatedTokens): number
 *
 * Decisions (decisions.ts)
 *   needsHygiene({ messageCount, tokens, contextWindow, threshold }): boolean      pre-turn, HYGIENE_THRESHOLD
 *   needsCompaction({ tokens, contextWindow, threshold, fixedTokens?, hardLimitTokens? }): boolean
 *                                                  in-loop, COMPACTION_THRESHOLD of the window the fixed overhead leaves
 *   compactionThreshold({ contextWindow, threshold, fixedTokens?, hardLimitTokens? }): number
 *                                                  fixed + threshold × (window − fixed), never under threshold × window,
 *                                                  never over the hard limit (which wins when they cross)
 *   thresholdTokens(contextWindow, threshold, { fixedTokens?, hardLimitTokens? }?): number   the same, floored
 *   defaultHardLimit(contextWindow): number
 *   initialAntiThrash(): AntiThrashState                                           { ineffective: 0 }
 *   autoCompactionAllowed(state, tokens, contextWindow): boolean
 *   recordCompactionOutcome(state, { tokensAfter, thresholdTokens, manual? }): AntiThrashState
 *
 * Compaction (compact.ts)
 *   compact({ messages, tools?, extraTokens?, settings: { contextWindow, compactionThreshold, targetRatio,
 *             protectLastN, hardLimitTokens?, tokenRatio?, userTextMaxTokens? }, reason, focus?, summarizer, fallbackSummarizer?,
 *             counter, newId, retry?: { attempts?, baseDelayMs?, timeoutMs? }, signal?, now? })
 *     → Promise<{ status: "compacted" | "failed" | "dropped" | "skipped"; messages; record; error? }>
 *   foldsMessages({ messages, tools?, extraTokens?, settings, counter }): boolean   would it fold anything (flush first only then)
 *   fixedOverheadTokens({ messages, tools?, extraTokens?, counter, tokenRatio? }): number
 *     tools + system block + system prompt, in the provider's tokens: the `fixedTokens` of the threshold
 *   tailBudgetTokens(threshold, targetRatio, fixedTokens, hardLimitTokens?): number   the protected tail's budget,
 *     targetRatio × (threshold − fixedTokens), with a floor under a hard limit that caps the threshold
 *   targetRatioForTail(tailTokens, threshold, fixedTokens, hardLimitTokens?): number   its inverse (/compress)
 *   The input is never mutated (only token counts are cached on messages). New messages (the
 *   summary, stub tool results) carry ids from `newId`: store them in the transcript. Rejects
 *   with the signal's reason when aborted.
 *
 * Prompt caching (caching.ts)
 *   applyPromptCaching(messages: ApiMessage[], { model, sessionId })
 *     → { messages: WireMessage[]; promptCacheKey?: string }
 *
 * Overflow (overflow.ts)
 *   detectContextOverflow({ status?, code?, type?, message?, body? }) → { overflow; contextWindow? }
 *
 * Tool pairs (assemble.ts)
 *   repairToolPairs(messages, newId) → { messages; droppedResults; movedResults; stubbedCalls; stubs }
 *     every call answered once, right after it (results moved back, stubs for lost ones,
 *     orphans dropped); run before every request. Store `stubs` in the transcript.
 *
 * User text (user-text.ts)
 *   capUserMessages(messages: UserMessage[], maxTokens, counter) → { messages; cutIds }
 *     a batch's user messages fitted into maxTokens (counter units): large ones cut to head + tail
 *     with recall("id"); the transcript keeps the originals
 *   userTextCapTokens(contextWindow, tokenRatio?, share?, room?) → USER_TEXT_WINDOW_SHARE (0.25) × window, at most half of
 *     what room.fixedTokens leaves under room.hardLimitTokens, in counter units
 *
 * Recall helpers
 *   extractRecallId(content): string | undefined     the id in a placeholder's `recall("…")`
 *   recallIdOf(message): string                      the transcript id of a message's original
 */
export type { ApiMessage, ChatMessage, MessageMeta, ToolCall, ToolDefinition } from "../core/messages.js";
export { toApiMessage, toApiMessages } from "../core/messages.js";

export {
  APPROXIMATE_ENCODING,
  approximateTokenCounter,
  createTokenCounter,
  encodingForModel,
  getTokenCounter,
  REPLY_PRIMING_TOKENS,
  type EncodingName,
  type TokenCounter,
} from "./tokens.js";
export {
  calibratedCount,
  initialCalibration,
  updateCalibration,
  type CalibrationSample,
  type CalibrationState,
  type CalibrationUpdate,
} from "./calibration.js";

export {
  autoCompactionAllowed,
  compactionThreshold,
  defaultHardLimit,
  initialAntiThrash,
  needsCompaction,
  needsHygiene,
  recordCompactionOutcome,
  thresholdTokens,
  type AntiThrashState,
  type CompactionCheck,
  type CompactionOutcome,
  type HygieneCheck,
  type ThresholdBasis,
} from "./decisions.js";

export {
  compact,
  fixedOverheadTokens,
  foldsMessages,
  tailBudgetTokens,
  targetRatioForTail,
  type CompactInput,
  type CompactResult,
  type CompactionReason,
  type CompactionRecord,
  type CompactionSettings,
  type CompactionStatus,
  type OverheadInput,
} from "./compact.js";
export type { Summarizer, SummaryRequest, SummaryResponse } from "./summarizer.js";
export { SummarizerFailedError, SummarizerTimeoutError, SummarizerWindowError, type RetryPolicy } from "./summarize.js";
export { COMPACTION_NOTE, SUMMARY_END_MARKER, SUMMARY_HEADER, sanitizeToolPairs as repairToolPairs, type SanitizeResult as ToolPairRepair } from "./assemble.js";
export { extractRecallId, recallIdOf } from "./prune.js";
export { capUserMessages, userTextCapTokens, USER_TEXT_WINDOW_SHARE, type CappedUserMessages } from "./user-text.js";

export { applyPromptCaching, isAnthropicFamily, type CachedRequest, type PromptCachingOptions } from "./caching.js";
export { detectContextOverflow, type OverflowVerdict, type ProviderErrorShape } from "./overflow.js";
