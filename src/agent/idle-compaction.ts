/**
 * Idle-time compaction (issue #16 item 5, docs/context.md): a session past a soft mark of the
 * in-loop threshold that nobody has written to for longer than the provider's cache lifetime is
 * compacted in the background, so the next reply neither waits for the summarizer nor throws
 * away a warm cache (the cache is cold by then anyway).
 *
 * Fenced like a turn: the job takes the session's lease with an attempt token (BEGIN_TURN with
 * `hold`) and commits through END_TURN, which checks the lease and the version. A message that
 * arrives meanwhile wins: the job watches the inbox, aborts the summarizer and lets go without
 * writing; the turn, which found the lease held, comes back and runs on the state as it was. So
 * the compaction is either committed before the turn begins or dropped, never both.
 */
import type { Logger } from "../logger.js";
import { BudgetScope, budgetAccounts } from "../budget/index.js";
import { heartbeatMs, LeaseKeeper } from "../session/lease.js";
import { messageIdAllocator, type SessionState } from "../session/state.js";
import type { SessionStore, TurnClaim } from "../session/store.js";
import type { TurnRecorder } from "../session/turn-history.js";
import type { ChatMessage } from "../core/messages.js";
import type { CompactionScope } from "../session-context/index.js";
import { activeEngine } from "./active-model.js";
import type { ToolDefinition } from "../core/messages.js";
import type { Clock, RoutingPorts, ToolPorts } from "./ports.js";
import { chatTimeZone } from "./chat-time-zone.js";
import { workingCopy } from "./working-copy.js";
import { latestTurnToolDefinitions } from "./tool-scope.js";

/** What idle compaction uses of a worker's engine: the session's model, its payer, and the chat's tools. */
export type IdleEngine = RoutingPorts & Pick<Clock, "timeZone"> & Pick<ToolPorts, "tools">;

export interface IdleCompactionSettings {
  /** CACHE_TTL_S in ms: idle this long before the job runs; 0 turns idle compaction off. */
  cacheTtlMs: number;
  /** IDLE_COMPACTION_MARK: the fraction of the in-loop threshold a session must be past. */
  mark: number;
}

export interface IdleCompactionDeps {
  store: SessionStore;
  engine: IdleEngine;
  settings: IdleCompactionSettings;
  /** The lease TTL turns use (leaseTtlMs of the job lock). */
  leaseMs: number;
  enqueueTurn(sessionKey: string): Promise<void>;
  logger: Logger;
  now(): number;
  /** After a commit: its entry in the session's turn history (src/session/turn-history.ts). */
  recordTurn?: TurnRecorder;
}

export interface IdleCompactionJob {
  sessionKey: string;
  /**
   * The version the job follows. A later commit of a turn (`updatedAt` moved) is followed: the
   * job takes the newest version and its time; any other commit (an idle compaction) makes it stale.
   */
  version: number;
  /** That version's `updatedAt`; absent (a job added by hand): any later commit makes it stale. */
  updatedAt?: number;
  /** Unique per attempt (attemptToken): the lease token its commit is fenced by. */
  token: string;
  /** Aborted on worker shutdown. */
  signal?: AbortSignal;
}

export type IdleCompactionOutcome =
  | { status: "compacted"; version: number; folded: number }
  /** Another attempt (a turn) holds the lease: come back later. */
  | { status: "busy"; retryInMs: number }
  /**
   * Past the mark, but a turn ran less than the TTL ago (one committed after the job was
   * scheduled): the job moves itself to `at` (that turn + the TTL), following `version`.
   */
  | { status: "later"; at: number; version: number; updatedAt: number }
  | { status: "skipped"; why: "off" | "stale" | "moved" | "message-waiting" | "not-idle" | "under-mark" | "not-compacted" }
  /** A message arrived (or the lease was lost, or the worker stops) during the compaction: nothing written. */
  | { status: "dropped"; why: string };

/**
 * Whether the session, as stored, is due an idle compaction now. `tools`: those the chat's turns
 * offer (`latestTurnToolDefinitions`), so the mark is the turn's threshold's; unset: the built-ins.
 */
