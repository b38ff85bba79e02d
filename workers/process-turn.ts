/**
 * One turn, on one screen: begin (lease + claim + load, one script) → commands / hygiene →
 * agent loop → end (fenced commit + what is left, one script) → hand the reply to delivery.
 */
import type { OutboundReply, Platform, PreviewUpdate, ReplyTarget, StreamingMode, TurnActivity } from "../src/core/channel.js";
import { PREVIEW_STATUS, TurnPreview } from "../src/agent/preview.js";
import { TurnTyping } from "../src/agent/typing.js";
import {
  BatchFailedError, batchFailureCause, failureNotice, pasteWaitMs, runTurnSegments, settleWithoutAnswer,
  type AbortReason, type SegmentsResult, type TurnEngine,
} from "../src/agent/index.js";
import { AbortedError, PermanentError, RetryableError } from "../src/errors.js";
import { classifyLlmError } from "../src/llm/index.js";
import type { Logger } from "../src/logger.js";
import type { Metrics } from "../src/metrics.js";
import type { Producers } from "../src/queue/index.js";
import { LeaseKeeper } from "../src/session/lease.js";
import type { BeginTurnResult, InboxEntry, SessionStore, WorkLeft } from "../src/session/store.js";
import type { SessionState } from "../src/session/state.js";
import type { TurnRecorder } from "../src/session/turn-history.js";
import type { TurnHooks } from "./test-hooks.js";
import { markStage } from "../src/core/stages.js";
import type { RecentWaits } from "../src/core/queue-wait.js";

export interface TurnDeps {
  store: SessionStore;
  producers: Producers;
  engine: TurnEngine;
  busyMode: "collect" | "queue" | "interrupt";
  /** Lease TTL: a stall (Redis paused, event loop blocked) shorter than this never loses the session. */
  leaseMs: number;
  /** Publishes a typing event (lossy). */
  publishActivity(activity: TurnActivity): Promise<void>;
  /** TYPING_DELAY_MS: no typing event for a turn quicker than this; absent: typing at once. */
  typingDelayMs?: number;
  /** STREAMING for a platform (docs/streaming.md); absent: off. */
  streaming?(platform: Platform): StreamingMode;
  /** STREAMING_DELAY_MS: nothing is previewed before a turn has run this long. */
  previewDelayMs?: number;
  /** Publishes a live preview update (lossy). */
  publishPreview?(update: PreviewUpdate): Promise<void>;
  logger: Logger;
  metrics: Metrics;
  now(): number;
  /** After a commit that archived a conversation (/new, idle reset): its stored tool outputs expire with it. */
  onArchived?(sessionKey: string, sessionId: string): Promise<void>;
  /** After a commit: its entry in the session's turn history (the console's timeline; src/session/turn-history.ts). */
  recordTurn?: TurnRecorder;
  /** After a commit: schedules the session's idle-time compaction (src/agent/idle-compaction.ts). */
  afterCommit?(sessionKey: string, version: number, state: SessionState): Promise<void>;
  /** Test-only pauses at fixed points of a turn (LONGHAUL_TEST_HOOKS). */
  hooks?: TurnHooks;
  /** This worker's recent queue waits, for `/status` (the histogram of /metrics has them too). */
  queueWaits?: RecentWaits;
  /**
   * With replicas (REDIS_MIN_REPLICAS_ACK): called before BEGIN_TURN with the session, it returns
   * the check to make after it — true once replicas follow the master that answered, over the
   * same socket (readConfirmer on the lease key). Absent: the master's word suffices.
   */
  confirmClaim?(sessionKey: string): Promise<() => Promise<boolean>>;
}

export type TurnOutcome =
  | { status: "idle" }
  /** Another attempt holds the session's lease. */
  | { status: "busy"; retryInMs: number }
  /** Another attempt took the session over (this one stalled); nothing of this one was written. */
  | { status: "superseded" }
  | { status: "answered"; version: number; messages: number; replies: number };

