/**
 * Binds the pure context engine to a session: where its state lives (calibration, anti-thrash,
 * a learned window), which counter and summarizers it uses, what it reports (stats, metrics,
 * notices). One instance per worker process; every method takes the session's state. How big a
 * context is (counter, window, estimate, calibration, hard limit) is measured in context-measure.ts.
 */
import {
  applyPromptCaching, autoCompactionAllowed, capUserMessages, compact, fixedOverheadTokens, foldsMessages, initialAntiThrash, userTextCapTokens,
  needsCompaction, needsHygiene, recordCompactionOutcome, tailBudgetTokens, targetRatioForTail, thresholdTokens, toApiMessages, updateCalibration,
  type ChatMessage, type CompactionReason, type Summarizer, type TokenCounter, type ToolDefinition,
} from "../context/index.js";
import type { ContextOverflowError } from "../errors.js";
import type { LlmClient } from "../core/llm.js";
import type { Metrics } from "../metrics.js";
import type { SessionState } from "../session/state.js";
import { noteCompaction } from "../session/turn-history.js";
import type { CompactionScope, ContextHooks, ContextManager } from "./context-manager.js";
import { compactNumber } from "../core/format.js";
import { createContextMeasure, fields } from "./context-measure.js";

export interface ContextSettings {
  hygieneThreshold: number;
  compactionThreshold: number;
  targetRatio: number;
  protectLastN: number;
  /**
   * LLM_MAX_OUTPUT_TOKENS: the `max_tokens` every step asks for. A server counts it into the
   * window (prompt + max_tokens must fit), so the hard limit leaves at least this much room.
   * @defaultValue 0 (only the default reserve, `defaultHardLimit`)
   */
  replyTokens?: number;
}

export interface ContextManagerOptions {
  llm: LlmClient & { learnContextWindow?(window: number): void };
  summarizer: Summarizer;
  fallbackSummarizer?: Summarizer | undefined;
  settings: ContextSettings;
  tools: () => ToolDefinition[];
  metrics?: Metrics;
  /** Summarizer retry policy (tests shorten the delays). */
  retry?: { attempts?: number; baseDelayMs?: number; timeoutMs?: number };
  /** Memory and pins around the engine (src/memory); none: plain compaction. */
  hooks?: ContextHooks;
  /** The token counter; default the main model's (`getTokenCounter`). Tests count what the engine counts with a spy. */
  counter?: TokenCounter;
}

/** Share of the current context a manual compaction keeps verbatim as the tail. */
const MANUAL_TAIL_SHARE = 0.25;

