import type { InboundMessage, OutboundReply, ReplyTarget } from "../core/channel.js";
import type { ChatMessage, UserMessage } from "../core/messages.js";
import { AbortedError, ContextOverflowError, errorMessage } from "../errors.js";
import type { Logger } from "../logger.js";
import type { LlmClient } from "../core/llm.js";
import { freshSessionAfter, messageIdAllocator, type SessionState } from "../session/state.js";
import type { InboxEntry } from "../session/store.js";
import { runCommand, type CommandContext } from "./commands/run-command.js";
import { parseCommand, type ParsedCommand } from "./commands/parse.js";
import type { ContextManager } from "./context-manager.js";
import { runTurn } from "./run-turn.js";
import type { ToolRegistry, TranscriptReader } from "./tools/registry.js";
import type { ScheduleService } from "../schedule/index.js";

/** Everything a turn needs besides the session itself; built once per worker process. */
export interface TurnEngine {
  llm: LlmClient;
  tools: ToolRegistry;
  context: ContextManager;
  systemPrompt: string;
  maxSteps: number;
  maxOutputTokens: number;
  toolOutputMaxChars: number;
  prices: { input: number; cachedInput: number; output: number };
  /** Archive a session idle this long before its next turn; 0 never (IDLE_RESET_HOURS). */
  idleResetMs: number;
  transcriptReader(sessionKey: string): TranscriptReader;
  transcriptLength(sessionKey: string): Promise<number>;
  now(): number;
  /** The deployment's time zone (TZ); a session's own setting wins (`chatTimeZone`). */
  timeZone: string;
  /** Reminders and scheduled tasks (`/reminders`); absent where the worker runs without them. */
  schedule?: ScheduleService;
}

/**
 * The chat's time zone: the session's own setting when it carries one (the time-zone work adds
 * the field), else the deployment's TZ.
 */
export function chatTimeZone(state: SessionState, fallback: string): string {
  const own = (state as { timeZone?: unknown }).timeZone;
  return typeof own === "string" && own !== "" ? own : fallback;
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
}

export type SettleInput = Omit<SegmentsInput, "signal">;

export interface SegmentsResult {
  state: SessionState;
  transcript: ChatMessage[];
  replies: OutboundReply[];
  archivedSessionId?: string;
}

type Segment =
  | { kind: "command"; command: ParsedCommand; entry: InboxEntry }
  | { kind: "reminder"; entry: InboxEntry }
  | { kind: "chat"; entries: InboxEntry[] };

/**
 * Commands are handled one by one, in order; consecutive chat messages form one agent turn. A
 * fired reminder is its own segment (no LLM call); a fired task is an agent turn of its own, so
 * its answer is not mixed with the answer to what people wrote.
 */
export function segmentBatch(batch: readonly InboxEntry[]): Segment[] {
  const segments: Segment[] = [];
  for (const entry of batch) {
    if (entry.scheduled?.kind === "reminder") {
      segments.push({ kind: "reminder", entry });
      continue;
    }
    const command = entry.scheduled ? undefined : parseCommand(entry.text);
    if (command) {
      segments.push({ kind: "command", command, entry });
      continue;
    }
    const last = segments[segments.length - 1];
    const joinable = last?.kind === "chat" && !entry.scheduled && !last.entries.some((previous) => previous.scheduled);
    if (joinable) last.entries.push(entry);
    else segments.push({ kind: "chat", entries: [entry] });
  }
  return segments;
}

/** The user messages a batch adds to the conversation. Shared chats name the speaker. */
export function toUserMessages(entries: readonly InboxEntry[], newId: () => string): UserMessage[] {
  return entries.map((entry) => ({
    id: newId(),
    at: entry.sentAt,
    role: "user",
    content: userMessageText(entry),
  }));
}

/**
 * What the model reads for one inbound message: the speaker in shared chats, then where it
 * was forwarded from and what it replies to (quoted, so the model can tell it from the
 * user's own words), then the text itself.
 */
