import type { Redis } from "ioredis";
import { wellFormedJson } from "../core/text.js";
import type { InboundMessage, Platform } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import { globalKeys, legacyKeys, sessionKeys } from "./keys.js";
import { forwardToMovedSession } from "./move-session.js";
import { APPEND_INBOX, BEGIN_TURN, END_TURN, REQUEST_ABORT, SESSION_WORK } from "./scripts.js";
import { newSessionState, type SessionState } from "./state.js";
import { searchTranscript, type TranscriptSearch } from "./transcript-search.js";
import type { OutboundReply } from "../core/channel.js";
import { runScript } from "./run-script.js";

/** A message waiting in a session's inbox, as the ingress stored it. */
export type InboxEntry = InboundMessage & { receivedAt: number };

/** How long a platform message id is remembered for deduplication (Telegram redelivers for ~24 h). */
export const DEDUPE_TTL_SECONDS = 7 * 24 * 3_600;

/** The batch a turn claimed: passed back to `endTurn`, which removes exactly these from pending. */
export interface TurnClaim {
  readonly token: string;
  readonly version: number;
  /**
   * The token of the commit this turn's state came from ('' before the first): END_TURN commits
   * only while it is still the last one, so a master that took over after a failover and reached
   * the same version through other commits refuses a claim read from the old one.
   */
  readonly base: string;
  readonly raw: readonly string[];
  /**
   * The live context as stored when the turn began (one JSON message per list entry; empty for
   * a session still stored in the inline format). The commit rewrites only what changed after
   * the longest unchanged prefix, so a turn writes its new messages, not the whole context.
   */
  readonly live: readonly string[];
}

export type BeginTurnResult =
  /** Another attempt holds the lease (or a move waits for it); try again in about `retryInMs`. */
  | { status: "busy"; retryInMs: number }
  /** The session moved to another key (a Telegram group became a supergroup): nothing is claimed here. */
  | { status: "moved" }
  /** Nothing to claim. `outbox` > 0: replies wait for delivery (on `outboxPlatform`). */
  | { status: "idle"; outbox: number; outboxPlatform: Platform | undefined }
  | { status: "claimed"; outbox: number; outboxPlatform: Platform | undefined; state: SessionState; batch: InboxEntry[]; claim: TurnClaim };

export interface CommitInput {
  /** The state to store; its `version` is the version the turn began from. */
  state: SessionState;
  /** New messages for the append-only transcript. */
  transcript: readonly ChatMessage[];
  /** Replies to deliver, in order. */
  outbox: readonly OutboundReply[];
  /** `/new`: move the transcript to the archive of `archivedSessionId` first. */
  archivedSessionId?: string;
  /**
   * A turn of its own (`hold`: an approval's timeout), which no inbound message listed: a
   * commit with replies lists the session, so a lost delivery job is found by the sweeper.
   */
  held?: boolean;
}

/** What a session has left to do after a commit; the caller enqueues it. */
export interface WorkLeft {
  inbox: number;
  pending: number;
  outbox: number;
  outboxPlatform: Platform | undefined;
}

export type EndTurnResult =
  | ({ status: "committed" | "done"; version: number } & WorkLeft)
  /** Another attempt holds the lease: this one was superseded and wrote nothing. */
  | { status: "lost" }
  /** Another attempt committed since this one began: nothing written. */
  | { status: "conflict"; current: number }
  /**
   * The claim is not this store's (a master that failed over answered BEGIN_TURN and lost it:
   * its messages still wait here, unclaimed, or another lineage of commits reached this
   * version): nothing written, the messages stay for the next turn.
   */
  | { status: "stale"; current: number };

export interface SessionWork extends WorkLeft {
  /** A turn holds the lease (it will hand on what it leaves). */
  turnRunning: boolean;
  deliveryRunning: boolean;
}

const platformOf = (value: unknown): Platform | undefined =>
  value === "telegram" || value === "discord" || value === "console" ? value : undefined;

/**
 * The session store on Redis. Everything that must be atomic is one Lua script over one
 * session's keys (one Cluster slot); the deployment-wide work list is kept outside the scripts
 * with an order of writes that never strands a session (see `settle`).
 */
