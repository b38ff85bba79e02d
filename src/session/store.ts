import type { Redis } from "ioredis";
import type { InboundMessage, OutboundReply } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import { globalKeys, sessionKeys } from "./keys.js";
import {
  ACQUIRE_LEASE, APPEND_INBOX, CLAIM_INBOX, COMMIT_TURN, POP_OUTBOX, RELEASE_LEASE, SETTLE,
} from "./scripts.js";
import { newSessionState, type SessionState } from "./state.js";

/** A message waiting in a session's inbox, as the ingress stored it. */
export type InboxEntry = InboundMessage & { receivedAt: number };

export class VersionConflictError extends Error {
  override readonly name = "VersionConflictError";
}

export interface CommitInput {
  /** The state to store; its `version` must be the version that was loaded. */
  state: SessionState;
  /** New messages for the append-only transcript. */
  transcript: readonly ChatMessage[];
  /** Replies to deliver, in order. */
  outbox: readonly OutboundReply[];
  /** Drop the claimed batch: the turn is done with it. */
  clearPending: boolean;
  /** `/new`: move the transcript to the archive of `archivedSessionId` first. */
  archivedSessionId?: string;
}

/** How long a platform message id is remembered for deduplication (Telegram redelivers for ~24 h). */
const DEDUPE_TTL_SECONDS = 7 * 24 * 3_600;

