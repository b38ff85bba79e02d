import type { Redis } from "ioredis";
import { wellFormedJson } from "../core/text.js";
import type { InboundMessage } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import { DueApprovals } from "./due-approvals.js";
import { globalKeys, legacyKeys, sessionKeys } from "./keys.js";
import { liveChange, readState, stripTokenCache, type StoredState } from "./live-context.js";
import { forwardToMovedSession } from "./move-session.js";
import { runScript } from "./run-script.js";
import { APPEND_INBOX, BEGIN_TURN, END_TURN, REQUEST_ABORT } from "./scripts.js";
import type { SessionState } from "./state.js";
import { searchTranscript, type TranscriptSearch } from "./transcript-search.js";
import { platformOf, type BeginTurnResult, type CommitInput, type EndTurnResult, type InboxEntry, type SessionWork, type TurnClaim } from "./turn-types.js";
import { WorkList, type ReadConfirmer } from "./work-list.js";

export type { BeginTurnResult, CommitInput, EndTurnResult, InboxEntry, SessionWork, TurnClaim, WorkLeft } from "./turn-types.js";
export type { ReadConfirmer } from "./work-list.js";
export { liveChange } from "./live-context.js";

/** How long a platform message id is remembered for deduplication (Telegram redelivers for ~24 h). */
export const DEDUPE_TTL_SECONDS = 7 * 24 * 3_600;

/**
 * The session store on Redis. Everything that must be atomic is one Lua script over one
 * session's keys (one Cluster slot); the deployment-wide work list is kept outside the scripts
 * with an order of writes that never strands a session (work-list.ts).
 */