export function idleCompactionDue(engine: IdleEngine, settings: IdleCompactionSettings, state: SessionState, now: number, tools?: readonly ToolDefinition[]): "due" | "off" | "not-idle" | "under-mark" {
  if (settings.cacheTtlMs <= 0) return "off";
  if (!activeEngine(engine, state).context.pastIdleMark(state, state.live, settings.mark, tools)) return "under-mark";
  return now - state.updatedAt < settings.cacheTtlMs ? "not-idle" : "due";
}

/**
 * Whether a job should be scheduled after a commit that left `state`: the session is past the
 * mark now with the chat's tools (the idle time is the job's delay). After a turn the chat's
 * MCP servers are connected and their tool lists held: nothing is asked of them again.
 */
export async function shouldScheduleIdleCompaction(engine: IdleEngine, settings: IdleCompactionSettings, sessionKey: string, state: SessionState, log: Logger): Promise<boolean> {
  if (settings.cacheTtlMs <= 0 || state.live.length === 0) return false;
  return activeEngine(engine, state).context.pastIdleMark(state, state.live, settings.mark, await latestTurnToolDefinitions(engine, sessionKey, state, log));
}

export async function runIdleCompaction(deps: IdleCompactionDeps, job: IdleCompactionJob): Promise<IdleCompactionOutcome> {
  const { store } = deps;
  const { sessionKey } = job;
  const log = deps.logger.child({ sessionKey, idleCompaction: job.version });
  if (deps.settings.cacheTtlMs <= 0) return { status: "skipped", why: "off" };

  // A cheap look first (the version key alone): a job added by hand finds a moved session stale
  // here; one that follows the session needs the state to tell a turn from an idle compaction.
  if (job.updatedAt === undefined && Number((await store.redis.get(store.keys(sessionKey).version)) ?? 0) !== job.version) return { status: "skipped", why: "stale" };

  // 'one' claims what a turn in any busy mode would claim first (at most one message, only when
  // nothing is pending); a claim means a message waits, and the job lets go at once.
  const begun = await store.beginTurn(sessionKey, job.token, { leaseMs: deps.leaseMs, mode: "one", hold: true, now: deps.now() });
  if (begun.status === "busy") return begun;
  if (begun.status === "moved") return { status: "skipped", why: "moved" };
  if (begun.status === "idle") return { status: "skipped", why: "stale" };
  const { state, batch, claim } = begun;

  const lease = new LeaseKeeper(store.redis, { key: store.keys(sessionKey).lease, token: job.token, ttlMs: deps.leaseMs, abortKey: store.keys(sessionKey).abort }, job.signal);
  // A message that arrives while the job holds the session wins: the summarizer is aborted and
  // nothing is written.
  const watch = new AbortController();
  const watcher = setInterval(() => {
    store.inboxLength(sessionKey).then((waiting) => {
      if (waiting > 0 && !watch.signal.aborted) watch.abort("message");
    }, () => undefined);
  }, heartbeatMs(deps.leaseMs));
  const held: Held = { deps, job, log, state, batch, claim, lease, signal: AbortSignal.any([lease.signal, watch.signal]) };
  let outcome: IdleCompactionOutcome | undefined;
  try {
    outcome = await compactHeld(held);
    return outcome;
  } catch (error) {
    if (held.signal.aborted) return (outcome = { status: "dropped", why: String(held.signal.reason ?? "aborted") });
    log.warn({ err: error }, "idle-compaction-failed");
    return (outcome = { status: "skipped", why: "not-compacted" });
  } finally {
    clearInterval(watcher);
    if (outcome?.status === "compacted") await lease.stop();
    else {
      await lease.release().catch((error: unknown) => log.warn({ err: error }, "lease-release-failed"));
      // What waits is answered by a turn (BEGIN_TURN may have moved a message to pending).
      const work = await store.sessionWork(sessionKey);
      if (work.inbox > 0 || work.pending > 0) await deps.enqueueTurn(sessionKey);
    }
  }
}

interface Held {
  deps: IdleCompactionDeps;
  job: IdleCompactionJob;
  log: Logger;
  state: SessionState;
  batch: readonly unknown[];
  claim: TurnClaim;
  lease: LeaseKeeper;
  /** The lease's signal, aborted too when a message reaches the inbox. */
  signal: AbortSignal;
}