export interface TurnAttempt {
  /** Unique per attempt (attemptToken): the lease token every write is fenced by. */
  token: string;
  /** No retry follows a failure of this attempt: the user must get an answer now. */
  finalAttempt: boolean;
  signal: AbortSignal;
  /** Set for an approval's timeout job: the approval it denies if still pending. */
  approvalTimeout?: string;
  /** The BullMQ job, for the log. */
  jobId?: string;
  /** A retry of a failed attempt: its messages' queue wait was counted by the first. */
  retried?: boolean;
}

/** Rounds of waiting for the rest of a paste the client split (a few parts at most). */
const PASTE_ROUNDS = 8;

export async function processTurn(deps: TurnDeps, sessionKey: string, attempt: TurnAttempt): Promise<TurnOutcome> {
  const { store, producers } = deps;
  // One child logger per turn (job and session), not one per layer.
  const log = deps.logger.child(attempt.jobId === undefined ? { sessionKey } : { jobId: attempt.jobId, sessionKey });

  // An approval's timeout job has no message of its own: it takes the lease even when idle.
  const hold = attempt.approvalTimeout !== undefined;
  // Taken before each BEGIN_TURN: the claim the turn runs on is confirmed on the socket that read it.
  let confirmBegun = await deps.confirmClaim?.(sessionKey);
  const first = await store.beginTurn(sessionKey, attempt.token, { leaseMs: deps.leaseMs, mode: deps.busyMode === "queue" ? "one" : "all", hold, now: deps.now() });
  markStage("begun", sessionKey);
  if (first.status === "busy") return first;
  if (first.status === "moved") return forwardMoved(deps, sessionKey, log);
  // A reply committed by an earlier attempt that died before handing it over.
  if (first.outbox > 0 && first.outboxPlatform) await producers.enqueueDelivery(sessionKey, first.outboxPlatform);
  if (first.status === "idle") {
    if (first.outbox === 0) await store.settle(sessionKey);
    return { status: "idle" };
  }
  // Observed once the claim is confirmed (below): an unconfirmed attempt has begun nothing.
  const claimedAt = deps.now();

  const lease = new LeaseKeeper(store.redis, { key: store.keys(sessionKey).lease, token: attempt.token, ttlMs: deps.leaseMs, abortKey: store.keys(sessionKey).abort }, attempt.signal);
  let target: ReplyTarget | undefined;
  let preview: TurnPreview | undefined;
  let typing: TurnTyping | undefined;
  // END_TURN releases the lease with the commit: no second round trip for it then.
  let committed = false;
  try {
    // The newest message may be the first part of a long paste the client split: wait briefly
    // for the rest, then begin again with the same token (the whole pending batch, fresh).
    let begun: BeginTurnResult = first;
    for (let round = 0; begun.status === "claimed" && round < PASTE_ROUNDS && !lease.signal.aborted; round++) {
      const wait = pasteWaitMs(begun.batch, deps.now());
      if (wait <= 0) break;
      await new Promise((resolve) => setTimeout(resolve, wait));
      confirmBegun = await deps.confirmClaim?.(sessionKey);
      begun = await store.beginTurn(sessionKey, attempt.token, { leaseMs: deps.leaseMs, mode: "all", hold, now: deps.now() });
    }
    if (begun.status !== "claimed") return superseded(deps, sessionKey, log, "lost");
    // Before any tool runs: a claim a stale master answered (frozen past its failover and woken)
    // is refused at the commit, but a tool's effect outside Redis is not undone, and the new
    // master's turn runs it again. No replica confirms such a claim: the turn comes back later,
    // its batch left pending (turn-stale-claim.test.ts).
    if (confirmBegun && !(await confirmBegun())) {
      log.warn("turn-claim-unconfirmed");
      return { status: "busy", retryInMs: 1_000 };
    }
    if (!attempt.retried) recordQueueWait(deps, first.batch, claimedAt);
    const { state, batch, claim } = begun;
    const started = { sessionId: state.sessionId, stats: { ...state.stats } };
    const timedOut = attempt.approvalTimeout !== undefined && state.pendingApproval?.id === attempt.approvalTimeout ? state.pendingApproval : undefined;
    if (batch.length === 0 && !timedOut) {
      if (begun.outbox === 0) await store.settle(sessionKey);
      return { status: "idle" };
    }
    target = batch.length > 0 ? targetOf(batch) : timedOut!.target;
    typing = new TurnTyping({ sessionKey, target, publish: deps.publishActivity, delayMs: typingDelay(deps, batch) });
    deps.hooks?.at("turn-begun", batch);
    const startedAt = performance.now();
    let outcome: "answered" | "stopped" | "failed" = "answered";
    let result: SegmentsResult;
    const mode = deps.streaming?.(target.platform) ?? "off";
    preview = mode !== "off" && deps.publishPreview
      ? new TurnPreview({ sessionKey, target, mode, publish: deps.publishPreview, delayMs: deps.previewDelayMs ?? 0 })
      : undefined;
    try {
      result = await runTurnSegments(deps.engine, {
        sessionKey, state, batch, target, signal: lease.signal, log,
        ...(timedOut ? { approvalTimeout: timedOut.id } : {}),
        ...(preview ? { preview } : {}),
      });
    } catch (failure) {
      const error = batchFailureCause(failure);
      const done = failure instanceof BatchFailedError ? failure.done : undefined;
      const settleInput = { sessionKey, state: done?.state ?? state, batch: failure instanceof BatchFailedError ? failure.rest : batch, target, log };
      const reason = lease.signal.aborted ? (lease.signal.reason as AbortReason | "lease-lost") : undefined;
      if (reason === "lease-lost") return superseded(deps, sessionKey, log);
      // The preview this batch was streaming into: the next attempt (same version) continues it.
      const previewId = preview?.current;
      if (reason === "interrupt" || reason === "shutdown" || attempt.signal.aborted) {
        preview?.notice(reason === "interrupt" ? PREVIEW_STATUS.interrupted : PREVIEW_STATUS.resuming);
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
        result = settleWithoutAnswer(deps.engine, settleInput, undefined, (stopped) => {
          stopped.engine.lastTurnAborted = true;
        }, done);
        // The preview keeps what was written, marked as stopped (delivered only if it exists).
        if (previewId !== undefined && preview) result.replies.push(stoppedPreviewReply(sessionKey, state, result.replies.length, target, previewId, preview.stoppedText()));
      } else if (isRetryable(error) && !attempt.finalAttempt) {
        preview?.notice(PREVIEW_STATUS.retrying);
        deps.metrics.llmErrors.inc({ class: classifyLlmError(error) });
        deps.metrics.turns.inc({ outcome: "retried" });
        throw error;
      } else {
        log.error({ err: error }, "turn-failed");
        outcome = "failed";
        deps.metrics.llmErrors.inc({ class: classifyLlmError(error) });
        result = settleWithoutAnswer(deps.engine, settleInput, failureNotice(error), undefined, done);
        // The failure notice takes the preview over: the chat is not left with a dangling one.
        const notice = result.replies[result.replies.length - 1];
        if (previewId !== undefined && notice) notice.preview = previewId;
      }
    }

    // Approvals this commit leaves pending are recorded first, so one is never without a way to
    // expire: the timeout job is added after the commit, and the sweeper adds any that was lost.
    const now = deps.now();
    await store.expectApprovals(sessionKey, (result.approvalTimeouts ?? []).map((timeout) => ({ approvalId: timeout.approvalId, dueAt: now + timeout.delayMs })));
    deps.hooks?.at("before-commit", batch);
    // No heartbeat may land after the commit: it would take the released lease again.
    markStage("commit", sessionKey);
    // From here the answer may reach the chat at any moment: typing not started yet never starts.
    typing.committing();
    await lease.stop();
    const early = earlyDelivery(deps, sessionKey, result.replies, log);
    let delivering: Promise<Platform | undefined> | undefined;
    const ended = await store.endTurn(sessionKey, claim, {
      state: result.state,
      transcript: result.transcript,
      outbox: result.replies,
      ...(result.archivedSessionId ? { archivedSessionId: result.archivedSessionId } : {}),
      ...(batch.length === 0 ? { held: true } : {}),
    }, early && (() => (delivering = early())));
    if (ended.status === "lost" || ended.status === "conflict" || ended.status === "stale") return superseded(deps, sessionKey, log, ended.status);
    committed = true;
    markStage("committed", sessionKey);
    log.info({ version: ended.version, messages: batch.length, replies: result.replies.length, resent: ended.status === "done" }, "turn-committed");
    deps.metrics.turns.inc({ outcome });
    deps.metrics.turnSeconds.observe((performance.now() - startedAt) / 1_000);
    await handOn(deps, sessionKey, ended, target.platform, result, await delivering);
    await deps.recordTurn?.(sessionKey, { version: ended.version, kind: "turn", before: started, after: result.state, batch }).catch((error: unknown) => log.warn({ err: error }, "turn-history-write-failed"));
    // The turn is committed: a lost schedule only means no idle compaction this time.
    await deps.afterCommit?.(sessionKey, ended.version, result.state).catch((error: unknown) => log.warn({ err: error }, "idle-compaction-schedule-failed"));
    return { status: "answered", version: ended.version, messages: batch.length, replies: result.replies.length };
  } finally {
    preview?.close();
    // Before the wait for the lease: a timer due meanwhile would start typing for a turn that is over.
    typing?.finish();
    await (committed ? lease.stop() : lease.release()).catch((error: unknown) => log.warn({ err: error }, "lease-release-failed"));
  }
}

