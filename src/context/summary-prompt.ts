/**
 * What the summarizer is asked (phase 3). The middle is sent as a labelled transcript inside
 * one user message rather than as chat messages: the summarizer must not mistake it for a
 * live conversation and answer it, and tool results need no call/result pairing there.
 * Message ids stay in the labels so the summary can point the agent at `recall`.
 */
import type { ApiMessage, ChatMessage } from "../core/messages.js";
import { clipMiddle, recallIdOf } from "./prune.js";

export const SUMMARY_TEMPLATE = `## Goal
## Constraints & Preferences
## Progress
### Done
### In Progress
### Blocked
## Key Decisions
## Relevant Files & Identifiers
## Next Steps
## Critical Context
## Pending User Requests`;

/**
 * Per-message caps in the transcript the summarizer reads. User messages are kept nearly whole
 * (their key phrases are quoted verbatim); tool outputs are mostly bulk, and their originals
 * stay reachable through `recall`.
 */
const MAX_CHARS_BY_ROLE = { system: 4_000, user: 12_000, assistant: 6_000, tool: 3_000 } as const;

export interface SummaryBudgetInput {
  /** Tokens of the middle being replaced (previous summary included). */
  middleTokens: number;
  /** The main model's window. */
  contextWindow: number;
}

/**
 * clamp(0.20 × middle, lo, hi) with hi = min(12,000, 5% of the window, or 10% under 64K) and
 * lo = min(2,000, hi): when the bounds cross, the upper one wins (SPEC §3).
 */
export function summaryBudget({ middleTokens, contextWindow }: SummaryBudgetInput): number {
  const share = contextWindow < 64_000 ? 0.1 : 0.05;
  const high = Math.min(12_000, Math.floor(contextWindow * share));
  const low = Math.min(2_000, high);
  return Math.max(low, Math.min(high, Math.floor(middleTokens * 0.2)));
}

export function summarySystemPrompt(budgetTokens: number): string {
  return `You compact the context of a long-running chat agent. You write a handoff summary of earlier conversation turns; it replaces those turns in the agent's context, so the agent must be able to carry on from it alone. The original messages stay in an archive the agent can fetch by message id.

Use exactly this template, with these headings in this order; write "None." under a heading with nothing to report:

${SUMMARY_TEMPLATE}

Rules:
- Quote the user's key phrases verbatim, in double quotes (requests, requirements, preferences, corrections, decisions). Do not paraphrase them.
- Keep identifiers literally: message ids such as [m17], other ids, numbers, amounts, dates, file paths, URLs, commands, names and error messages.
- Write in the language of the conversation (the language the user writes in); keep the headings exactly as given.
- Record what happened and what is still open. Do not address the user, do not answer questions, do not continue the conversation.
- Keep the summary under ${budgetTokens} tokens: drop obsolete detail before current facts.`;
}

export interface SummaryPromptInput {
  /** The previous summary (earlier compaction) or the running one (earlier chunk). */
  previousSummary?: string;
  /** The serialized turns of this request. */
  turns: string;
  budgetTokens: number;
  /** `/compress <focus>`. */
  focus?: string;
  /** Set when the middle is folded in several chunks. */
  part?: { index: number; count: number };
}

export function buildSummaryMessages(input: SummaryPromptInput): ApiMessage[] {
  const sections: string[] = [];
  if (input.previousSummary !== undefined) {
    sections.push(`<previous-summary>\n${input.previousSummary}\n</previous-summary>`);
  }
  const part = input.part && input.part.count > 1 ? ` part="${input.part.index} of ${input.part.count}"` : "";
  sections.push(`<turns${part}>\n${input.turns}\n</turns>`);
  if (input.focus !== undefined && input.focus.trim() !== "") {
    sections.push(
      `Focus: the user asked to focus the summary on "${input.focus.trim()}". Give it the most detail; keep unrelated sections brief.`,
    );
  }
  sections.push(
    input.previousSummary === undefined
      ? `Write the summary of the turns above, under ${input.budgetTokens} tokens.`
      : `Update the previous summary with the turns above, which came after it: move finished items from In Progress to Done, add new progress, decisions and facts, and drop items that are obsolete or superseded. Keep everything from the previous summary that still matters. Output the complete updated summary, under ${input.budgetTokens} tokens.`,
  );
  return [
    { role: "system", content: summarySystemPrompt(input.budgetTokens) },
    { role: "user", content: sections.join("\n\n") },
  ];
}

/** One middle message as a transcript entry, e.g. `[m18] assistant → read_file {"path":"a.ts"}`. */
export function serializeMessage(message: ChatMessage, toolNames: ReadonlyMap<string, string>): string {
  const clip = (text: string) =>
    clipMiddle(text, MAX_CHARS_BY_ROLE[message.role], (shown) => `[… ${text.length - shown} chars omitted; recall("${recallIdOf(message)}") for all …]`);
  switch (message.role) {
    case "system":
      return `[${message.id}] system: ${clip(message.content)}`;
    case "user":
      return `[${message.id}] user: ${clip(message.content)}`;
    case "assistant": {
      const lines = [`[${message.id}] assistant: ${clip(message.content ?? "")}`];
      for (const call of message.tool_calls ?? []) lines.push(`  → calls ${call.function.name} ${clipMiddle(call.function.arguments, 1_000, () => "…")}`);
      return lines.join("\n");
    }
    case "tool":
      return `[${message.id}] tool result (${toolNames.get(message.tool_call_id) ?? "unknown tool"}): ${clip(message.content)}`;
  }
}
