/**
 * Writes each commit's entry in the session's turn history (src/session/turn-history.ts): the
 * worker knows the chat's model, its window and prices. Commits that neither called a model nor
 * compacted (most commands) write nothing.
 */
import type { Redis } from "ioredis";
import type { ModelRouter } from "../src/models/router.js";
import { appendTurnHistory, turnHistoryEntry, type TurnRecorder } from "../src/session/turn-history.js";

export function createTurnRecorder(options: { redis: Redis; prefix: string; models: ModelRouter; now(): number }): TurnRecorder {
  const { catalogue } = options.models;
  return async (sessionKey, commit) => {
    const model = catalogue.active(commit.after.chat?.model);
    const context = options.models.bind(model).context;
    const window = context.contextWindow(commit.after);
    const speaker = commit.batch.findLast((entry) => entry.userId !== "" && entry.platform !== undefined);
    const entry = turnHistoryEntry(commit.before, commit.after, {
      version: commit.version, at: options.now(), kind: commit.kind, window,
      // The threshold the turn was judged by, with its own tools (MCP, opt-in built-ins); the
      // built-ins stand in only for a session the engine has not checked since it kept that.
      threshold: context.lastThreshold(commit.after) ?? context.thresholdTokens(commit.after, commit.after.live), model: model.name,
      ...(speaker ? { user: `${speaker.platform}:${speaker.userId}` } : {}),
      ...(speaker?.chatType === "private" ? { title: speaker.userName } : {}),
      usd: (delta) => {
        // The summarizer's tokens at its own catalogue prices when it is a catalogue model, else the chat model's.
        const summarizerModel = commit.after.stats.compactions > 0 ? lastSummarizer(commit.after) : undefined;
        const summarizerPrices = catalogue.models.find((candidate) => candidate.id === summarizerModel)?.prices ?? model.prices;
        const uncached = Math.max(0, delta.prompt - delta.cached);
        return (uncached * model.prices.input + delta.cached * model.prices.cachedInput + delta.completion * model.prices.output +
          delta.summarizerPrompt * summarizerPrices.input + delta.summarizerCompletion * summarizerPrices.output) / 1_000_000;
      },
    });
    if (entry.prompt === 0 && entry.summarizerPrompt === 0 && entry.compactions.length === 0) return;
    await appendTurnHistory(options.redis, options.prefix, sessionKey, entry);
  };
}

function lastSummarizer(state: { engine: Record<string, unknown> }): string | undefined {
  const marks = (state.engine as { compactionMarks?: Array<{ summarizerModel: string | null }> }).compactionMarks;
  return marks?.at(-1)?.summarizerModel ?? undefined;
}