/**
 * The delivery job of the replies a turn is about to commit, sent with the commit (one round
 * trip): on the store's connection it runs right after END_TURN in Redis, so the gateway can
 * only find it once the replies are in the outbox. A commit that turns out lost or in conflict
 * leaves a delivery job that finds nothing of this turn's (it delivers what the outbox holds, or
 * settles an empty one): rare, and cheaper than a second round trip on every turn. The first
 * END_TURN after a script flush (a restarted Redis) is re-sent as EVAL after its NOSCRIPT, so the
 * job may run before the commit: it finds an empty outbox, the session stays listed (its claimed
 * messages are still pending), and the sweeper enqueues the delivery within its interval. → undefined
 * when there is nothing to deliver or the producers use another connection (order would not hold
 * there: `handOn` enqueues after the commit). The call → the platform enqueued, or undefined
 * when the add failed (`handOn` then enqueues again).
 */
function earlyDelivery(deps: TurnDeps, sessionKey: string, replies: readonly OutboundReply[], log: Logger): (() => Promise<Platform | undefined>) | undefined {
  const platform = replies[0]?.target.platform;
  if (platform === undefined || deps.producers.connection !== deps.store.redis) return undefined;
  return () => deps.producers.enqueueDelivery(sessionKey, platform).then(() => platform, (error: unknown) => {
    log.warn({ err: error }, "delivery-enqueue-failed-retrying");
    return undefined;
  });
}

