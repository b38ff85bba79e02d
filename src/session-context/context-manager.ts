import type { ChatMessage, ToolDefinition, UserMessage } from "../core/messages.js";
import type { CompactionRecord, CompactionReason, CompactionStatus, TokenCounter } from "../context/index.js";
import type { ContextOverflowError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { CallBudget, ChatRequest, ChatResult } from "../core/llm.js";
import type { SessionState } from "../session/state.js";

/** What a turn needs from the context engine, bound to one session's state. */
export interface ContextManager {
  /** The main model's window as currently known (a learned smaller window wins). */
  contextWindow(state: SessionState): number;
  /** Estimated tokens of the context as the next request would send it (with `tools`; default the built-ins). */
  countContext(state: SessionState, context: readonly ChatMessage[], tools?: readonly ToolDefinition[]): number;
  /**
   * The in-loop compaction threshold for this context, in the engine's calibrated unit: its fixed
   * overhead (system prompt, tools, memory block) plus COMPACTION_THRESHOLD of the window that
   * overhead leaves, capped at the hard limit (`compactionThreshold` in src/context).
   */
  thresholdTokens(state: SessionState, context: readonly ChatMessage[], tools?: readonly ToolDefinition[]): number;
  /**
   * The threshold the engine last judged this session's context by (the in-loop check before a
   * step, with that turn's tools, or a compaction's own), in the same unit; unset before any.
   */
  lastThreshold(state: SessionState): number | undefined;
  /**
   * A turn's new user messages as the context keeps them: together at most
   * `USER_TEXT_WINDOW_SHARE` (25%) of the window, and half of what the fixed overhead (system
   * prompt, `tools` — unset: the built-ins — and memory block) leaves under the hard limit; a
   * larger paste cut to head and tail with its recall id (`cutIds`). The caller stores the
   * originals in the transcript.
   */
  admitUserMessages(state: SessionState, messages: readonly UserMessage[], tools?: readonly ToolDefinition[]): { messages: UserMessage[]; cutIds: string[] };
  /** Pre-turn hygiene. `notice` is set when the user must be told something. */
  hygiene(state: SessionState, context: ChatMessage[], scope: CompactionScope): Promise<{ context: ChatMessage[]; notice?: string }>;
  /** In-loop compaction between steps. */
  beforeStep(state: SessionState, context: ChatMessage[], scope: CompactionScope): Promise<ChatMessage[]>;
  /** Reactive compaction after an overflow error; `undefined` when it could not shrink the context. */
  onOverflow(state: SessionState, context: ChatMessage[], error: ContextOverflowError, scope: CompactionScope): Promise<ChatMessage[] | undefined>;
  /**
   * Whether the context, sent with `tools` (unset: the built-ins), is past `mark` × the in-loop
   * compaction threshold (in the engine's calibrated unit) and automatic compaction is not
   * suspended (anti-thrash).
   */
  pastIdleMark(state: SessionState, context: readonly ChatMessage[], mark: number, tools?: readonly ToolDefinition[]): boolean;
  /** Idle-time compaction (reason `idle`): the same compaction as in the loop, flush before the fold included. */
  compactIdle(state: SessionState, context: ChatMessage[], scope: CompactionScope): Promise<{ status: CompactionStatus; context: ChatMessage[] }>;
  /** `/compress [focus]`. → the new context and a line for the user. */
  compactNow(state: SessionState, context: ChatMessage[], focus: string | undefined, scope: CompactionScope): Promise<{ context: ChatMessage[]; summary: string }>;
  prepareRequest(state: SessionState, context: readonly ChatMessage[]): Pick<ChatRequest, "messages" | "promptCacheKey">;
  /** After each step: usage totals, calibration, truncation warning. */
  recordStep(state: SessionState, context: readonly ChatMessage[], result: ChatResult, log: Logger, tools?: readonly ToolDefinition[]): void;
  /** Notices produced during the turn that the user must see (compaction failed, context dropped). */
  takeNotices(state: SessionState): string[];
  /** The main model's token counter (what /context counts with). */
  counter(): TokenCounter;
  /** Builds the tokenizer now (~1.5 s of CPU) so the first turn does not freeze the event loop. */
  warmUp(): void;
}

export interface CompactionScope {
  signal: AbortSignal;
  log: Logger;
  newId: () => string;
  /** New messages a compaction made (the summary, stub results) join the transcript. */
  addToTranscript(messages: readonly ChatMessage[]): void;
  /** A compaction changed the context (`compacted` or `dropped`): the context it left. */
  onCompacted?: (context: readonly ChatMessage[]) => void;
  /** A compaction starts (the live preview shows one status line; the summary itself never streams). */
  onCompacting?: () => void;
  /** The tools this turn offers (they count in the budgets); unset: the built-ins. */
  tools?: readonly ToolDefinition[];
  /** The chat's time zone (`chatTimeZone`): the summarizer reads message dates in it. */
  timeZone?: string;
  /** Who pays for the summarizer's and the memory flush's calls (budgets); absent: not metered. */
  budget?: CallBudget;
}

/**
 * What the rest of the product hangs on compaction (src/memory: the snapshot and pins, the
 * flush before a fold, the notice after one). The engine itself knows nothing of memory.
 */
export interface ContextHooks {
  /** Text every request adds to the system prompt ("" for none); counted in every estimate. */
  systemBlock?(state: SessionState): string;
  /** Before a compaction folds the middle (not on overflow: no room for an extra step). */
  beforeFold?(state: SessionState, fold: FoldInput, scope: CompactionScope): Promise<void>;
  /** After a compaction changed the context; `folded`: the messages that left it. */
  afterCompaction?(state: SessionState, outcome: { reason: CompactionReason; status: "compacted" | "dropped"; folded: readonly ChatMessage[]; record: CompactionRecord }, scope: CompactionScope): Promise<void>;
}

export interface FoldInput {
  context: readonly ChatMessage[];
  reason: CompactionReason;
  /** Estimated tokens of the context as a request would send it, and the window it must fit. */
  tokens: number;
  contextWindow: number;
  /** The tools the turn's requests carry: a step sent with the same ones keeps the provider's cached prefix. */
  tools: readonly ToolDefinition[];
  prepareRequest(context: readonly ChatMessage[]): Pick<ChatRequest, "messages" | "promptCacheKey">;
}
