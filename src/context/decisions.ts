/**
 * When to compact, as pure functions of counts the caller already has. Thresholds arrive as
 * plain numbers (HYGIENE_THRESHOLD, COMPACTION_THRESHOLD of SPEC §8); nothing here reads config.
 */

/** Hygiene never runs on a session this short: there is nothing to fold (Hermes' `len(history) >= 4`). */
export const HYGIENE_MIN_MESSAGES = 4;

export interface HygieneCheck {
  messageCount: number;
  /** The live context's size: messages + tool definitions, calibrated. */
  tokens: number;
  contextWindow: number;
  /** HYGIENE_THRESHOLD, default 0.85. */
  threshold: number;
}

/** Pre-turn hygiene: compact before the turn when the session holds ≥ 4 messages and fills ≥ threshold of the window. */
export const needsHygiene = (check: HygieneCheck): boolean =>
  check.messageCount >= HYGIENE_MIN_MESSAGES && check.tokens >= check.threshold * check.contextWindow;

export interface ThresholdBasis {
  contextWindow: number;
  /** COMPACTION_THRESHOLD, default 0.5: a share of the window the fixed overhead leaves. */
  threshold: number;
  /**
   * What every request carries whatever the conversation holds (the system prompt, tool
   * definitions, the memory block), in the provider's tokens. @defaultValue 0
   */
  fixedTokens?: number;
  /** Where the raise stops (the request plus the reply's room must fit). @defaultValue `defaultHardLimit(contextWindow)` */
  hardLimitTokens?: number;
}

export interface CompactionCheck extends ThresholdBasis {
  tokens: number;
}

/**
 * The compaction threshold in tokens, unrounded: the fixed overhead plus COMPACTION_THRESHOLD of
 * the window it leaves. The overhead is the request's first part (tools, then the system prompt),
 * the provider's cached prefix, so letting it count less costs little; a session with 10K of
 * tools in a 32K window then compacts like one without them in a 22K window, instead of every
 * few turns (issue #31). It is never over the hard limit: with a max_tokens over about half the
 * window, `threshold × window` would be, and every compaction, its budgets taken from a threshold
 * the request cannot reach, ended over the hard limit and ran again at the next step, a summary
 * paid each time (32K window, 16K max_tokens: 230 compactions in 120 turns). With no overhead and
 * a hard limit above it, it is exactly `threshold × window`.
 */
export const compactionThreshold = (basis: ThresholdBasis): number => {
  const fixed = basis.fixedTokens ?? 0;
  const raised = fixed + basis.threshold * (basis.contextWindow - fixed);
  const hardLimit = basis.hardLimitTokens ?? defaultHardLimit(basis.contextWindow);
  return Math.min(hardLimit, Math.max(basis.threshold * basis.contextWindow, raised));
};

/** In-loop compaction between steps. */
export const needsCompaction = (check: CompactionCheck): boolean => check.tokens >= compactionThreshold(check);

/** The token count a compaction must get under (and the in-loop trigger), after the fixed overhead when given. */
export const thresholdTokens = (contextWindow: number, threshold: number, overhead: Pick<ThresholdBasis, "fixedTokens" | "hardLimitTokens"> = {}): number =>
  Math.floor(compactionThreshold({ contextWindow, threshold, ...overhead }));

/**
 * The hard limit when the caller does not give one: the window minus room for the reply
 * (10% of the window, at most 8,192 tokens). Over it, the next request would be refused.
 */
export const defaultHardLimit = (contextWindow: number): number =>
  contextWindow - Math.min(8_192, Math.floor(contextWindow * 0.1));

/**
 * Anti-thrash. A compaction that cannot get under the threshold (the kept tail alone is too
 * big, or the summarizer keeps failing) would otherwise rerun on every step, paying for a
 * summary each time. After two such compactions in a row, automatic compaction stops until
 * the context grows by a meaningful amount, or the user runs /compress.
 */
export interface AntiThrashState {
  /** Consecutive compactions that ended at or over `EFFECTIVE_RATIO` × the threshold. */
  ineffective: number;
  /** Set while suspended: the context size when automatic compaction stopped. */
  suspendedAtTokens?: number;
}

export const INEFFECTIVE_COMPACTIONS_BEFORE_SUSPENDING = 2;
/**
 * A compaction must end under this share of the threshold to count as effective (issue #31).
 * When tools, the system prompt and memory take much of a small window, a compaction can only
 * get just under the threshold, and the session compacts again a few turns later, paying for a
 * summary and a flush each time; counted as ineffective, two of them suspend automatic
 * compaction until the context grows by 10% of the window (bench/long-session, fixed-overhead).
 */
export const EFFECTIVE_RATIO = 0.85;
/** Growth (fraction of the window) after which a suspended session may try again. */
export const RESUME_AFTER_GROWTH_RATIO = 0.1;

export const initialAntiThrash = (): AntiThrashState => ({ ineffective: 0 });

export function autoCompactionAllowed(state: AntiThrashState, tokens: number, contextWindow: number): boolean {
  if (state.suspendedAtTokens === undefined) return true;
  return tokens >= state.suspendedAtTokens + RESUME_AFTER_GROWTH_RATIO * contextWindow;
}

export interface CompactionOutcome {
  tokensAfter: number;
  /** The threshold the compaction worked against (`CompactionRecord.thresholdTokens`, after the fixed overhead). */
  thresholdTokens: number;
  /** A /compress by the user lifts a suspension before this outcome is counted. */
  manual?: boolean;
}

/** Folds one compaction's result (any status: a failed one counts as ineffective) into the state. */
export function recordCompactionOutcome(state: AntiThrashState, outcome: CompactionOutcome): AntiThrashState {
  const base = outcome.manual ? initialAntiThrash() : state;
  if (outcome.tokensAfter < EFFECTIVE_RATIO * outcome.thresholdTokens) return initialAntiThrash();
  const ineffective = base.ineffective + 1;
  return ineffective >= INEFFECTIVE_COMPACTIONS_BEFORE_SUSPENDING
    ? { ineffective, suspendedAtTokens: outcome.tokensAfter }
    : { ineffective };
}
