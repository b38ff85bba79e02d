/**
 * A batch's turn, stage by stage: start (idle reset, system prompt, expired approval, media),
 * then each segment in order on one working copy of the state — a button press, a fired
 * reminder, a command, or an agent turn over chat messages — each with its own model and payer.
 */
import type { OutboundReply, Platform, ReplyTarget } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import type { LlmClient } from "../core/llm.js";
import type { Logger } from "../logger.js";
import type { SessionState } from "../session/state.js";
import type { InboxEntry } from "../session/store.js";
import type { ToolCatalog, TranscriptReader } from "../tools/index.js";
import type { ScheduleService } from "../schedule/index.js";
import type { MemoryService, UserExport, UserRef } from "../memory/index.js";
import type { MediaEngine } from "../media/index.js";
import { activeEngine, type ModelRouter } from "../models/router.js";
import type { BudgetMeter } from "../budget/index.js";
import { answerApproval, type TurnRun } from "./approvals.js";
import { runChatSegment } from "./chat-segment.js";
import { runCommandSegment } from "./command-segment.js";
import type { ContextManager } from "./context-manager.js";
import type { TurnPreview } from "./preview.js";
import { addReply, answering } from "./replies.js";
import { batchBudget, enterSegment } from "./segment-switch.js";
import { entriesOf, segmentBatch } from "./segments.js";
import { BatchFailedError } from "./turn-failure.js";
import { startTurn } from "./turn-start.js";
import { reminderMessage } from "./user-messages.js";

/** Full originals of capped tool outputs, per conversation (`sessionId`). */
export interface ToolOutputStorage {
  save(sessionKey: string, sessionId: string, id: string, text: string): Promise<void>;
  read(sessionKey: string, sessionId: string, id: string, offset: number, length: number): Promise<{ text: string; total: number } | undefined>;
}

/** Everything a turn needs besides the session itself; built once per worker process. */
export interface TurnEngine {
  llm: LlmClient;
  tools: ToolCatalog;
  context: ContextManager;
  systemPrompt: string;
  maxSteps: number;
  maxOutputTokens: number;
  /** TOOL_OUTPUT_MAX_CHARS; scaled down for small windows (outputCapChars). */
  toolOutputMaxChars: number;
  toolOutputs: ToolOutputStorage;
  approval: {
    /** APPROVAL_TIMEOUT_S in ms: an unanswered approval is denied after this. */
    timeoutMs: number;
    /** ADMIN_TELEGRAM_USERS / ADMIN_DISCORD_USERS: may answer anyone's approval. */
    admins: Partial<Record<Platform, readonly string[]>>;
  };
  prices: { input: number; cachedInput: number; output: number };
  /** Archive a session idle this long before its next turn; 0 never (IDLE_RESET_HOURS). */
  idleResetMs: number;
  transcriptReader(sessionKey: string): TranscriptReader;
  transcriptLength(sessionKey: string): Promise<number>;
  now(): number;
  /** The deployment's time zone (TZ); a session's own setting wins (`chatTimeZone`). */
  timeZone: string;
  /** MESSAGE_TIMESTAMPS: user messages start with their send time (`toUserMessages`). */
  messageTimeStamps?: boolean;
  /** Reminders and scheduled tasks (`/reminders`); absent where the worker runs without them. */
  schedule?: ScheduleService;
  /** Long-term memory and pins (src/memory); absent: none. */
  memory?: MemoryService;
  /** Pictures, voice notes and files (src/media); absent: attachments stay placeholders. */
  media?: MediaEngine;
  /** The model catalogue (/model); absent: `llm` for every chat. */
  models?: ModelRouter;
  /** Budgets (issue #17): every LLM call of a turn is paid by its chat and speaker; absent: no budgets. */
  budget?: BudgetMeter;
  /** `/pair approve CODE` from a chat (admins): the same approval as `npm run pairing -- approve`. */
  pairing?: { approve(code: string): Promise<{ platform: string; userId: string; userName: string } | undefined> };
  /** `/export`: everything of the user's own (src/memory exportUserData); absent: no export here. */
  exportUser?(user: UserRef): Promise<UserExport>;
  /** Named personas of the config file (/persona <name>). */
  personas?: Readonly<Record<string, string>>;
}

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
 * Runs a batch: each segment in order, all on one working copy of the state. A failing segment
 * throws BatchFailedError, which carries what the segments before it did.
 */