/** The work under the lease; the caller releases it (or, after a commit, only stops renewing). */
async function compactHeld({ deps, job, log, state, batch, claim, lease, signal }: Held): Promise<IdleCompactionOutcome> {
  const { store } = deps;
  const { sessionKey } = job;
  // A message waits: it is answered by a turn on the session as it is.
  if (batch.length > 0) return { status: "skipped", why: "message-waiting" };
  // Turns set `updatedAt`, an idle compaction keeps it: a moved version with the same time was
  // not a turn (an idle compaction committed it, e.g. by a copy of this job), nothing to follow.
  if (state.version !== job.version && (job.updatedAt === undefined || state.updatedAt === job.updatedAt)) return { status: "skipped", why: "stale" };
  // The tools the chat's turns offer: the mark, the compaction's threshold and budgets, and the
  // memory flush's request (its cached prefix) are then the turn's.
  const tools = await latestTurnToolDefinitions(deps.engine, sessionKey, state, log);
  const due = idleCompactionDue(deps.engine, deps.settings, state, deps.now(), tools);
  // Commits within the TTL did not reschedule the job (src/queue/idle.ts): it moves itself to the
  // newest turn's time + the TTL. (Same version: it ran early, e.g. promoted by hand.)
  if (due === "not-idle") return { status: "later", at: state.updatedAt + deps.settings.cacheTtlMs, version: state.version, updatedAt: state.updatedAt };
  if (due !== "due") return { status: "skipped", why: due };

  const engine = activeEngine(deps.engine, state);
  const working = workingCopy(state);
  const transcript: ChatMessage[] = [];
  // The summarizer (and the memory flush) are paid by the chat, and by the person whose memory it is.
  const owner = working.memory?.owner;
  const scope: CompactionScope = {
    signal, log, newId: messageIdAllocator(working),
    addToTranscript: (messages) => transcript.push(...messages),
    timeZone: chatTimeZone(working, engine.timeZone),
    budget: engine.budget ? new BudgetScope(engine.budget, budgetAccounts(sessionKey, owner?.scope === "user" ? owner : undefined)) : undefined,
    ...(tools ? { tools } : {}),
  };
  const startedLive = working.live.length;
  const result = await engine.context.compactIdle(working, working.live, scope);
  // A failed summary changes nothing here (the next turn compacts in the loop as usual); the
  // failure notice the engine queued for the user is not kept either: nobody asked.
  if (result.status !== "compacted") {
    log.info({ status: result.status }, "idle-compaction-not-committed");
    return { status: "skipped", why: "not-compacted" };
  }
  working.live = result.context;
  // Checked once more just before the commit: a message that came meanwhile still wins.
  if (signal.aborted || (await store.inboxLength(sessionKey)) > 0) return { status: "dropped", why: String(signal.reason ?? "message") };

  // No heartbeat may land after the commit: it would take the released lease again.
  await lease.stop();
  // `updatedAt` stays: the session was not used (IDLE_RESET_HOURS counts from the last turn).
  const ended = await store.endTurn(sessionKey, claim, { state: working, transcript, outbox: [] });
  if (ended.status === "lost" || ended.status === "conflict" || ended.status === "stale") {
    log.warn({ why: ended.status }, "idle-compaction-superseded");
    return { status: "dropped", why: ended.status };
  }
  const folded = working.memory?.lastFold?.count ?? Math.max(0, startedLive - working.live.length);
  log.info({ version: ended.version, folded }, "idle-compaction-committed");
  await deps.recordTurn?.(sessionKey, { version: ended.version, kind: "idle", before: { sessionId: state.sessionId, stats: state.stats }, after: working, batch: [] })
    .catch((error: unknown) => log.warn({ err: error }, "turn-history-write-failed"));
  if (ended.inbox > 0 || ended.pending > 0) await deps.enqueueTurn(sessionKey);
  else if (ended.outbox === 0) await store.settle(sessionKey);
  return { status: "compacted", version: ended.version, folded };
}