export class SessionStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #archiveRetentionMs: number;
  readonly #global: ReturnType<typeof globalKeys>;
  /** While wave-1 dedupe keys may be alive, a message is a duplicate if either key knows it. */
  #legacySeenUntil = 0;

  /** `archiveRetentionMs`: how long an archived conversation (`/new`) is kept; 0 forever. */
  constructor(redis: Redis, prefix: string, options: { archiveRetentionMs?: number } = {}) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#archiveRetentionMs = options.archiveRetentionMs ?? 0;
    this.#global = globalKeys(prefix);
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
    this.#legacySeenUntil = Number((await this.#redis.get(this.#global.legacySeenUntil)) ?? 0);
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
    // Sent after the append, never before: see `settle`.
    const listed = this.#redis.sadd(this.#global.workSet, message.sessionKey);
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
    const listed = input.held && input.outbox.length > 0 ? this.#redis.sadd(this.#global.workSet, sessionKey) : undefined;
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

  /**
   * Records approvals a turn is about to commit as pending, by when they expire (before the
   * commit: a turn that dies after committing leaves the record, and the sweeper the job).
   */
  async expectApprovals(sessionKey: string, approvals: ReadonlyArray<{ approvalId: string; dueAt: number }>): Promise<void> {
    if (approvals.length === 0) return;
    await this.#redis.zadd(this.#global.approvalsDue, ...approvals.flatMap(({ approvalId, dueAt }) => [dueAt, `${sessionKey}\n${approvalId}`]));
  }

  /** Pending approvals due by `now` (at most `limit`), oldest first. */
  async dueApprovals(now: number, limit = 100): Promise<Array<{ sessionKey: string; approvalId: string }>> {
    const members = await this.#redis.zrangebyscore(this.#global.approvalsDue, "-inf", now, "LIMIT", 0, limit);
    return members.flatMap((member) => {
      const cut = member.lastIndexOf("\n");
      return cut > 0 ? [{ sessionKey: member.slice(0, cut), approvalId: member.slice(cut + 1) }] : [];
    });
  }

  /** The approval's timeout job exists again (or it was answered): no more for the sweeper to do. */
  async forgetDueApproval(sessionKey: string, approvalId: string): Promise<void> {
    await this.#redis.zrem(this.#global.approvalsDue, `${sessionKey}\n${approvalId}`);
  }

  /** Sessions that had work; the sweeper re-enqueues what is still pending. */
  async sessionsWithWork(): Promise<string[]> {
    return this.#redis.smembers(this.#global.workSet);
  }

  async sessionWork(sessionKey: string): Promise<SessionWork> {
    const keys = this.keys(sessionKey);
    const [inbox, pending, outbox, lease, deliveryLease, platform] = (await runScript(this.#redis,
      SESSION_WORK, 5, keys.inbox, keys.pending, keys.outbox, keys.lease, keys.deliveryLease,
    )) as [number, number, number, number, number, string];
    return { inbox, pending, outbox, outboxPlatform: platformOf(platform), turnRunning: lease === 1, deliveryRunning: deliveryLease === 1 };
  }

  /**
   * Drops an idle session from the work list. The order closes the race with a concurrent
   * ingress (which appends, then adds the session): remove first, then look; if work appeared
   * meanwhile, put the session back. Whichever order the two interleave in, a session with
   * work ends up listed. → true when the session was idle and is no longer listed.
   */
  async settle(sessionKey: string): Promise<boolean> {
    // Both sent at once: the connection runs them in this order, in one round trip.
    const [, work] = await Promise.all([this.#redis.srem(this.#global.workSet, sessionKey), this.sessionWork(sessionKey)]);
    if (work.inbox === 0 && work.pending === 0 && work.outbox === 0) return true;
    await this.#redis.sadd(this.#global.workSet, sessionKey);
    return false;
  }

  /**
   * `settle` folded into a step that looks at the session anyway (the delivery's last
   * FINISH_REPLY reports whether messages wait): the SREM goes out first and `step` right after
   * it on this connection, so Redis runs them in that order, in one round trip; the session is
   * listed again unless `idle` says the step found nothing left. The same order as `settle`,
   * so a concurrent ingress never leaves a session with work unlisted. → the step's result.
   */
  async settleWith<T>(sessionKey: string, step: () => Promise<T>, idle: (result: T) => boolean): Promise<T> {
    const [, result] = await Promise.all([this.#redis.srem(this.#global.workSet, sessionKey), step()]);
    if (!idle(result)) await this.#redis.sadd(this.#global.workSet, sessionKey);
    return result;
  }

}

/**
 * What the state key holds: the session state without its live context, which is a list of its
 * own (the `live` key, one message per entry). A state written before that split still carries
 * `live` inline; it loads as it is, and its first commit moves the context into the list.
 */
type StoredState = Omit<SessionState, "live"> & { live?: ChatMessage[] };

function readState(raw: string, live: readonly string[], version: number, now: number): SessionState {
  if (raw === "") return newSessionState(now, version);
  const stored = JSON.parse(raw) as StoredState;
  // The inline format (before the split): its list is empty until the first commit.
  if (Array.isArray(stored.live) && live.length === 0) return stored as SessionState;
  return {
    ...stored,
    live: live.map((entry) => {
      const message = JSON.parse(entry) as ChatMessage;
      loadedLive.set(message, { json: entry, tokens: message.tokens });
      return message;
    }),
  };
}

/**
 * Each live message as loaded → its stored JSON and its token cache at the time. Messages are
 * never changed in place except for that cache (context/tokens.ts), so a message still holding
 * the same cache object is still its stored JSON, and the commit compares it without
 * serializing the whole context again.
 */
const loadedLive = new WeakMap<ChatMessage, { json: string; tokens: ChatMessage["tokens"] }>();

/**
 * How the stored live list becomes `next`: keep its first `keep` entries (-1: all of them) and
 * append the rest. Messages are compared as stored (JSON), so a turn that only appended writes
 * only its new messages; compaction, which replaces the head, rewrites the list.
 */
export function liveChange(stored: readonly string[], next: readonly ChatMessage[]): { keep: number; append: string[] } {
  const append: string[] = [];
  let keep = 0;
  for (const message of next) {
    const loaded = loadedLive.get(message);
    const json = loaded !== undefined && loaded.tokens === message.tokens ? loaded.json : wellFormedJson(message);
    if (append.length === 0 && keep < stored.length && stored[keep] === json) keep++;
    else append.push(json);
  }
  return { keep: keep === stored.length ? -1 : keep, append };
}

/** The transcript keeps messages as they were; token caches belong to the live context. */
function stripTokenCache(message: ChatMessage): ChatMessage {
  if (message.tokens === undefined) return message;
  const { tokens: _tokens, ...rest } = message;
  return rest as ChatMessage;
}
