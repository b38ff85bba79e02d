/**
 * Calibration of our token estimate against the `prompt_tokens` the API reports. The estimate
 * is exact for OpenAI models and off by 10–20% for others (Llama, Qwen… behind vLLM or Ollama
 * tokenize differently), so each session keeps a ratio per model and scales its estimates.
 * Plain JSON state: the session stores it between turns.
 */

export interface CalibrationState {
  /** reported ÷ estimated, smoothed; 1 until the first sample. */
  ratio: number;
  /** Samples folded into `ratio` so far. */
  samples: number;
}

export interface CalibrationSample {
  /** What we counted for the request (messages + tools). */
  estimatedTokens: number;
  /** `usage.prompt_tokens` of the same request. */
  reportedPromptTokens: number;
}

export interface CalibrationUpdate {
  state: CalibrationState;
  /** reported ÷ estimated for this sample (unclamped), or undefined when the sample was unusable. */
  observedRatio: number | undefined;
  /**
   * The server reported far fewer tokens than we sent: it most likely cut the prompt without an
   * error (Ollama does this when the prompt exceeds its `num_ctx`). The caller should log
   * "possible silent truncation"; the sample is not folded into the ratio.
   */
  suspectedTruncation: boolean;
}

/** Weight of a new sample: a few turns to settle, yet one odd request does not swing it. */
export const CALIBRATION_SMOOTHING = 0.3;
export const MIN_CALIBRATION_RATIO = 0.5;
export const MAX_CALIBRATION_RATIO = 2;
/** Below this fraction of our estimate, the prompt was probably truncated rather than tokenized differently. */
export const TRUNCATION_SUSPICION_RATIO = 0.6;
/** Tiny requests give noisy ratios (the fixed overheads dominate). */
export const MIN_ESTIMATE_FOR_CALIBRATION = 64;

export const initialCalibration = (): CalibrationState => ({ ratio: 1, samples: 0 });

const clamp = (value: number, low: number, high: number): number => Math.min(high, Math.max(low, value));

export function updateCalibration(state: CalibrationState, sample: CalibrationSample): CalibrationUpdate {
  const { estimatedTokens, reportedPromptTokens } = sample;
  const usable =
    Number.isFinite(estimatedTokens) &&
    Number.isFinite(reportedPromptTokens) &&
    reportedPromptTokens > 0 &&
    estimatedTokens >= MIN_ESTIMATE_FOR_CALIBRATION;
  if (!usable) return { state, observedRatio: undefined, suspectedTruncation: false };

  const observedRatio = reportedPromptTokens / estimatedTokens;
  if (observedRatio < TRUNCATION_SUSPICION_RATIO) return { state, observedRatio, suspectedTruncation: true };

  const clamped = clamp(observedRatio, MIN_CALIBRATION_RATIO, MAX_CALIBRATION_RATIO);
  const ratio = state.samples === 0 ? clamped : state.ratio + CALIBRATION_SMOOTHING * (clamped - state.ratio);
  return {
    state: { ratio: clamp(ratio, MIN_CALIBRATION_RATIO, MAX_CALIBRATION_RATIO), samples: state.samples + 1 },
    observedRatio,
    suspectedTruncation: false,
  };
}

/** The estimate scaled by the session's ratio, rounded up (over-estimating only compacts a little early). */
export const calibratedCount = (state: CalibrationState, estimatedTokens: number): number =>
  Math.ceil(estimatedTokens * state.ratio);