/**
 * After the commit (never before: a turn that cannot commit schedules nothing): replies to
 * deliver (unless their job went out with the commit: `enqueued`), approval timeouts, the
 * archived conversation's tool outputs, messages for the next turn; a session with nothing left
 * is settled.
 */
async function handOn(deps: TurnDeps, sessionKey: string, left: WorkLeft, platform: Platform, result: SegmentsResult, enqueued?: Platform): Promise<void> {
  const outboxPlatform = left.outboxPlatform ?? platform;
  if (left.outbox > 0 && outboxPlatform !== enqueued) await deps.producers.enqueueDelivery(sessionKey, outboxPlatform);
  for (const timeout of result.approvalTimeouts ?? []) await deps.producers.enqueueApprovalTimeout(sessionKey, timeout.approvalId, timeout.delayMs);
  if (result.archivedSessionId) await deps.onArchived?.(sessionKey, result.archivedSessionId);
  if (left.inbox > 0 || left.pending > 0) await deps.producers.enqueueTurn(sessionKey);
  if (left.inbox === 0 && left.pending === 0 && left.outbox === 0) await deps.store.settle(sessionKey);
}

/**
 * Queue wait: from each message's arrival (the ingress's `receivedAt`) to this turn's beginning.
 * A message of an interrupted turn is counted again by the turn that takes it over (it waited
 * again); a retried attempt counts nothing (`TurnAttempt.retried`), nor one whose claim no
 * replica confirmed (it began nothing; the attempt that begins counts it, as of its own claim).
 */
