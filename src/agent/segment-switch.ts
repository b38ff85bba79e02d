/**
 * Between the segments of a batch: the model the session uses from this segment on (a /model
 * earlier in the batch applies), who pays for its calls (the chat and the person it answers),
 * and the system prompt (a /persona earlier in the batch applies).
 */
import { BudgetScope, budgetAccounts } from "../budget/index.js";
import { messageIdAllocator } from "../session/state.js";
import type { CompactionScope } from "../session-context/index.js";
import { activeEngine } from "./active-model.js";
import { compactionScope } from "./compaction-scope.js";
import type { RoutingPorts, TurnEngine } from "./ports.js";
import { lastEntryOf } from "./segments.js";
import { ensureSystemPrompt } from "./system-prompt.js";
import type { Segment, SegmentsInput, TurnRun } from "./turn-types.js";

/** The budget scope a batch runs in (absent without budgets); the first payer is the speaker of a pending approval, else the batch's last. */
export function batchBudget(engine: Pick<RoutingPorts, "budget">, input: SegmentsInput): BudgetScope | undefined {
  if (!engine.budget) return undefined;
  const speaker = input.state.pendingApproval?.requestedBy ?? input.batch[input.batch.length - 1];
  return new BudgetScope(engine.budget, budgetAccounts(input.sessionKey, speaker));
}

/** Switches `run` to `segment`: its model, its payer, its system prompt; → the segment's id allocator and compaction scope. */
export function enterSegment(base: TurnEngine, run: TurnRun<TurnEngine>, segment: Segment): { newId: () => string; scope: CompactionScope } {
  // The chosen model's `allow` list is asked on every segment, for the people it answers.
  const speakers = segment.kind === "chat" ? segment.entries : [segment.entry];
  const engine = run.engine = activeEngine(base, run.state, { speakers, admins: base.approval.admins });
  run.budget?.payFrom(budgetAccounts(run.input.sessionKey, lastEntryOf(segment)));
  const newId = messageIdAllocator(run.state);
  const scope = compactionScope(run, newId);
  ensureSystemPrompt(run.state, engine.systemPrompt, newId, engine.now());
  return { newId, scope };
}