/** The session store on Redis. All writes that must be atomic are single Lua scripts. */
export class SessionStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  readonly #archiveRetentionMs: number;
  readonly #global: ReturnType<typeof globalKeys>;

  /** `archiveRetentionMs`: how long an archived conversation (`/new`) is kept; 0 forever. */
  constructor(redis: Redis, prefix: string, options: { archiveRetentionMs?: number } = {}) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#archiveRetentionMs = options.archiveRetentionMs ?? 0;
    this.#global = globalKeys(prefix);
  }

  keys(sessionKey: string) {
    return sessionKeys(this.#prefix, sessionKey);
  }


  /** Persists an inbound message unless its platform id was seen before. → false for a duplicate. */
  async appendInbox(message: InboundMessage, receivedAt: number): Promise<boolean> {
    const keys = this.keys(message.sessionKey);
    const entry: InboxEntry = { ...message, receivedAt };
    const added = await this.#redis.eval(
      APPEND_INBOX, 3,
      this.#global.seen(message.platform, message.chatId, message.messageId), keys.inbox, this.#global.workSet,
      JSON.stringify(entry), DEDUPE_TTL_SECONDS, message.sessionKey,
    );
    return added === 1;
  }

  /** Moves inbox messages into the pending batch and returns the batch (retries get the same). */
  async claimInbox(sessionKey: string, mode: "all" | "one"): Promise<InboxEntry[]> {
    const keys = this.keys(sessionKey);
    const items = (await this.#redis.eval(CLAIM_INBOX, 2, keys.inbox, keys.pending, mode)) as string[];
    return items.map((item) => JSON.parse(item) as InboxEntry);
  }

  async inboxLength(sessionKey: string): Promise<number> {
    return this.#redis.llen(this.keys(sessionKey).inbox);
  }

  async load(sessionKey: string, now = Date.now()): Promise<SessionState> {
    const keys = this.keys(sessionKey);
    const [[, state], [, version]] = (await this.#redis.multi().get(keys.state).get(keys.version).exec()) as [
      [Error | null, string | null], [Error | null, string | null],
    ];
    if (state === null) return newSessionState(now, Number(version ?? 0));
    const parsed = JSON.parse(state) as SessionState;
    return parsed;
  }

  /** Version-checked atomic commit. → the new version; throws VersionConflictError if we lost a race. */
  async commit(sessionKey: string, input: CommitInput): Promise<number> {
    const keys = this.keys(sessionKey);
    const expected = input.state.version;
    const stored: SessionState = { ...input.state, version: expected + 1 };
    const archivedId = input.archivedSessionId ?? "none";
    const result = await this.#redis.eval(
      COMMIT_TURN, 8,
      keys.state, keys.version, keys.transcript, keys.pending, keys.outbox,
      keys.archive(archivedId), keys.transcriptIndex, keys.archiveIndex(archivedId),
      expected, JSON.stringify(stored), input.clearPending ? "1" : "0", input.archivedSessionId ? "1" : "0",
      this.#archiveRetentionMs, input.transcript.length,
      ...input.transcript.map((message) => message.id),
      ...input.transcript.map((message) => JSON.stringify(stripTokenCache(message))),
      ...input.outbox.map((reply) => JSON.stringify(reply)),
    );
    if (result === -1) throw new VersionConflictError(`session ${sessionKey} changed under this turn (expected version ${expected})`);
    return Number(result);
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

  /**
   * Transcript messages whose text contains every word of `query` (case-insensitive), newest
   * first. A linear scan: recall is rare, and a weeks-long transcript is a few MB.
   */
  async searchTranscript(sessionKey: string, query: string, limit: number): Promise<ChatMessage[]> {
    const words = query.toLowerCase().split(/\s+/).filter((word) => word.length > 0);
    if (words.length === 0) return [];
    const items = await this.#redis.lrange(this.keys(sessionKey).transcript, 0, -1);
    const found: ChatMessage[] = [];
    for (let index = items.length - 1; index >= 0 && found.length < limit; index--) {
      const raw = items[index];
      if (raw === undefined) continue;
      const message = JSON.parse(raw) as ChatMessage;
      const text = `${message.content ?? ""} ${message.role === "assistant" ? JSON.stringify(message.tool_calls ?? []) : ""}`.toLowerCase();
      if (words.every((word) => text.includes(word))) found.push(message);
    }
    return found;
  }

  async outboxHead(sessionKey: string): Promise<{ reply: OutboundReply; fromPart: number } | undefined> {
    const keys = this.keys(sessionKey);
    const [[, head], [, progress]] = (await this.#redis.multi().lindex(keys.outbox, 0).get(keys.outboxProgress).exec()) as [
      [Error | null, string | null], [Error | null, string | null],
    ];
    if (head === null) return undefined;
    return { reply: JSON.parse(head) as OutboundReply, fromPart: Number(progress ?? 0) };
  }

  async recordPartSent(sessionKey: string, partIndex: number): Promise<void> {
    await this.#redis.set(this.keys(sessionKey).outboxProgress, String(partIndex + 1));
  }

  async popOutbox(sessionKey: string, replyId: string): Promise<void> {
    const keys = this.keys(sessionKey);
    await this.#redis.eval(POP_OUTBOX, 2, keys.outbox, keys.outboxProgress, replyId);
  }

  async outboxLength(sessionKey: string): Promise<number> {
    return this.#redis.llen(this.keys(sessionKey).outbox);
  }

  /** Sessions that had work; the sweeper re-enqueues what is still pending. */
  async sessionsWithWork(): Promise<string[]> {
    return this.#redis.smembers(this.#global.workSet);
  }

  async pendingWork(sessionKey: string): Promise<{ inbox: number; pending: boolean; outbox: number }> {
    const keys = this.keys(sessionKey);
    const [[, inbox], [, pending], [, outbox]] = (await this.#redis
      .multi().llen(keys.inbox).exists(keys.pending).llen(keys.outbox).exec()) as [
      [Error | null, number], [Error | null, number], [Error | null, number],
    ];
    return { inbox, pending: pending === 1, outbox };
  }

  /** Drops the session from the work set when nothing is left to do. */
  async settle(sessionKey: string): Promise<boolean> {
    const keys = this.keys(sessionKey);
    return (await this.#redis.eval(SETTLE, 4, keys.inbox, keys.pending, keys.outbox, this.#global.workSet, sessionKey)) === 1;
  }

  async acquireLease(sessionKey: string, token: string, ttlMs: number): Promise<boolean> {
    return (await this.#redis.eval(ACQUIRE_LEASE, 1, this.keys(sessionKey).lease, token, ttlMs)) === 1;
  }

  async releaseLease(sessionKey: string, token: string): Promise<void> {
    await this.#redis.eval(RELEASE_LEASE, 1, this.keys(sessionKey).lease, token);
  }
}

/** The transcript keeps messages as they were; token caches belong to the live context. */
function stripTokenCache(message: ChatMessage): ChatMessage {
  if (message.tokens === undefined) return message;
  const { tokens: _tokens, ...rest } = message;
  return rest as ChatMessage;
}