export class SessionStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #archiveRetentionMs: number;
  readonly #work: WorkList;
  readonly #approvals: DueApprovals;
  /** While wave-1 dedupe keys may be alive, a message is a duplicate if either key knows it. */
  #legacySeenUntil = 0;

  /**
   * `archiveRetentionMs`: how long an archived conversation (`/new`) is kept; 0 forever.
   * `confirmRead`: with replicas (REDIS_MIN_REPLICAS_ACK), a session is un-listed only on a
   * confirmed read (WorkList.settle).
   */
  constructor(redis: Redis, prefix: string, options: { archiveRetentionMs?: number; confirmRead?: ReadConfirmer } = {}) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#archiveRetentionMs = options.archiveRetentionMs ?? 0;
    const global = globalKeys(prefix);
    this.#work = new WorkList(redis, prefix, global.workSet, options.confirmRead);
    this.#approvals = new DueApprovals(redis, global.approvalsDue);
  }

  get redis(): Redis {
    return this.#redis;
  }

  get prefix(): string {
    return this.#prefix;
  }

  keys(sessionKey: string) {
    return sessionKeys(this.#prefix, sessionKey);
  }

  /** Reads whether wave-1 dedupe keys must still be consulted (see migrate.ts). */
  async loadLegacySeenWindow(): Promise<void> {
    this.#legacySeenUntil = Number((await this.#redis.get(globalKeys(this.#prefix).legacySeenUntil)) ?? 0);
  }

  /**
   * Persists an inbound message unless its platform id was seen before, then lists the session
   * as having work. → false for a duplicate. A duplicate lists the session too: a platform
   * re-delivers only what it thinks unstored, e.g. after a gateway died between storing and
   * enqueueing, and the caller enqueues a turn for it either way.
   *
   * `alongside` (the ingress's enqueue) is called as soon as the append and the listing are sent,
   * without waiting for their answer: one connection runs its commands in the order they were
   * sent, so when it uses this store's connection its commands run after them in Redis, and all
   * of them take one round trip instead of three. Its own failure is its own to handle.
   */
  async appendInbox(message: InboundMessage, receivedAt: number, alongside?: () => Promise<unknown>): Promise<boolean> {
    const keys = this.keys(message.sessionKey);
    const legacySeen = receivedAt < this.#legacySeenUntil && (await this.#redis.exists(legacyKeys.seen(this.#prefix, message.platform, message.chatId, message.messageId))) === 1;
    const entry: InboxEntry = { ...message, receivedAt };
    const appended = legacySeen ? Promise.resolve(0) : runScript(this.#redis, APPEND_INBOX, 2, keys.seen(message.platform, message.messageId), keys.inbox, wellFormedJson(entry), DEDUPE_TTL_SECONDS);
    // Sent after the append, never before: see WorkList.
    const listed = this.#work.list(message.sessionKey);
    const [added] = await Promise.all([appended, listed, alongside?.()]);
    return added === 1;
  }

  /**
   * Begins a turn (BEGIN_TURN): lease, claim and load in one consistent snapshot.
   * `mode` 'one' claims a single message (busy mode queue). `hold` takes the lease even when
   * nothing waits (a turn with work of its own: an approval's timeout). Called again with the
   * same token, it claims what arrived since and returns the whole pending batch, fresh.
   */
  async beginTurn(sessionKey: string, token: string, options: { leaseMs: number; mode: "all" | "one"; hold?: boolean; now?: number }): Promise<BeginTurnResult> {
    const keys = this.keys(sessionKey);
    const reply = (await runScript(this.#redis,
      BEGIN_TURN, 10, keys.lease, keys.abort, keys.inbox, keys.pending, keys.state, keys.version, keys.outbox, keys.moving, keys.live, keys.lastCommit,
      token, options.leaseMs, options.mode, options.hold ? "1" : "0",
    )) as Array<string | number>;
    const [status, first, platform] = reply;
    if (status === "busy") return { status: "busy", retryInMs: Math.max(0, Number(first)) };
    if (status === "moved") return { status: "moved" };
    const outbox = Number(first);
    const outboxPlatform = platformOf(platform);
    if (status === "idle") return { status: "idle", outbox, outboxPlatform };
    const version = Number(reply[3]);
    const base = String(reply[4] ?? "");
    const liveCount = Number(reply[6]);
    const live = reply.slice(7, 7 + liveCount).map(String);
    const raw = reply.slice(7 + liveCount).map(String);
    const state = readState(String(reply[5] ?? ""), live, version, options.now ?? Date.now());
    return {
      status: "claimed",
      outbox,
      outboxPlatform,
      state,
      batch: raw.map((item) => JSON.parse(item) as InboxEntry),
      claim: { token, version, base, raw, live },
    };
  }

  /**
   * Ends a turn (END_TURN): the fenced, version-checked commit.
   *
   * `alongside` (the worker's delivery enqueue) is called as soon as the commit is sent, without
   * waiting for its answer, as in `appendInbox`: on this store's connection its commands run
   * after the commit in Redis, so the reply and its delivery job take one round trip, and no
   * delivery can look at the outbox before the commit. Its own failure is its own to handle.
   */
  async endTurn(sessionKey: string, claim: TurnClaim, input: CommitInput, alongside?: () => Promise<unknown>): Promise<EndTurnResult> {
    const keys = this.keys(sessionKey);
    const expected = claim.version;
    const { live, ...rest } = input.state;
    const meta: StoredState = { ...rest, version: expected + 1 };
    const change = liveChange(claim.live, live);
    const archivedId = input.archivedSessionId ?? "none";
    const committing = runScript(this.#redis,
      END_TURN, 12,
      keys.lease, keys.lastCommit, keys.version, keys.state, keys.transcript, keys.transcriptIndex, keys.pending, keys.outbox,
      keys.inbox, keys.archive(archivedId), keys.archiveIndex(archivedId), keys.live,
      claim.token, expected, wellFormedJson(meta), input.archivedSessionId ? "1" : "0", this.#archiveRetentionMs,
      input.transcript.length, claim.raw.length, change.keep, change.append.length, claim.base,
      ...input.transcript.map((message) => message.id),
      ...input.transcript.map((message) => wellFormedJson(stripTokenCache(message))),
      ...claim.raw,
      ...change.append,
      ...input.outbox.map((reply) => wellFormedJson(reply)),
    );
    // A held turn's commit with replies lists its session (after it, on this connection: the
    // order `settle` relies on); any other turn's session was listed by its messages.
    const listed = input.held && input.outbox.length > 0 ? this.#work.list(sessionKey) : undefined;
    const [reply] = (await Promise.all([committing, alongside?.(), listed])) as [Array<string | number>, unknown, unknown];
    const [status] = reply;
    if (status === "lost") return { status: "lost" };
    if (status === "conflict" || status === "stale") return { status, current: Number(reply[1]) };
    return {
      status: status === "done" ? "done" : "committed",
      version: Number(reply[1]),
      inbox: Number(reply[2]),
      pending: Number(reply[3]),
      outbox: Number(reply[4]),
      outboxPlatform: platformOf(reply[5]),
    };
  }

  /**
   * Forwards messages that reached a session after it moved away (BEGIN_TURN said 'moved') to
   * the session it moved to. → where they went and how many, or undefined if it did not move.
   */
  async forwardToMoved(sessionKey: string): Promise<{ toSessionKey: string; forwarded: number } | undefined> {
    return forwardToMovedSession(this.#redis, this.#prefix, sessionKey);
  }

  /** Flags the running turn to stop (/stop, busy mode interrupt). → true when a turn was running. */
  async requestAbort(sessionKey: string, reason: "stop" | "interrupt"): Promise<boolean> {
    const keys = this.keys(sessionKey);
    return (await runScript(this.#redis, REQUEST_ABORT, 2, keys.lease, keys.abort, reason, 60_000)) === 1;
  }

  async load(sessionKey: string, now = Date.now()): Promise<SessionState> {
    const keys = this.keys(sessionKey);
    const replies = (await this.#redis.multi().get(keys.state).get(keys.version).lrange(keys.live, 0, -1).exec()) as [
      [Error | null, string | null], [Error | null, string | null], [Error | null, string[]],
    ];
    // A key of the wrong type answers WRONGTYPE inside EXEC: never read that as a new session.
    const failed = replies.find(([error]) => error !== null);
    if (failed) throw failed[0]!;
    const [[, state], [, version], [, live]] = replies;
    return readState(state ?? "", live, Number(version ?? 0), now);
  }

  async inboxLength(sessionKey: string): Promise<number> {
    return this.#redis.llen(this.keys(sessionKey).inbox);
  }

  async transcriptLength(sessionKey: string): Promise<number> {
    return this.#redis.llen(this.keys(sessionKey).transcript);
  }

  /** Transcript entries in [start, stop] (inclusive, negative from the end, as LRANGE). */
  async readTranscript(sessionKey: string, start = 0, stop = -1): Promise<ChatMessage[]> {
    const items = await this.#redis.lrange(this.keys(sessionKey).transcript, start, stop);
    return items.map((item) => JSON.parse(item) as ChatMessage);
  }

  /** One transcript message by id (the original, even if the live context pruned it). */
  async transcriptMessage(sessionKey: string, id: string): Promise<ChatMessage | undefined> {
    const keys = this.keys(sessionKey);
    const position = await this.#redis.hget(keys.transcriptIndex, id);
    if (position === null) return undefined;
    const raw = await this.#redis.lindex(keys.transcript, Number(position));
    return raw === null ? undefined : (JSON.parse(raw) as ChatMessage);
  }

  /** Messages containing every word of `query`, newest first, reading a bounded page of the transcript. */
  async searchTranscript(sessionKey: string, query: string, limit: number, options: { before?: number; maxEntries?: number } = {}): Promise<TranscriptSearch> {
    return searchTranscript(this.#redis, this.keys(sessionKey).transcript, query, limit, options);
  }

  async outboxLength(sessionKey: string): Promise<number> {
    return this.#redis.llen(this.keys(sessionKey).outbox);
  }

  /** Records approvals a turn is about to commit as pending, by when they expire (see DueApprovals). */
  async expectApprovals(sessionKey: string, approvals: ReadonlyArray<{ approvalId: string; dueAt: number }>): Promise<void> {
    return this.#approvals.expect(sessionKey, approvals);
  }

  /** Pending approvals due by `now` (at most `limit`), oldest first. */
  async dueApprovals(now: number, limit = 100): Promise<Array<{ sessionKey: string; approvalId: string }>> {
    return this.#approvals.due(now, limit);
  }

  /** The approval's timeout job exists again (or it was answered): no more for the sweeper to do. */
  async forgetDueApproval(sessionKey: string, approvalId: string): Promise<void> {
    return this.#approvals.forget(sessionKey, approvalId);
  }

  /** Sessions that had work; the sweeper re-enqueues what is still pending. */
  async sessionsWithWork(): Promise<string[]> {
    return this.#work.sessions();
  }

  async sessionWork(sessionKey: string): Promise<SessionWork> {
    return this.#work.work(sessionKey);
  }

  /** Drops an idle session from the work list → true when it was idle (WorkList.settle). */
  async settle(sessionKey: string): Promise<boolean> {
    return this.#work.settle(sessionKey);
  }

  /** `settle` folded into a step that looks at the session anyway (WorkList.settleWith). → the step's result. */
  async settleWith<T>(sessionKey: string, step: () => Promise<T>, idle: (result: T) => boolean): Promise<T> {
    return this.#work.settleWith(sessionKey, step, idle);
  }
}
