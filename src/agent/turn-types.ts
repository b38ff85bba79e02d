/**
 * The turn's own types, at the bottom of the agent room: what a batch's turn takes, what it
 * gives back, and the run in progress that the segment handlers share. Every handler imports
 * these; this module imports no handler and no orchestrator.
 */
import type { OutboundReply, ReplyTarget } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import type { BudgetScope } from "../budget/index.js";
import type { Logger } from "../logger.js";
import type { SessionState } from "../session/state.js";
import type { InboxEntry } from "../session/store.js";
import type { ParsedCommand } from "./commands/parse.js";
import type { TurnEngine } from "./ports.js";
import type { TurnPreview } from "./preview.js";

/**
 * The kinds of segment a batch splits into (`segmentBatch`), each with its own handler: a
 * command, a button press (an approval's answer), a fired reminder, or chat messages (and fired
 * tasks) answered by one agent turn.
 */
export type Segment =
  | { kind: "command"; command: ParsedCommand; entry: InboxEntry }
  | { kind: "action"; entry: InboxEntry }
  | { kind: "reminder"; entry: InboxEntry }
  | { kind: "checkin"; entry: InboxEntry }
  | { kind: "chat"; entries: InboxEntry[] };

/** Why a running turn was asked to stop. */
export type AbortReason = "stop" | "interrupt" | "shutdown";

export interface SegmentsInput {
  sessionKey: string;
  state: SessionState;
  batch: readonly InboxEntry[];
  target: ReplyTarget;
  signal: AbortSignal;
  log: Logger;
  /** The pending approval whose timeout job fired (it is denied first). */
  approvalTimeout?: string;
  /** Live preview of the turn (STREAMING on for the platform); the final takes it over. */
  preview?: TurnPreview;
}

export type SettleInput = Omit<SegmentsInput, "signal" | "preview">;

/** A delayed turn that denies an approval nobody answered. */
export interface ApprovalTimeout {
  approvalId: string;
  delayMs: number;
}

export interface SegmentsResult {
  state: SessionState;
  transcript: ChatMessage[];
  replies: OutboundReply[];
  archivedSessionId?: string;
  /** To schedule once the turn is committed. */
  approvalTimeouts?: ApprovalTimeout[];
}

/**
 * One turn in progress: the ports it runs on (`E`: a handler names the few it needs), its
 * input, and what it has produced so far.
 */
export interface TurnRun<E = TurnEngine> {
  engine: E;
  input: SegmentsInput;
  state: SessionState;
  transcript: ChatMessage[];
  replies: OutboundReply[];
  approvalTimeouts: ApprovalTimeout[];
  /** The model the endpoint named in its latest answer (confirms a /model switch). */
  reportedModel?: string;
  /** Who pays for the batch's calls (absent without budgets): handed to each call, compaction and transcription. */
  budget?: BudgetScope;
}

/** Where a reply goes and which messages it answers. */
export interface Answering {
  target: ReplyTarget;
  inReplyTo: string[];
}
