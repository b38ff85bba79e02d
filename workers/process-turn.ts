/**
 * One turn, on one screen: lease → drain inbox → load → commands / hygiene → agent loop →
 * commit (atomic, version-checked) → hand the reply to delivery.
 */
import type { ReplyTarget, TurnActivity } from "../src/core/channel.js";
import { failureNotice, pasteWaitMs, runTurnSegments, settleWithoutAnswer, type AbortReason, type SegmentsResult, type TurnEngine } from "../src/agent/index.js";
import { AbortedError, PermanentError, RetryableError } from "../src/errors.js";
import { classifyLlmError } from "../src/llm/index.js";
import type { Logger } from "../src/logger.js";
import type { Metrics } from "../src/metrics.js";
import type { Producers } from "../src/queue/index.js";
import type { InboxEntry, SessionStore } from "../src/session/store.js";

export interface TurnDeps {
  store: SessionStore;
  producers: Producers;
  engine: TurnEngine;
  busyMode: "collect" | "queue" | "interrupt";
  leaseMs: number;
  publishActivity(activity: TurnActivity): Promise<void>;
  /** Aborts when /stop or an interrupt asks this session's running turn to stop. */
  watchAbort(sessionKey: string, signal: AbortSignal): { signal: AbortSignal; dispose(): void };
  /** Clears a stale abort flag before the turn claims its batch. */
  clearAbort(sessionKey: string): Promise<void>;
  logger: Logger;
  metrics: Metrics;
  now(): number;
  /** After a commit that archived a conversation (/new, idle reset): its stored tool outputs expire with it. */
  onArchived?(sessionKey: string, sessionId: string): Promise<void>;
}

export type TurnOutcome =
  | { status: "idle" }
  | { status: "busy" }
  | { status: "answered"; version: number; messages: number; replies: number };

export interface TurnAttempt {
  /** Unique per attempt: the lease token. */
  token: string;
  /** No retry follows a failure of this attempt: the user must get an answer now. */
  finalAttempt: boolean;
  signal: AbortSignal;
  /** Set for an approval's timeout job: the approval it denies if still pending. */
  approvalTimeout?: string;
}