function recordQueueWait(deps: TurnDeps, batch: readonly InboxEntry[], now: number): void {
  for (const entry of batch) {
    const waitMs = Math.max(0, now - entry.receivedAt);
    deps.metrics.queueWaitSeconds.observe(waitMs / 1_000);
    deps.queueWaits?.observe(waitMs, now);
  }
}

/**
 * TYPING_DELAY_MS counts from the oldest message's arrival, not from the turn's start: a
 * message that already waited that long in the queue shows "typing…" the moment its turn
 * begins (the gateway showed it while it waited: src/gateway/waiting-typing.ts), and this
 * turn's `turn-finished` ends the indicator either way.
 */
function typingDelay(deps: TurnDeps, batch: readonly InboxEntry[]): number {
  const delayMs = deps.typingDelayMs ?? 0;
  if (delayMs <= 0 || batch.length === 0) return delayMs;
  const oldest = Math.min(...batch.map((entry) => entry.receivedAt));
  return Math.max(0, delayMs - (deps.now() - oldest));
}

/**
 * This attempt stalled and another took the session (or committed) meanwhile, or its claim was
 * read from a master that lost it in a failover ('stale'): it wrote nothing.
 * A turn is enqueued so that whatever it had claimed is certain to be taken up again.
 */
async function superseded(deps: TurnDeps, sessionKey: string, log: Logger, why: "lease-lost" | "lost" | "conflict" | "stale" = "lease-lost"): Promise<TurnOutcome> {
  log.warn({ why }, "turn-superseded");
  deps.metrics.turns.inc({ outcome: "superseded" });
  await deps.producers.enqueueTurn(sessionKey);
  return { status: "superseded" };
}

/**
 * The session moved to a new key (a Telegram group became a supergroup): what still reached the
 * old key is forwarded there and answered by the new session's turn.
 */
async function forwardMoved(deps: TurnDeps, sessionKey: string, log: Logger): Promise<TurnOutcome> {
  const forwarded = await deps.store.forwardToMoved(sessionKey);
  if (forwarded && forwarded.forwarded > 0) {
    log.info(forwarded, "moved-session-messages-forwarded");
    await deps.producers.enqueueTurn(forwarded.toSessionKey);
  }
  await deps.store.settle(sessionKey);
  return { status: "idle" };
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

/**
 * The reply that marks a stopped turn's preview: edited into the preview message if there is
 * one, never sent as a message of its own (`previewOnly`).
 */
function stoppedPreviewReply(sessionKey: string, state: { version: number }, index: number, target: ReplyTarget, previewId: string, text: string): OutboundReply {
  const { replyToMessageId: _anchor, ...plain } = target;
  return { replyId: `${sessionKey}#${state.version + 1}#${index}`, sessionKey, target: plain, text, inReplyTo: [], kind: "notice", preview: previewId, previewOnly: true };
}