export async function runTurnSegments(engine: TurnEngine, input: SegmentsInput): Promise<SegmentsResult> {
  const progress: SegmentProgress = {};
  try {
    return await runSegments(engine, input, progress);
  } catch (error) {
    throw new BatchFailedError(progress.done ?? { state: input.state, transcript: [], replies: [] }, progress.rest ?? input.batch, error);
  }
}

interface SegmentProgress {
  done?: SegmentsResult;
  rest?: InboxEntry[];
}

async function runSegments(base: TurnEngine, input: SegmentsInput, progress: SegmentProgress): Promise<SegmentsResult> {
  const state = workingCopy(input.state);
  const run: TurnRun = { engine: activeEngine(base, state), input, state, transcript: [], replies: [], approvalTimeouts: [], budget: batchBudget(base, input) };
  const start = await startTurn(run);
  let archivedSessionId = start.archivedSessionId;
  const segments = segmentBatch(start.batch);
  for (const [index, segment] of segments.entries()) {
    if (index > 0) {
      // What the batch did so far stays done if this segment fails (a /new before a failed chat).
      progress.done = resultOf(run, archivedSessionId, true);
      progress.rest = entriesOf(segments.slice(index));
    }
    const { newId, scope } = enterSegment(base, run, segment);
    switch (segment.kind) {
      case "action":
        await answerApproval(run, segment.entry);
        break;
      case "reminder": {
        // A fixed reminder: its text is the reply, and the conversation keeps it as the
        // assistant's own message, so the agent knows later that it reminded the user.
        const message = reminderMessage(segment.entry, newId());
        run.state.live.push(message);
        run.transcript.push(message);
        addReply(run, segment.entry.text, "answer", answering(run, [segment.entry]));
        break;
      }
      case "command":
        archivedSessionId = (await runCommandSegment(run, segment.command, segment.entry, scope)) ?? archivedSessionId;
        break;
      case "chat":
        await runChatSegment(run, segment.entries, newId, scope);
        break;
    }
  }
  run.state.updatedAt = run.engine.now();
  return resultOf(run, archivedSessionId, false);
}

/**
 * The turn's working copy of the state: everything copied deeply except the live messages,
 * which are never changed in place (only replaced; their token cache aside), so the context is
 * not cloned on every turn and the store can tell which messages it already holds.
 */
export function workingCopy(state: SessionState): SessionState {
  const { live, ...rest } = state;
  return { ...copyPlain(rest), live: [...live] };
}

/**
 * A deep copy of plain data (what the session store keeps: objects, arrays, strings, numbers,
 * booleans, null; strings are shared, being immutable). ~2 µs for a session's state where
 * structuredClone took ~11: it serializes into a buffer and back, and copies every string.
 */
export function copyPlain<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map(copyPlain) as T;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = copyPlain((value as Record<string, unknown>)[key]);
  return copy as T;
}

/**
 * What a run has produced; `snapshot` copies it, so the run can go on without changing it (the
 * live messages are shared, as in `workingCopy`: they are only ever replaced).
 */
function resultOf(run: TurnRun, archivedSessionId: string | undefined, snapshot: boolean): SegmentsResult {
  const copy = <T>(value: T): T => (snapshot ? copyPlain(value) : value);
  return {
    state: snapshot ? workingCopy(run.state) : run.state,
    transcript: copy(run.transcript),
    replies: copy(run.replies),
    ...(archivedSessionId === undefined ? {} : { archivedSessionId }),
    ...(run.approvalTimeouts.length > 0 ? { approvalTimeouts: copy(run.approvalTimeouts) } : {}),
  };
}
