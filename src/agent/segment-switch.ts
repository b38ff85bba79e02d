/**
 * Between the segments of a batch: the model the session uses from this segment on (a /model
 * earlier in the batch applies), who pays for its calls (the chat and the person it answers),
 * and the system prompt (a /persona earlier in the batch applies).
 */
import type { InboundMessage } from "../core/channel.js";
import { BudgetScope, type BudgetAccounts } from "../budget/index.js";
import { activeEngine } from "../models/router.js";
import { messageIdAllocator } from "../session/state.js";
import { platformPrefix } from "../tools/access.js";
import type { TurnRun } from "./approvals.js";
import type { CompactionScope } from "./context-manager.js";
import { lastEntryOf, type Segment } from "./segments.js";
import { ensureSystemPrompt } from "./turn-start.js";
import type { SegmentsInput, TurnEngine } from "./turn-engine.js";
import { chatTimeZone } from "./user-messages.js";

/** The chat (session) and the person (`tg:42`) who pay for a segment's calls. */
export function budgetAccounts(sessionKey: string, speaker: { platform: InboundMessage["platform"]; userId: string } | undefined): BudgetAccounts {
  return speaker && speaker.userId !== "" ? { chat: sessionKey, user: `${platformPrefix(speaker.platform)}:${speaker.userId}` } : { chat: sessionKey };
}

/** The budget scope a batch runs in (absent without budgets); the first payer is the speaker of a pending approval, else the batch's last. */
export function batchBudget(engine: TurnEngine, input: SegmentsInput): BudgetScope | undefined {
  if (!engine.budget) return undefined;
  const speaker = input.state.pendingApproval?.requestedBy ?? input.batch[input.batch.length - 1];
  return new BudgetScope(engine.budget, budgetAccounts(input.sessionKey, speaker));
}

/** Switches `run` to `segment`: its model, its payer, its system prompt; → the segment's id allocator and compaction scope. */
export function enterSegment(base: TurnEngine, run: TurnRun, segment: Segment): { newId: () => string; scope: CompactionScope } {
  const engine = run.engine = activeEngine(base, run.state);
  run.budget?.payFrom(budgetAccounts(run.input.sessionKey, lastEntryOf(segment)));
  const newId = messageIdAllocator(run.state);
  const scope = compactionScope(run, newId);
  ensureSystemPrompt(run.state, engine.systemPrompt, newId, engine.now());
  return { newId, scope };
}

export function compactionScope(run: TurnRun, newId: () => string): CompactionScope {
  return {
    signal: run.input.signal, log: run.input.log, newId, addToTranscript: (messages) => run.transcript.push(...messages),
    onCompacting: () => run.input.preview?.compacting(),
    timeZone: chatTimeZone(run.state, run.engine.timeZone),
    budget: run.budget,
  };
}