export async function processTurn(deps: TurnDeps, sessionKey: string, attempt: TurnAttempt): Promise<TurnOutcome> {
  const { store, producers } = deps;
  const log = deps.logger.child({ sessionKey });

  if (!(await store.acquireLease(sessionKey, attempt.token, deps.leaseMs))) return { status: "busy" };
  const renew = setInterval(() => {
    store.acquireLease(sessionKey, attempt.token, deps.leaseMs).catch((error: unknown) => log.warn({ err: error }, "lease-renew-failed"));
  }, Math.max(250, Math.floor(deps.leaseMs / 3)));
  let target: ReplyTarget | undefined;
  try {
    // A reply committed by an earlier attempt that died before handing it over.
    if ((await store.outboxLength(sessionKey)) > 0) await producers.enqueueDelivery(sessionKey);

    await deps.clearAbort(sessionKey);
    let batch = await store.claimInbox(sessionKey, deps.busyMode === "queue" ? "one" : "all");
    // The newest message may be the first part of a long paste the client split: wait briefly
    // for the rest, so the turn answers the paste once (bounded: a few parts at most).
    for (let round = 0, wait = pasteWaitMs(batch, deps.now()); wait > 0 && round < 8; round++, wait = pasteWaitMs(batch, deps.now())) {
      await new Promise((resolve) => setTimeout(resolve, wait));
      batch = await store.claimInbox(sessionKey, "all");
    }
    // An approval's timeout job has no message of its own: it runs only while that approval waits.
    const state = batch.length > 0 || attempt.approvalTimeout ? await store.load(sessionKey, deps.now()) : undefined;
    const timedOut = attempt.approvalTimeout !== undefined && state?.pendingApproval?.id === attempt.approvalTimeout ? state.pendingApproval : undefined;
    if (!state || (batch.length === 0 && !timedOut)) {
      await store.settle(sessionKey);
      return { status: "idle" };
    }
    target = batch.length > 0 ? targetOf(batch) : timedOut!.target;
    await deps.publishActivity({ type: "turn-started", sessionKey, target });

    const startedAt = performance.now();
    let outcome: "answered" | "stopped" | "failed" = "answered";
    const abort = deps.watchAbort(sessionKey, attempt.signal);
    let result: SegmentsResult;
    try {
      result = await runTurnSegments(deps.engine, {
        sessionKey, state, batch, target, signal: abort.signal, log,
        ...(timedOut ? { approvalTimeout: timedOut.id } : {}),
      });
    } catch (error) {
      const reason = abort.signal.aborted ? (abort.signal.reason as AbortReason) : undefined;
      if (reason === "interrupt" || reason === "shutdown" || attempt.signal.aborted) {
        // Nothing is committed: the batch stays pending and the next turn takes it together
        // with whatever arrived meanwhile.
        log.info({ reason: reason ?? "shutdown" }, "turn-interrupted");
        deps.metrics.turns.inc({ outcome: "interrupted" });
        await producers.enqueueTurn(sessionKey);
        return { status: "idle" };
      }
      if (reason === "stop") {
        // /stop: the batch stays part of the conversation, unanswered; /stop itself replies.
        log.info("turn-stopped");
        outcome = "stopped";
        result = settleWithoutAnswer(deps.engine, { sessionKey, state, batch, target, log }, undefined, (stopped) => {
          stopped.engine.lastTurnAborted = true;
        });
      } else if (isRetryable(error) && !attempt.finalAttempt) {
        deps.metrics.llmErrors.inc({ class: classifyLlmError(error) });
        deps.metrics.turns.inc({ outcome: "retried" });
        throw error;
      } else {
        log.error({ err: error }, "turn-failed");
        outcome = "failed";
        deps.metrics.llmErrors.inc({ class: classifyLlmError(error) });
        result = settleWithoutAnswer(deps.engine, { sessionKey, state, batch, target, log }, failureNotice(error));
      }
    } finally {
      abort.dispose();
    }

    const version = await store.commit(sessionKey, {
      state: result.state,
      transcript: result.transcript,
      outbox: result.replies,
      clearPending: true,
      ...(result.archivedSessionId ? { archivedSessionId: result.archivedSessionId } : {}),
    });
    log.info({ version, messages: batch.length, replies: result.replies.length }, "turn-committed");
    deps.metrics.turns.inc({ outcome });
    deps.metrics.turnSeconds.observe((performance.now() - startedAt) / 1_000);
    if (result.replies.length > 0) await producers.enqueueDelivery(sessionKey);
    for (const timeout of result.approvalTimeouts ?? []) await producers.enqueueApprovalTimeout(sessionKey, timeout.approvalId, timeout.delayMs);
    if (result.archivedSessionId) await deps.onArchived?.(sessionKey, result.archivedSessionId);
    if ((await store.inboxLength(sessionKey)) > 0) await producers.enqueueTurn(sessionKey);
    else await store.settle(sessionKey);
    return { status: "answered", version, messages: batch.length, replies: result.replies.length };
  } finally {
    clearInterval(renew);
    if (target) await deps.publishActivity({ type: "turn-finished", sessionKey, target }).catch(() => undefined);
    await store.releaseLease(sessionKey, attempt.token).catch(() => undefined);
  }
}

/**
 * Replies go where the latest message of the batch came from, as a reply to the latest message
 * a person sent (a scheduled message's id is not a platform message).
 */
function targetOf(batch: readonly InboxEntry[]): ReplyTarget {
  const last = batch[batch.length - 1];
  if (!last) throw new PermanentError("empty batch");
  const replyTo = batch.findLast((entry) => !entry.scheduled)?.messageId;
  return {
    platform: last.platform,
    chatId: last.chatId,
    ...(last.threadId ? { threadId: last.threadId } : {}),
    ...(replyTo !== undefined ? { replyToMessageId: replyTo } : {}),
  };
}

const isRetryable = (error: unknown) => error instanceof RetryableError || !(error instanceof PermanentError || error instanceof AbortedError);
