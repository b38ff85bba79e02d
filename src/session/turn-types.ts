/**
 * What the session store's turn protocol (BEGIN_TURN, END_TURN, the work list) takes and
 * returns: the inbox entry, the claim a turn holds, the commit it writes, the work left after it.
 */
import type { InboundMessage, OutboundReply, Platform } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import type { SessionState } from "./state.js";

/** A message waiting in a session's inbox, as the ingress stored it. */
export type InboxEntry = InboundMessage & { receivedAt: number };

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

/** The platform a script reported (the outbox head's), if it is one. */
export const platformOf = (value: unknown): Platform | undefined =>
  value === "telegram" || value === "discord" || value === "console" ? value : undefined;