export function userMessageText(entry: InboundMessage): string {
  // A fired task was worded by the scheduler (who set it, when it was due); no speaker prefix.
  if (entry.scheduled) return entry.text;
  const lines: string[] = [];
  if (entry.forwardedFrom !== undefined) lines.push(`[forwarded from ${entry.forwardedFrom}]`);
  if (entry.replyTo !== undefined) {
    const { author, text, quote } = entry.replyTo;
    const shown = quote !== undefined && quote.trim() !== "" ? quote : text;
    const quoted = shown.split("\n").map((line) => `> ${line}`).join("\n");
    lines.push(`[in reply to ${author}${quote ? " (quoting part of it)" : ""}:]\n${quoted}`);
  }
  lines.push(entry.text);
  const body = lines.join("\n");
  return entry.chatType === "group" ? `${entry.userName}: ${body}` : body;
}

/** Runs a batch: each segment in order, all on one working copy of the state. */
export async function runTurnSegments(engine: TurnEngine, input: SegmentsInput): Promise<SegmentsResult> {
  let state = structuredClone(input.state);
  const transcript: ChatMessage[] = [];
  const replies: OutboundReply[] = [];
  let archivedSessionId: string | undefined;
  // Optional idle reset (off by default: users of long-running chats hated nightly wipes).
  if (engine.idleResetMs > 0 && state.live.length > 0 && engine.now() - state.updatedAt >= engine.idleResetMs) {
    archivedSessionId = state.sessionId;
    state = freshSessionAfter(state, engine.now());
    input.log.info({ archivedSessionId }, "session-idle-reset");
  }
  const reply = (text: string, kind: OutboundReply["kind"], answers: readonly InboxEntry[]) => {
    replies.push(buildReply(input, replies.length, text, kind, answers));
  };

  for (const segment of segmentBatch(input.batch)) {
    const newId = messageIdAllocator(state);
    const scope = { signal: input.signal, log: input.log, newId, addToTranscript: (messages: readonly ChatMessage[]) => transcript.push(...messages) };
    ensureSystemPrompt(state, engine.systemPrompt, newId, engine.now());

    if (segment.kind === "reminder") {
      // A fixed reminder: its text is the reply, and the conversation keeps it as the
      // assistant's own message, so the agent knows later that it reminded the user.
      const message = reminderMessage(segment.entry, newId());
      state.live.push(message);
      transcript.push(message);
      reply(segment.entry.text, "answer", [segment.entry]);
      continue;
    }

    if (segment.kind === "command") {
      const commandContext: CommandContext = {
        engine, state, sessionKey: input.sessionKey, scope, now: engine.now(), entry: segment.entry,
        timeZone: chatTimeZone(state, engine.timeZone),
      };
      const outcome = await runCommand(segment.command, commandContext);
      // Messages of this batch before /new land in the fresh transcript: kept, not lost.
      if (outcome.archive) archivedSessionId = state.sessionId;
      state = outcome.state;
      reply(outcome.text, "notice", [segment.entry]);
      continue;
    }

    const userMessages = toUserMessages(segment.entries, newId);
    transcript.push(...userMessages);
    let context: ChatMessage[] = [...state.live, ...userMessages];
    state.lastTarget = input.target;

    const hygiene = await engine.context.hygiene(state, context, scope);
    context = hygiene.context;

    const result = await runTurn({
      llm: engine.llm,
      context,
      tools: engine.tools,
      toolContext: {
        sessionKey: input.sessionKey, signal: input.signal, transcript: engine.transcriptReader(input.sessionKey), now: engine.now,
        origin: segment.entries[segment.entries.length - 1], timeZone: chatTimeZone(state, engine.timeZone),
      },
      maxSteps: engine.maxSteps,
      maxOutputTokens: engine.maxOutputTokens,
      toolOutputMaxChars: engine.toolOutputMaxChars,
      newId,
      signal: input.signal,
      now: engine.now,
      prepareRequest: (current) => engine.context.prepareRequest(state, current),
      // Before every step, the first included: a plain chat without tool calls must compact at
      // the threshold too, not only at the hygiene limit.
      beforeStep: (current) => engine.context.beforeStep(state, current, scope),
      onOverflow: (current, error: ContextOverflowError) => engine.context.onOverflow(state, current, error, scope),
      onStepFinished: (stepResult, _step, sent) => engine.context.recordStep(state, sent, stepResult, input.log),
    });
    transcript.push(...result.transcript);
    state.live = result.context;
    state.stats.turns++;
    const notices = [...(hygiene.notice ? [hygiene.notice] : []), ...engine.context.takeNotices(state)];
    const text = notices.length > 0 ? `${notices.map((notice) => `⚠️ ${notice}`).join("\n")}\n\n${result.reply}` : result.reply;
    reply(text, "answer", segment.entries);
  }

  state.updatedAt = engine.now();
  return archivedSessionId === undefined ? { state, transcript, replies } : { state, transcript, replies, archivedSessionId };
}

