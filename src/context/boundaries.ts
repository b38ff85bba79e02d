/**
 * Phase 2: where the head ends and the tail begins. Everything between is the middle, which
 * the summary replaces.
 *
 *   [0, headEnd)                 head: the system prompt, plus the first exchange until the first
 *                                compaction has happened (a `kind: "summary"` message exists)
 *   [headEnd, keptStart)         middle
 *   [keptStart, protectedStart)  kept because the latest user message is at or before it; tool
 *                                results here are pruned like the middle's (phase 1)
 *   [protectedStart, end)        protected tail, by token budget; never touched, except that a
 *                                newest tool result too big to fit is cut
 *
 * Boundaries fall between message groups only, so a tool call is never split from its results.
 */
import type { ChatMessage } from "../core/messages.js";
import { groupMessages, hasToolCalls, isSummary, lastIndexWhere } from "./message-groups.js";
import type { TokenCounter } from "./tokens.js";

/** protect_last_n holds only while the tail stays within this multiple of the budget. */
export const PROTECT_LAST_N_BUDGET_FACTOR = 1.5;

export interface BoundaryOptions {
  counter: TokenCounter;
  /** threshold_tokens × target_ratio. */
  tailBudgetTokens: number;
  /** PROTECT_LAST_N, default 20. */
  protectLastN: number;
}

export interface Boundaries {
  headEnd: number;
  keptStart: number;
  protectedStart: number;
  /** Index of the latest summary message, or -1 before the first compaction. */
  summaryIndex: number;
}

export function headEndOf(messages: readonly ChatMessage[], firstCompaction: boolean): number {
  let headEnd = messages[0]?.role === "system" ? 1 : 0;
  if (!firstCompaction) return headEnd;
  // The first exchange: the user's opening message and a plain reply to it. A reply that
  // starts a tool loop is left to the middle: the head would otherwise carry the whole loop.
  if (messages[headEnd]?.role === "user") {
    headEnd += 1;
    const reply = messages[headEnd];
    if (reply?.role === "assistant" && !hasToolCalls(reply)) headEnd += 1;
  }
  return headEnd;
}

export function findBoundaries(messages: readonly ChatMessage[], options: BoundaryOptions): Boundaries {
  const summaryIndex = lastIndexWhere(messages, isSummary);
  const lastUser = lastIndexWhere(messages, (message) => message.role === "user" && !isSummary(message));
  let headEnd = headEndOf(messages, summaryIndex === -1);
  // The running turn's request is never folded away. On a session's first long turn it sits in
  // the head, before the first summary; the next compaction (head = system prompt only) would
  // fold it and leave a request without any user message. The head keeps it instead.
  if (lastUser >= headEnd && lastUser < summaryIndex) headEnd = lastUser + 1;
  // The previous summary always belongs to the middle: this compaction replaces it.
  const floor = Math.max(headEnd, summaryIndex + 1);

  const budget = options.tailBudgetTokens;
  const groups = groupMessages(messages);
  let protectedStart = messages.length;
  let tailTokens = 0;
  let tailMessages = 0;
  for (let position = groups.length - 1; position >= 0; position -= 1) {
    const group = groups[position]!;
    if (group.start < floor) break;
    let groupTokens = 0;
    for (let index = group.start; index < group.end; index += 1) groupTokens += options.counter.countMessage(messages[index]!);
    const newest = protectedStart === messages.length;
    const withinBudget = tailTokens + groupTokens <= budget;
    const withinProtectLastN =
      tailMessages < options.protectLastN && tailTokens + groupTokens <= PROTECT_LAST_N_BUDGET_FACTOR * budget;
    if (!newest && !withinBudget && !withinProtectLastN) break;
    protectedStart = group.start;
    tailTokens += groupTokens;
    tailMessages += group.end - group.start;
  }

  const keptStart = lastUser >= floor ? Math.min(protectedStart, lastUser) : protectedStart;
  return { headEnd, keptStart, protectedStart, summaryIndex };
}
