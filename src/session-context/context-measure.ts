/**
 * How big a session's context is, in the provider's tokens: the token counter (built on first
 * use), the window (the model's, or the smaller one learned from an overflow), our estimate of a
 * request (messages, tools, the memory block) summed once per turn and extended by what the turn
 * appends, the calibration that turns it into the provider's count, and the hard limit. The
 * first stage of session-context.ts, which decides what to do with the measure.
 */
import {
  calibratedCount, defaultHardLimit, getTokenCounter, initialCalibration, REPLY_PRIMING_TOKENS,
  type AntiThrashState, type CalibrationState, type ChatMessage, type TokenCounter, type ToolDefinition,
} from "../context/index.js";
import type { LlmClient } from "../core/llm.js";
import type { SessionState } from "../session/state.js";
import type { ContextHooks } from "./context-manager.js";

/** What this binding keeps in `state.engine` (JSON, stored with the session). */
export interface EngineFields {
  /** The tokenizer-to-provider ratio, for the model it was measured on. */
  calibration?: CalibrationState;
  calibrationModel?: string;
  /** Set after telling the user a compaction failed; cleared by the next one that works. */
  compactionFailureNotified?: boolean;
  antiThrash?: AntiThrashState;
  /**
   * The compaction threshold the engine last judged this context by, in the provider's tokens:
   * the in-loop check's (with the turn's own tools) or a compaction's `thresholdTokens`. What
   * the operator's timeline shows for the commit.
   */
  lastThreshold?: number;
  /** The last main-model request with a usable `prompt_tokens`: real counts first (SPEC §3). */
  lastRequest?: LastRequest;
  /** The real window, learned from an overflow error ("maximum context length is 8192"). */
  learnedWindow?: number;
  notices?: string[];
  systemPromptBase?: string;
  systemPromptNote?: string;
}

/** What the provider reported for the last request, and what we had counted for it. */
export interface LastRequest {
  model: string;
  promptTokens: number;
  /** Our (uncalibrated) estimate of the same request. */
  estimatedTokens: number;
  /** The request's messages: a later context that still holds its last one at the same place extends it. */
  messageCount: number;
  lastId: string | undefined;
}

export const fields = (state: SessionState) => state.engine as EngineFields;

/** The effective ratio is never taken below calibration's own floor (a real count of 0 says nothing). */
const MIN_CALIBRATION_RATIO = 0.5;

/** The share of the window the hard limit keeps free, besides the reply's max_tokens, for the estimate's error. */
const ESTIMATE_MARGIN = 0.05;

/** Whether `items` begins with exactly the objects of `prefix`, in order. */
function startsWith<T>(items: readonly T[], prefix: readonly T[]): boolean {
  if (prefix.length > items.length) return false;
  for (let index = 0; index < prefix.length; index++) if (items[index] !== prefix[index]) return false;
  return true;
}

export interface ContextMeasureOptions {
  llm: LlmClient;
  /** Replies' max_tokens, which the hard limit leaves room for (ContextSettings.replyTokens). */
  replyTokens?: number;
  tools: () => ToolDefinition[];
  hooks: ContextHooks;
  counter?: TokenCounter;
}