/**
 * The system prompt heads the live context. It is written once and stays byte-stable (prompt
 * caching); when the operator changes it, it is replaced once, keeping the compaction note.
 */
function ensureSystemPrompt(state: SessionState, systemPrompt: string, newId: () => string, now: number): void {
  const first = state.live[0];
  if (first?.role === "system") {
    if (state.engine.systemPromptBase === systemPrompt) return;
    const note = typeof state.engine.systemPromptNote === "string" ? state.engine.systemPromptNote : "";
    state.live[0] = { ...first, content: systemPrompt + note, tokens: undefined };
  } else {
    state.live.unshift({ id: newId(), at: now, role: "system", content: systemPrompt });
  }
  state.engine.systemPromptBase = systemPrompt;
}

/** Keeps the user's messages in the session when a turn cannot produce an answer. */
export function settleWithoutAnswer(
  engine: Pick<TurnEngine, "now" | "systemPrompt">,
  input: SettleInput,
  text: string | undefined,
  mark?: (state: SessionState) => void,
): SegmentsResult {
  const state = structuredClone(input.state);
  mark?.(state);
  const newId = messageIdAllocator(state);
  ensureSystemPrompt(state, engine.systemPrompt, newId, engine.now());
  const transcript: ChatMessage[] = [];
  const replies: OutboundReply[] = [];
  for (const segment of segmentBatch(input.batch)) {
    if (segment.kind === "command") continue;
    if (segment.kind === "reminder") {
      // A fixed reminder needs no model: a failure elsewhere in the batch must not swallow it.
      const message = reminderMessage(segment.entry, newId());
      transcript.push(message);
      replies.push(buildReply(input, replies.length, segment.entry.text, "answer", [segment.entry]));
      continue;
    }
    transcript.push(...toUserMessages(segment.entries, newId));
  }
  state.live.push(...transcript);
  state.updatedAt = engine.now();
  if (text !== undefined) replies.push(buildReply(input, replies.length, text, "notice", input.batch));
  return { state, transcript, replies };
}

/** The assistant message a delivered reminder leaves in the conversation. */
function reminderMessage(entry: InboxEntry, id: string): ChatMessage {
  return { id, at: entry.sentAt, role: "assistant", content: entry.text };
}

/**
 * Reply `index` of this turn. Its id names the version the turn commits, so a retried turn
 * produces the same ids, and it answers (and replies to the last of) `answers`. Scheduled
 * messages have no platform message to reply to: a reply that answers only those is sent plain.
 */
function buildReply(input: SettleInput, index: number, text: string, kind: OutboundReply["kind"], answers: readonly InboxEntry[]): OutboundReply {
  const fromPeople = answers.filter((entry) => !entry.scheduled);
  const { replyToMessageId: _fallback, ...target } = input.target;
  const replyTo = fromPeople[fromPeople.length - 1]?.messageId ?? (answers.length > 0 && fromPeople.length === 0 ? undefined : input.target.replyToMessageId);
  return {
    replyId: `${input.sessionKey}#${input.state.version + 1}#${index}`,
    sessionKey: input.sessionKey,
    target: replyTo === undefined ? target : { ...target, replyToMessageId: replyTo },
    text,
    inReplyTo: fromPeople.map((entry) => entry.messageId),
    kind,
  };
}

export function failureNotice(error: unknown): string {
  if (error instanceof ContextOverflowError) {
    return "Sorry — this conversation no longer fits the model's context, even after compacting it. Nothing is lost: send /compress to try again, or /new to start fresh.";
  }
  if (error instanceof AbortedError) return "Stopped.";
  return `Sorry — I couldn't get an answer from the model (${errorMessage(error).slice(0, 200)}). Your message is saved; please try again in a moment.`;
}
