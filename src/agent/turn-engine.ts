import type { InboundMessage, OutboundReply, ReplyTarget } from "../core/channel.js";
import type { ChatMessage, UserMessage } from "../core/messages.js";
import { AbortedError, ContextOverflowError, PermanentError, errorMessage } from "../errors.js";
import type { Logger } from "../logger.js";
import type { LlmClient } from "../core/llm.js";
import { freshSessionAfter, messageIdAllocator, type SessionState } from "../session/state.js";
import type { InboxEntry } from "../session/store.js";
import { runCommand, type CommandContext } from "./commands/run-command.js";
import { parseCommand, type ParsedCommand } from "./commands/parse.js";
import type { ContextManager } from "./context-manager.js";
import { runTurn } from "./run-turn.js";
import type { ToolRegistry, TranscriptReader } from "./tools/registry.js";

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

type Segment = { kind: "command"; command: ParsedCommand; entry: InboxEntry } | { kind: "chat"; entries: InboxEntry[] };

/** Commands are handled one by one, in order; consecutive chat messages form one agent turn. */
export function segmentBatch(batch: readonly InboxEntry[]): Segment[] {
  const segments: Segment[] = [];
  for (const entry of batch) {
    const command = parseCommand(entry.text);
    if (command) {
      segments.push({ kind: "command", command, entry });
      continue;
    }
    const last = segments[segments.length - 1];
    if (last?.kind === "chat") last.entries.push(entry);
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

/**
 * Runs a batch: each segment in order, all on one working copy of the state. A failing chat
 * segment throws BatchFailedError, which carries what the segments before it did.
 */
export async function runTurnSegments(engine: TurnEngine, input: SegmentsInput): Promise<SegmentsResult> {
  const progress: SegmentProgress = {};
  try {
    return await runSegments(engine, input, progress);
  } catch (error) {
    throw new BatchFailedError(progress.done ?? { state: input.state, transcript: [], replies: [] }, progress.rest ?? input.batch, error);
  }
}

/**
 * A chat segment of a batch failed (the model, or an abort); `done` is what the segments before
 * it did (a `/new` stays done) and `rest` the entries from the failed one on.
 */
export class BatchFailedError extends Error {
  override readonly name = "BatchFailedError";
  constructor(readonly done: SegmentsResult, readonly rest: readonly InboxEntry[], cause: unknown) {
    super(errorMessage(cause), { cause });
  }
}

/** The error behind a failed batch (the model's, or the abort's). */
export const batchFailureCause = (error: unknown): unknown => (error instanceof BatchFailedError ? error.cause : error);

interface SegmentProgress {
  done?: SegmentsResult;
  rest?: InboxEntry[];
}

async function runSegments(engine: TurnEngine, input: SegmentsInput, progress: SegmentProgress): Promise<SegmentsResult> {
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

  const segments = segmentBatch(input.batch);
  for (const [index, segment] of segments.entries()) {
    const newId = messageIdAllocator(state);
    const scope = { signal: input.signal, log: input.log, newId, addToTranscript: (messages: readonly ChatMessage[]) => transcript.push(...messages) };
    ensureSystemPrompt(state, engine.systemPrompt, newId, engine.now());

    if (segment.kind === "command") {
      const commandContext: CommandContext = { engine, state, sessionKey: input.sessionKey, scope, now: engine.now() };
      const outcome = await runCommand(segment.command, commandContext);
      // Messages of this batch before /new land in the fresh transcript: kept, not lost.
      if (outcome.archive) archivedSessionId = state.sessionId;
      state = outcome.state;
      reply(outcome.text, "notice", [segment.entry]);
      continue;
    }

    if (index > 0) {
      progress.done = { state: structuredClone(state), transcript: [...transcript], replies: [...replies], ...(archivedSessionId === undefined ? {} : { archivedSessionId }) };
      progress.rest = segments.slice(index).flatMap((rest) => (rest.kind === "chat" ? rest.entries : [rest.entry]));
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
      toolContext: { sessionKey: input.sessionKey, signal: input.signal, transcript: engine.transcriptReader(input.sessionKey), now: engine.now },
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

/**
 * Keeps the user's messages in the session when a turn cannot produce an answer. `done`: what
 * earlier segments of the batch did (BatchFailedError), kept under the settled rest.
 */
export function settleWithoutAnswer(
  engine: Pick<TurnEngine, "now" | "systemPrompt">,
  input: SettleInput,
  text: string | undefined,
  mark?: (state: SessionState) => void,
  done?: SegmentsResult,
): SegmentsResult {
  const state = structuredClone(done?.state ?? input.state);
  mark?.(state);
  const newId = messageIdAllocator(state);
  ensureSystemPrompt(state, engine.systemPrompt, newId, engine.now());
  const chatEntries = input.batch.filter((entry) => !parseCommand(entry.text));
  const userMessages = toUserMessages(chatEntries, newId);
  state.live.push(...userMessages);
  state.updatedAt = engine.now();
  const earlier = done?.replies ?? [];
  const replies = text === undefined ? earlier : [...earlier, buildReply(input, earlier.length, text, "notice", input.batch)];
  const transcript = [...(done?.transcript ?? []), ...userMessages];
  return done?.archivedSessionId === undefined ? { state, transcript, replies } : { state, transcript, replies, archivedSessionId: done.archivedSessionId };
}

/**
 * Reply `index` of this turn. Its id names the version the turn commits, so a retried turn
 * produces the same ids, and it answers (and replies to the last of) `answers`.
 */
function buildReply(input: SettleInput, index: number, text: string, kind: OutboundReply["kind"], answers: readonly InboxEntry[]): OutboundReply {
  return {
    replyId: `${input.sessionKey}#${input.state.version + 1}#${index}`,
    sessionKey: input.sessionKey,
    target: { ...input.target, replyToMessageId: answers[answers.length - 1]?.messageId ?? input.target.replyToMessageId },
    text,
    inReplyTo: answers.map((entry) => entry.messageId),
    kind,
  };
}

export function failureNotice(error: unknown): string {
  if (error instanceof ContextOverflowError) {
    return "Sorry — this conversation no longer fits the model's context, even after compacting it. Nothing is lost: send /compress to try again, or /new to start fresh.";
  }
  if (error instanceof AbortedError) return "Stopped.";
  // Never the error's own text: provider and connection errors name hosts and addresses, which
  // belong in the log (turn-failed), not in a chat.
  const why = error instanceof PermanentError
    ? "the model service refused the request; the operator can check the log"
    : "the model service did not answer in time or is unavailable";
  return `Sorry — I couldn't get an answer from the model (${why}). Your message is saved; please try again in a moment.`;
}
