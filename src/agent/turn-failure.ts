/**
 * When a batch cannot be answered: what the segments before the failing one did stays done, the
 * rest of the batch is kept in the conversation unanswered, and the chat gets a plain notice.
 */
import type { OutboundReply } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import { AbortedError, BudgetExhaustedError, ContextOverflowError, PermanentError, errorMessage } from "../errors.js";
import { messageIdAllocator, type SessionState } from "../session/state.js";
import type { InboxEntry } from "../session/store.js";
import type { Clock } from "./ports.js";
import { answering, buildReply } from "./replies.js";
import { segmentBatch } from "./segments.js";
import { ensureSystemPrompt } from "./system-prompt.js";
import type { SegmentsResult, SettleInput } from "./turn-types.js";
import { reminderMessage, stampFor, toUserMessages } from "./user-messages.js";

/**
 * A segment of a batch failed (the model, or an abort); `done` is what the segments before it
 * did (a `/new` stays done) and `rest` the entries from the failed one on.
 */
export class BatchFailedError extends Error {
  override readonly name = "BatchFailedError";
  constructor(readonly done: SegmentsResult, readonly rest: readonly InboxEntry[], cause: unknown) {
    super(errorMessage(cause), { cause });
  }
}

/**
 * A chat segment failed after a compaction that ran before its first step (paid for: the
 * summarizer's calls). `context` is what that compaction left, ending with the segment's user
 * messages; the orchestrator keeps it as the session's context instead of throwing it away.
 */
export class FailedAfterCompaction extends Error {
  override readonly name = "FailedAfterCompaction";
  constructor(readonly context: readonly ChatMessage[], cause: unknown) {
    super(errorMessage(cause), { cause });
  }
}

/** The error behind a failed batch (the model's, or the abort's). */
export const batchFailureCause = (error: unknown): unknown => (error instanceof BatchFailedError ? error.cause : error);

/**
 * Keeps the user's messages in the session when a turn cannot produce an answer. `done`: what
 * earlier segments of the batch did (BatchFailedError), kept under the settled rest.
 */
export function settleWithoutAnswer(
  engine: Pick<Clock, "now"> & { systemPrompt: string } & Partial<Pick<Clock, "timeZone" | "messageTimeStamps">>,
  input: SettleInput,
  text: string | undefined,
  mark?: (state: SessionState) => void,
  done?: SegmentsResult,
): SegmentsResult {
  const state = structuredClone(done?.state ?? input.state);
  mark?.(state);
  const newId = messageIdAllocator(state);
  ensureSystemPrompt(state, engine.systemPrompt, newId, engine.now());
  const settled: ChatMessage[] = [];
  const replies: OutboundReply[] = [...(done?.replies ?? [])];
  for (const segment of segmentBatch(input.batch)) {
    // A check-in that failed is dropped: the next one looks again.
    if (segment.kind === "command" || segment.kind === "action" || segment.kind === "checkin") continue;
    if (segment.kind === "reminder") {
      // A fixed reminder needs no model: a failure elsewhere in the batch must not swallow it.
      const message = reminderMessage(segment.entry, newId());
      settled.push(message);
      replies.push(buildReply(input, replies.length, segment.entry.text, "answer", answering({ input }, [segment.entry])));
      continue;
    }
    settled.push(...toUserMessages(segment.entries, newId, stampFor(engine, state)));
  }
  state.live.push(...settled);
  state.updatedAt = engine.now();
  if (text !== undefined) replies.push(buildReply(input, replies.length, text, "notice", answering({ input }, input.batch)));
  return {
    state,
    transcript: [...(done?.transcript ?? []), ...settled],
    replies,
    ...(done?.archivedSessionId === undefined ? {} : { archivedSessionId: done.archivedSessionId }),
    ...(done?.approvalTimeouts ? { approvalTimeouts: done.approvalTimeouts } : {}),
  };
}

export function failureNotice(error: unknown): string {
  if (error instanceof ContextOverflowError) {
    // /compress can help: every compaction cuts a user message over its share of the window
    // (the newest included) to head + tail, the whole kept for recall (issue #31).
    return "Sorry — this conversation no longer fits the model's context, even after compacting it. Nothing is lost: send /compress to compact it harder (a very long message is cut to its start and end, the whole kept for recall), or /new to start fresh.";
  }
  if (error instanceof AbortedError) return "Stopped.";
  // Nothing was sent to the model; the message is kept for when the budget allows again.
  if (error instanceof BudgetExhaustedError) return `${error.notice} Your message is saved.`;
  // Never the error's own text: provider and connection errors name hosts and addresses, which
  // belong in the log (turn-failed), not in a chat.
  const why = error instanceof PermanentError
    ? "the model service refused the request; the operator can check the log"
    : "the model service did not answer in time or is unavailable";
  return `Sorry — I couldn't get an answer from the model (${why}). Your message is saved; please try again in a moment.`;
}
