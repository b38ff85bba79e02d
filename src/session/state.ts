import { randomUUID } from "node:crypto";
import type { ChatMessage } from "../core/messages.js";
import type { ReplyTarget } from "../core/channel.js";
import type { PendingApproval, ToolAccessScope } from "../core/tools.js";
import type { SessionMemory } from "../core/memory.js";

/** Running totals of one session, for /status and /usage. */
export interface SessionStats {
  turns: number;
  steps: number;
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
  compactions: number;
  /** Tokens removed from the live context by compactions (before − after, summed). */
  compactionTokensSaved: number;
  summarizerPromptTokens: number;
  summarizerCompletionTokens: number;
  /** prompt_tokens of the latest step, the best measure of the live context's size. */
  lastPromptTokens: number;
  /** Sub-tasks run by the `delegate` tool, and their tokens (prompt + completion); absent: none yet. */
  delegations?: number;
  delegatedTokens?: number;
}

/** What the operator and the chat chose for this chat (issue #17); survives /new. */
export interface ChatSettings {
  /** Catalogue name picked with /model; absent: the catalogue's default. */
  model?: string;
  /** The system prompt addition (/persona); `personaName` when it is a configured persona. */
  persona?: string;
  personaName?: string;
  /** Set by /model: the next answer names the model the endpoint reported. */
  confirmModel?: boolean;
  /**
   * The chat's own IANA time zone (/timezone), canonical spelling; absent: the deployment's TZ.
   * Message stamps, reminders' wall-clock times and /context read it (`chatTimeZone`).
   */
  timeZone?: string;
  /**
   * Voice replies (/voice): "on" speaks every answer, "auto" answers a voice note with a voice
   * note; absent: text only (docs/media.md).
   */
  voice?: "on" | "auto";
}

/** What the context engine remembers between turns (calibration, anti-thrash, learned window). */
export type EngineState = Record<string, unknown>;

export interface SessionState {
  /** Bumped by every commit; commits are checked against it. */
  version: number;
  /** Stable for the session's whole life; compaction never changes it. */
  sessionId: string;
  createdAt: number;
  updatedAt: number;
  /** Next message sequence number; message ids are `m<seq>`. */
  nextSeq: number;
  /** The live context: what the next LLM step sees. */
  live: ChatMessage[];
  stats: SessionStats;
  engine: EngineState;
  lastTarget?: ReplyTarget;
  /**
   * Whom the latest chat turn chose its tools for (on `lastTarget`'s platform): /compress and
   * idle compaction offer the tools a turn there offers (docs/decisions.md); absent: the built-ins.
   */
  toolScope?: ToolAccessScope;
  /** A tool step waiting for a person's approval; its call is outside `live` until resolved. */
  pendingApproval?: PendingApproval;
  /**
   * The latest approvals answered by a button press (ids, newest last, at most
   * ANSWERED_APPROVALS_KEPT): a later press on one of them (a double tap, a client that has not
   * seen the outcome yet) is told privately, and the request message keeps its outcome.
   */
  answeredApprovals?: string[];
  /** Whose long-term memory this conversation reads, its snapshot and pins (src/memory). */
  memory?: SessionMemory;
  chat?: ChatSettings;
}

export const emptyStats = (): SessionStats => ({
  turns: 0, steps: 0, promptTokens: 0, completionTokens: 0, cachedTokens: 0, compactions: 0,
  compactionTokensSaved: 0, summarizerPromptTokens: 0, summarizerCompletionTokens: 0, lastPromptTokens: 0,
});

export function newSessionState(now: number, version = 0): SessionState {
  return {
    version,
    sessionId: randomUUID(),
    createdAt: now,
    updatedAt: now,
    nextSeq: 1,
    live: [],
    stats: emptyStats(),
    engine: {},
  };
}

/**
 * The fresh session that replaces `previous` (`/new`, idle reset): a new id and history, but
 * the same version line (commits stay checked) and message counter (ids stay unique within
 * the key's transcripts). The approvals answered by a press stay known: their request messages
 * still show the outcome in the chat, and a late press on one (a client that still shows the
 * buttons) must leave that outcome and be told privately, as before the reset (issue 28).
 */
export function freshSessionAfter(previous: SessionState, now: number): SessionState {
  return {
    ...newSessionState(now, previous.version),
    nextSeq: previous.nextSeq,
    ...(previous.chat ? { chat: previous.chat } : {}),
    ...(previous.answeredApprovals?.length ? { answeredApprovals: [...previous.answeredApprovals] } : {}),
  };
}

/** Hands out message ids for one turn; the state's counter moves with it. */
export function messageIdAllocator(state: SessionState): () => string {
  return () => `m${state.nextSeq++}`;
}