export function createContextMeasure(options: ContextMeasureOptions) {
  const { llm, hooks } = options;
  // Built on first use (or by warmUp, when a worker starts), never at import time: the encoder
  // costs ~1.5 s and ~150 MB, which a process that only runs the gateway should not pay.
  let cachedCounter: TokenCounter | undefined = options.counter;
  const counter = () => (cachedCounter ??= getTokenCounter(llm.model));

  const contextWindow = (state: SessionState) => Math.min(llm.contextWindow, fields(state).learnedWindow ?? Number.POSITIVE_INFINITY);
  // A turn's tools depend on the chat (access.tools): the scope carries them; else the built-ins.
  const toolsOf = (tools: readonly ToolDefinition[] | undefined) => tools ?? options.tools();
  // The memory snapshot and pins ride on the system prompt of every request (`prepareRequest`).
  let blockCount: { text: string; tokens: number } | undefined;
  const blockTokens = (state: SessionState | undefined) => {
    const text = state && hooks.systemBlock ? hooks.systemBlock(state) : "";
    if (text === "") return 0;
    if (blockCount?.text !== text) blockCount = { text, tokens: counter().countText(`\n\n${text}`) };
    return blockCount.tokens;
  };
  /**
   * The messages a session's context was last summed over (the manager's own copy of the
   * references) and their tokens, reply priming included: a turn measures its context before
   * hygiene, before each step, after each step and once more after the commit, and in between it
   * only appends (its user messages, the answer, tool calls and results). A context that starts
   * with the same message objects therefore costs the count of what was added; any other (a
   * compaction, /forget, a repaired pair) is summed again in full. Identity suffices: a message is
   * never changed in place, and its count is this counter's. Keyed by the turn's state object,
   * so it lives as long as the turn.
   */
  const summed = new WeakMap<SessionState, { messages: ChatMessage[]; tokens: number }>();
  const messageTokens = (context: readonly ChatMessage[], state: SessionState | undefined) => {
    const known = state === undefined ? undefined : summed.get(state);
    if (known !== undefined && startsWith(context, known.messages)) {
      for (let index = known.messages.length; index < context.length; index++) {
        const message = context[index]!;
        known.tokens += counter().countMessage(message);
        known.messages.push(message);
      }
      return known.tokens;
    }
    let tokens = REPLY_PRIMING_TOKENS;
    for (const message of context) tokens += counter().countMessage(message);
    if (state !== undefined) summed.set(state, { messages: [...context], tokens });
    return tokens;
  };
  /** Our estimate of a request with `context`: messages, tool definitions, the memory block. */
  const estimate = (context: readonly ChatMessage[], tools?: readonly ToolDefinition[], state?: SessionState) =>
    messageTokens(context, state) + counter().countTools(toolsOf(tools)) + blockTokens(state);
  /**
   * The context's size in the provider's tokens, the one unit of every decision (issue #11):
   * the last request's real `prompt_tokens` plus the calibrated estimate of what was added since,
   * when the context extends that request; otherwise the calibrated estimate.
   */
  const measureContext = (state: SessionState, context: readonly ChatMessage[], tools?: readonly ToolDefinition[]) => {
    const estimated = estimate(context, tools, state);
    const calibration = calibrationOf(state);
    const last = fields(state).lastRequest;
    const extendsLast =
      last !== undefined &&
      last.model === llm.model &&
      context.length >= last.messageCount &&
      context[last.messageCount - 1]?.id === last.lastId;
    const tokens = extendsLast
      ? Math.max(0, Math.ceil(last.promptTokens + calibration.ratio * (estimated - last.estimatedTokens)))
      : calibratedCount(calibration, estimated);
    // The provider's tokens per token of ours for this context: what compact() scales by.
    return { tokens, ratio: estimated > 0 ? Math.max(MIN_CALIBRATION_RATIO, tokens / estimated) : calibration.ratio };
  };
  const countContext = (state: SessionState, context: readonly ChatMessage[], tools?: readonly ToolDefinition[]) =>
    measureContext(state, context, tools).tokens;
  /**
   * Over this, the next request and its reply's max_tokens may not fit the window: the default
   * reserve, or the reply's max_tokens plus a margin for the estimate's error (our count of what
   * was added since the last real prompt_tokens, calibrated), whichever leaves more room.
   */
  const hardLimit = (state: SessionState) => {
    const window = contextWindow(state);
    const replyTokens = options.replyTokens ?? 0;
    const withReply = replyTokens > 0 ? window - replyTokens - Math.floor(window * ESTIMATE_MARGIN) : window;
    return Math.min(defaultHardLimit(window), withReply);
  };

  /** A ratio measured on another model (the operator switched) says nothing about this one. */
  const calibrationOf = (state: SessionState) => {
    const engine = fields(state);
    return engine.calibration && engine.calibrationModel === llm.model ? engine.calibration : initialCalibration();
  };

  return { counter, contextWindow, toolsOf, blockTokens, estimate, calibrationOf, measureContext, countContext, hardLimit };
}