export function createContextManager(options: ContextManagerOptions): ContextManager {
  const { llm, settings } = options;
  const hooks = options.hooks ?? {};
  const { counter, contextWindow, toolsOf, blockTokens, estimate, calibrationOf, measureContext, countContext, hardLimit } = createContextMeasure({
    llm, tools: options.tools, hooks, ...(settings.replyTokens === undefined ? {} : { replyTokens: settings.replyTokens }), ...(options.counter ? { counter: options.counter } : {}),
  });

  /**
   * The compaction threshold's basis for this context, as compact() computes it: the window, and
   * the fixed overhead (tools, memory block, system prompt) at the context's calibration ratio.
   */
  const thresholdBasis = (state: SessionState, context: readonly ChatMessage[], tools?: readonly ToolDefinition[]) => ({
    contextWindow: contextWindow(state),
    threshold: settings.compactionThreshold,
    fixedTokens: fixedOverheadTokens({
      messages: context, tools: toolsOf(tools), extraTokens: blockTokens(state), counter: counter(), tokenRatio: measureContext(state, context, tools).ratio,
    }),
    hardLimitTokens: hardLimit(state),
  });
  const thresholdOf = (state: SessionState, context: readonly ChatMessage[], tools?: readonly ToolDefinition[]) => {
    const { contextWindow: window, threshold, ...overhead } = thresholdBasis(state, context, tools);
    return thresholdTokens(window, threshold, overhead);
  };

  /**
   * `/compress` is asked for while the context may still be far below the threshold, where the
   * usual tail budget would keep everything. It keeps the most recent quarter of the context
   * (at most the usual tail), so a manual compaction always has a middle to fold. The context
   * here is the conversation, what a compaction can fold: a quarter that counted the fixed
   * overhead (tools, memory block, system prompt) would keep all of a short conversation beside
   * a large tool list. The usual tail is the automatic one (`tailBudgetTokens`), and the ratio
   * is turned back into that budget the way compact() does.
   */
  const manualTargetRatio = (state: SessionState, context: readonly ChatMessage[], tools: readonly ToolDefinition[] | undefined, tokens: number) => {
    const { contextWindow: window, threshold: share, fixedTokens, hardLimitTokens } = thresholdBasis(state, context, tools);
    const threshold = thresholdTokens(window, share, { fixedTokens, hardLimitTokens });
    const usualTail = tailBudgetTokens(threshold, settings.targetRatio, fixedTokens, hardLimitTokens);
    const tail = Math.min(usualTail, Math.max(0, tokens - fixedTokens) * MANUAL_TAIL_SHARE);
    return targetRatioForTail(tail, threshold, fixedTokens, hardLimitTokens);
  };


  const notify = (state: SessionState, notice: string) => {
    const engine = fields(state);
    engine.notices = [...(engine.notices ?? []), notice];
  };

  const prepareRequest = (state: SessionState, context: readonly ChatMessage[]) => {
    const messages = toApiMessages(context);
    const block = hooks.systemBlock?.(state) ?? "";
    const first = messages[0];
    if (block !== "" && first?.role === "system") messages[0] = { ...first, content: `${first.content}\n\n${block}` };
    return applyPromptCaching(messages, { model: llm.model, sessionId: state.sessionId });
  };

  async function run(state: SessionState, context: ChatMessage[], reason: CompactionReason, scope: CompactionScope, focus?: string) {
    const window = contextWindow(state);
    scope.onCompacting?.();
    const settingsOf = (measured: { tokens: number; ratio: number }) => ({
      contextWindow: window,
      compactionThreshold: settings.compactionThreshold,
      targetRatio: reason === "manual" ? manualTargetRatio(state, context, scope.tools, measured.tokens) : settings.targetRatio,
      protectLastN: settings.protectLastN,
      hardLimitTokens: hardLimit(state),
      tokenRatio: measured.ratio,
    });
    // The flush is a full request the size of the context: paid only when the compaction will
    // fold something (issue #31), with the turn's own tools so the cached prefix holds.
    if (reason !== "overflow" && hooks.beforeFold &&
      foldsMessages({ messages: context, tools: toolsOf(scope.tools), extraTokens: blockTokens(state), settings: settingsOf(measureContext(state, context, scope.tools)), counter: counter() })) {
      await hooks.beforeFold(state, {
        context, reason, tokens: countContext(state, context, scope.tools), contextWindow: window,
        tools: toolsOf(scope.tools),
        prepareRequest: (current) => prepareRequest(state, current),
      }, scope);
    }
    const measured = measureContext(state, context, scope.tools);
    const result = await compact({
      messages: context,
      tools: [...toolsOf(scope.tools)],
      // The memory snapshot and pins ride on every request: compact() counts them once, with the rest.
      extraTokens: blockTokens(state),
      settings: settingsOf(measured),
      reason,
      ...(focus ? { focus } : {}),
      ...(scope.timeZone ? { timeZone: scope.timeZone } : {}),
      summarizer: options.summarizer,
      ...(options.fallbackSummarizer ? { fallbackSummarizer: options.fallbackSummarizer } : {}),
      counter: counter(),
      newId: scope.newId,
      ...(options.retry ? { retry: options.retry } : {}),
      signal: scope.signal,
      budget: scope.budget,
    });
    const { record } = result;
    const engine = fields(state);
    engine.lastThreshold = record.thresholdTokens;
    engine.antiThrash = recordCompactionOutcome(engine.antiThrash ?? initialAntiThrash(), {
      tokensAfter: record.tokensAfter,
      thresholdTokens: record.thresholdTokens,
      manual: reason === "manual",
    });
    state.stats.summarizerPromptTokens += record.summarizerPromptTokens;
    state.stats.summarizerCompletionTokens += record.summarizerCompletionTokens;
    options.metrics?.compactions.inc({ reason, status: result.status });
    options.metrics?.llmTokens.inc({ kind: "input", role: "summarizer" }, record.summarizerPromptTokens);
    options.metrics?.llmTokens.inc({ kind: "output", role: "summarizer" }, record.summarizerCompletionTokens);
    scope.log.info({ compaction: record }, "compaction-finished");

    if (result.status === "compacted" || result.status === "dropped") {
      delete fields(state).compactionFailureNotified;
      state.stats.compactions++;
      const saved = Math.max(0, record.tokensBefore - record.tokensAfter);
      state.stats.compactionTokensSaved += saved;
      options.metrics?.compactionTokensSaved.inc(saved);
      // Pictures the model has answered about leave the live context (their placeholder and the
      // model's words about them stay): an image part costs hundreds of tokens every request.
      result.messages = dropAnsweredImages(result.messages);
      const known = new Set(context.map((message) => message.id));
      scope.addToTranscript(result.messages.filter((message) => !known.has(message.id)));
      rememberSystemNote(state, result.messages);
      const kept = new Set(result.messages.map((message) => message.id));
      const folded = context.filter((message) => !kept.has(message.id) && message.role !== "system" && message.kind !== "summary");
      // For the operator's timeline (src/session/turn-history.ts): which fold, what it saved, who summarized.
      noteCompaction(state, {
        seq: state.stats.compactions, at: Date.now(), reason, status: result.status,
        tokensBefore: record.tokensBefore, tokensAfter: record.tokensAfter, summarizerModel: record.summarizerModel,
        folded: folded.length, ...(folded[0] ? { firstId: folded[0].id } : {}), ...(folded.at(-1) ? { lastId: folded.at(-1)!.id } : {}),
      });
      await hooks.afterCompaction?.(state, { reason, status: result.status, folded, record }, scope);
      scope.onCompacted?.(result.messages);
    }
    if (result.status === "failed") {
      // Once per streak of failures: the user needs to know, not to hear it every turn.
      if (!fields(state).compactionFailureNotified) {
        notify(state, "I couldn't compact our conversation just now (the summarizer failed). Nothing is lost; I'll try again later, or send /compress.");
        fields(state).compactionFailureNotified = true;
      }
    } else if (result.status === "dropped") {
      notify(state, `Our conversation outgrew my context and the summarizer failed, so I set aside the ${record.droppedMessages} oldest messages. They're kept in the transcript and I can still recall them.`);
    }
    return result;
  }

  return {
    contextWindow,
    countContext,
    thresholdTokens: thresholdOf,
    lastThreshold: (state) => fields(state).lastThreshold,

    admitUserMessages(state, messages, tools) {
      const ratio = calibrationOf(state).ratio;
      const fixedTokens = fixedOverheadTokens({ messages: state.live, tools: toolsOf(tools), extraTokens: blockTokens(state), counter: counter(), tokenRatio: ratio });
      const cap = userTextCapTokens(contextWindow(state), ratio, undefined, { fixedTokens, hardLimitTokens: hardLimit(state) });
      return capUserMessages(messages, cap, counter());
    },

    async hygiene(state, context, scope) {
      const tokens = countContext(state, context, scope.tools);
      const window = contextWindow(state);
      // Over the hard limit (below the threshold when the reply's max_tokens takes much of a small window) the next request would not fit.
      const overHardLimit = tokens >= hardLimit(state);
      if (!overHardLimit && !needsHygiene({ messageCount: context.length, tokens, contextWindow: window, threshold: settings.hygieneThreshold })) {
        return { context };
      }
      // The same cooldown as in-loop compaction: a dead summarizer is not retried every turn
      // (2 models × 3 attempts × the timeout), only once the context has grown, or when the
      // next request would no longer fit.
      if (!autoCompactionAllowed(fields(state).antiThrash ?? initialAntiThrash(), tokens, window) && !overHardLimit) {
        return { context };
      }
      const result = await run(state, context, "hygiene", scope);
      return { context: result.messages };
    },

    async beforeStep(state, context, scope) {
      const tokens = countContext(state, context, scope.tools);
      const window = contextWindow(state);
      const overHardLimit = tokens >= hardLimit(state);
      const basis = thresholdBasis(state, context, scope.tools);
      fields(state).lastThreshold = thresholdTokens(basis.contextWindow, basis.threshold, basis);
      if (!overHardLimit && !needsCompaction({ tokens, ...basis })) return context;
      // Suspended by anti-thrash, unless the next request would not fit: then compact (and drop
      // old turns if the summarizer fails) rather than send a request the provider refuses.
      if (!autoCompactionAllowed(fields(state).antiThrash ?? initialAntiThrash(), tokens, window) && !overHardLimit) return context;
      return (await run(state, context, "in-loop", scope)).messages;
    },

    async onOverflow(state, context, error: ContextOverflowError, scope) {
      if (error.contextWindow && error.contextWindow < (fields(state).learnedWindow ?? Number.POSITIVE_INFINITY)) {
        fields(state).learnedWindow = error.contextWindow;
        llm.learnContextWindow?.(error.contextWindow);
        scope.log.warn({ contextWindow: error.contextWindow }, "context-window-learned");
      }
      const result = await run(state, context, "overflow", scope);
      return result.status === "compacted" || result.status === "dropped" ? result.messages : undefined;
    },

    pastIdleMark(state, context, mark, tools) {
      const tokens = countContext(state, context, tools);
      const window = contextWindow(state);
      if (tokens < mark * thresholdOf(state, context, tools)) return false;
      return autoCompactionAllowed(fields(state).antiThrash ?? initialAntiThrash(), tokens, window);
    },

    async compactIdle(state, context, scope) {
      const result = await run(state, context, "idle", scope);
      return { status: result.status, context: result.messages };
    },

    async compactNow(state, context, focus, scope) {
      const result = await run(state, context, "manual", scope, focus);
      const { record } = result;
      fields(state).notices = [];
      if (result.status === "compacted" || result.status === "dropped") {
        return {
          context: result.messages,
          summary: `Compacted: ${record.messagesBefore} → ${record.messagesAfter} messages, ${compactNumber(record.tokensBefore)} → ${compactNumber(record.tokensAfter)} tokens${focus ? `, focused on "${focus}"` : ""}.`,
        };
      }
      if (result.status === "skipped") return { context, summary: "There is nothing to compact yet: the conversation is all recent." };
      return { context, summary: "I couldn't compact the conversation: the summarizer failed. Nothing changed; please try again later." };
    },

    prepareRequest,

    recordStep(state, context, result, log, tools) {
      state.stats.steps++;
      const usage = result.usage;
      log.debug({ step: state.stats.steps, usage, finishReason: result.finishReason, toolCalls: result.toolCalls.length }, "llm-step-finished");
      if (!usage) return;
      state.stats.promptTokens += usage.promptTokens;
      state.stats.completionTokens += usage.completionTokens;
      state.stats.cachedTokens += usage.cachedTokens;
      state.stats.lastPromptTokens = usage.promptTokens;
      options.metrics?.llmTokens.inc({ kind: "input", role: "main" }, usage.promptTokens);
      options.metrics?.llmTokens.inc({ kind: "output", role: "main" }, usage.completionTokens);
      options.metrics?.llmTokens.inc({ kind: "cached", role: "main" }, usage.cachedTokens);
      const engine = fields(state);
      const estimatedTokens = estimate(context, tools, state);
      const update = updateCalibration(calibrationOf(state), {
        estimatedTokens,
        reportedPromptTokens: usage.promptTokens,
      });
      engine.calibration = update.state;
      engine.calibrationModel = llm.model;
      if (update.suspectedTruncation || usage.promptTokens <= 0) delete engine.lastRequest;
      else {
        engine.lastRequest = {
          model: llm.model,
          promptTokens: usage.promptTokens,
          estimatedTokens,
          messageCount: context.length,
          lastId: context.at(-1)?.id,
        };
      }
      if (update.suspectedTruncation) {
        log.warn({ estimated: estimatedTokens, reported: usage.promptTokens }, "prompt-tokens-far-below-estimate-server-may-truncate-silently");
      }
    },

    counter,

    warmUp() {
      counter();
    },

    takeNotices(state) {
      const engine = fields(state);
      const notices = engine.notices ?? [];
      delete engine.notices;
      return notices;
    },
  };
}

/** Copies of user messages whose inline pictures were already answered, with the pictures no longer inline. */
export function dropAnsweredImages(messages: ChatMessage[]): ChatMessage[] {
  let answered = false;
  const result = [...messages];
  for (let index = result.length - 1; index >= 0; index--) {
    const message = result[index]!;
    if (message.role === "assistant") answered = true;
    if (!answered || message.role !== "user" || !message.attachments?.some((attachment) => attachment.inline)) continue;
    const { tokens: _cached, ...rest } = message;
    result[index] = { ...rest, attachments: message.attachments.map((attachment) => (attachment.inline ? { ...attachment, inline: false } : attachment)) };
  }
  return result;
}

/** Keeps the one-time compaction note on the system prompt across a system-prompt change. */
function rememberSystemNote(state: SessionState, messages: readonly ChatMessage[]): void {
  const engine = fields(state);
  const first = messages[0];
  if (first?.role === "system" && engine.systemPromptBase && first.content.startsWith(engine.systemPromptBase)) {
    engine.systemPromptNote = first.content.slice(engine.systemPromptBase.length);
  }
}
