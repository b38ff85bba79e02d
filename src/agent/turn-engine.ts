import { messageOrigin, type InboundMessage, type OutboundReply, type Platform, type ReplyTarget } from "../core/channel.js";
import type { ChatMessage, UserMessage } from "../core/messages.js";
import { describeGap, formatStamp } from "../core/time-stamp.js";
import type { Logger } from "../logger.js";
import type { LlmClient } from "../core/llm.js";
import { freshSessionAfter, messageIdAllocator, type SessionState } from "../session/state.js";
import type { InboxEntry } from "../session/store.js";
import { describeTools, ToolRegistry, type ToolCatalog, type ToolScope, type TranscriptReader } from "../tools/index.js";
import { answerApproval, expireApproval, resolveApproval, type TurnRun } from "./approvals.js";
import { runCommand, type CommandContext } from "./commands/run-command.js";
import { parseCommand, type ParsedCommand } from "./commands/parse.js";
import type { CompactionScope, ContextManager } from "./context-manager.js";
import { joinPasteParts } from "./paste-parts.js";
import { BatchFailedError } from "./turn-failure.js";
import { finishLoop, runLoop } from "./tool-loop.js";
import type { ScheduleService } from "../schedule/index.js";
import type { TurnPreview } from "./preview.js";
import type { MemoryService } from "../memory/index.js";
import type { MediaEngine } from "../media/index.js";
import { activeEngine, type ModelRouter } from "../models/router.js";
import { withPersona } from "../models/persona.js";
import { payFrom, runInBudgetScope, takeBudgetWarnings, type BudgetAccounts, type BudgetMeter } from "../budget/index.js";
import { platformPrefix } from "../tools/access.js";

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
  /** Named personas of the config file (/persona <name>). */
  personas?: Readonly<Record<string, string>>;
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

type Segment =
  | { kind: "command"; command: ParsedCommand; entry: InboxEntry }
  | { kind: "action"; entry: InboxEntry }
  | { kind: "reminder"; entry: InboxEntry }
  | { kind: "chat"; entries: InboxEntry[] };

/**
 * Commands and button presses are handled one by one, in order; consecutive chat messages form
 * one agent turn. A fired reminder is its own segment (no LLM call); a fired task is an agent
 * turn of its own, so its answer is not mixed with the answer to what people wrote.
 */
export function segmentBatch(batch: readonly InboxEntry[]): Segment[] {
  const segments: Segment[] = [];
  // The parts of one long paste are one message (paste-parts.ts).
  for (const entry of joinPasteParts(batch)) {
    if (entry.action) {
      segments.push({ kind: "action", entry });
      continue;
    }
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

/**
 * The user messages a batch adds to the conversation. Shared chats name the speaker. With
 * `stamp`, each starts with when it was sent, `[Tue 2026-12-01 10:44 Europe/Berlin]`, and a gap of
 * an hour or more since the message before (`previousAt`) is spelled out. The stamp is written
 * once, into the stored content, so the cached prompt prefix never changes; the latest stamp tells
 * the model today's date and the chat's zone without touching the system prompt.
 */
export function toUserMessages(entries: readonly InboxEntry[], newId: () => string, stamp?: { timeZone: string; previousAt?: number }): UserMessage[] {
  let previousAt = stamp?.previousAt;
  return entries.map((entry) => {
    const text = userMessageText(entry);
    let content = text;
    if (stamp) {
      const gap = previousAt === undefined ? undefined : describeGap(entry.sentAt - previousAt);
      content = `[${formatStamp(entry.sentAt, stamp.timeZone)}${gap ? ` · ${gap} after the previous message` : ""}] ${text}`;
      previousAt = entry.sentAt;
    }
    return {
      id: newId(),
      at: entry.sentAt,
      role: "user",
      content,
      ...(entry.attachments?.length ? { attachments: entry.attachments } : {}),
    };
  });
}

/** The stamp settings of a turn: the chat's zone and the time of the last message before it. */
export function stampFor(engine: Partial<Pick<TurnEngine, "messageTimeStamps" | "timeZone">>, state: SessionState): { timeZone: string; previousAt?: number } | undefined {
  if (!engine.messageTimeStamps) return undefined;
  const previousAt = state.live.findLast((message) => message.role !== "system" && message.at !== undefined)?.at;
  return { timeZone: chatTimeZone(state, engine.timeZone ?? "UTC"), ...(previousAt === undefined ? {} : { previousAt }) };
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
  if (entry.attachmentText) lines.push(entry.attachmentText);
  if (entry.text !== "" || !entry.attachmentText) lines.push(entry.text);
  const body = lines.join("\n");
  return entry.chatType === "group" ? `${entry.userName}: ${body}` : body;
}

/** The tool access of a turn answering `entries` (access.tools looks at the chat and the speakers). */
export function toolScopeOf(sessionKey: string, entries: readonly InboundMessage[], target: ReplyTarget): ToolScope {
  const last = entries[entries.length - 1];
  return {
    sessionKey,
    platform: target.platform,
    chatId: last?.chatId ?? target.chatId,
    ...(last?.parentChatId ? { parentChatId: last.parentChatId } : {}),
    userIds: entries.map((entry) => entry.userId),
  };
}

/**
 * Runs a batch: each segment in order, all on one working copy of the state. A failing segment
 * throws BatchFailedError, which carries what the segments before it did.
 */
export async function runTurnSegments(engine: TurnEngine, input: SegmentsInput): Promise<SegmentsResult> {
  const progress: SegmentProgress = {};
  const speaker = input.state.pendingApproval?.requestedBy ?? input.batch[input.batch.length - 1];
  const budget = engine.budget ? { meter: engine.budget, accounts: budgetAccounts(input.sessionKey, speaker), warnings: [] } : undefined;
  try {
    return await runInBudgetScope(budget, () => runSegments(engine, input, progress));
  } catch (error) {
    throw new BatchFailedError(progress.done ?? { state: input.state, transcript: [], replies: [] }, progress.rest ?? input.batch, error);
  }
}

/** The chat (session) and the person (`tg:42`) who pay for a segment's calls. */
export function budgetAccounts(sessionKey: string, speaker: { platform: InboundMessage["platform"]; userId: string } | undefined): BudgetAccounts {
  return speaker && speaker.userId !== "" ? { chat: sessionKey, user: `${platformPrefix(speaker.platform)}:${speaker.userId}` } : { chat: sessionKey };
}

interface SegmentProgress {
  done?: SegmentsResult;
  rest?: InboxEntry[];
}

async function runSegments(base: TurnEngine, input: SegmentsInput, progress: SegmentProgress): Promise<SegmentsResult> {
  const state = workingCopy(input.state);
  const run: TurnRun = { engine: activeEngine(base, state), input, state, transcript: [], replies: [], approvalTimeouts: [] };
  let engine = run.engine;
  let archivedSessionId: string | undefined;
  // Optional idle reset (off by default: users of long-running chats hated nightly wipes).
  if (engine.idleResetMs > 0 && run.state.live.length > 0 && engine.now() - run.state.updatedAt >= engine.idleResetMs) {
    archivedSessionId = run.state.sessionId;
    run.state = freshSessionAfter(run.state, engine.now());
    input.log.info({ archivedSessionId }, "session-idle-reset");
  }
  ensureSystemPrompt(run.state, engine.systemPrompt, messageIdAllocator(run.state), engine.now());
  // An approval nobody answered in time is denied before anything else (its timeout job, or
  // any later turn if that job was lost).
  await expireApproval(run);

  // Voice notes become text (a spoken command is a command), files text, pictures references.
  let batch = input.batch;
  const mediaNotices: Array<{ entry: InboxEntry; text: string }> = [];
  if (engine.media) {
    const sessionId = run.state.sessionId;
    const resolved = await engine.media.resolve(batch, {
      signal: input.signal,
      log: input.log,
      saveText: (id, text) => engine.toolOutputs.save(input.sessionKey, sessionId, id, text),
    });
    batch = resolved.entries;
    mediaNotices.push(...resolved.notices);
  }
  for (const notice of mediaNotices) addReply(run, notice.text, "notice", answering(run, [notice.entry]));

  const segments = segmentBatch(batch);
  for (const [index, segment] of segments.entries()) {
    if (index > 0) {
      // What the batch did so far stays done if this segment fails (a /new before a failed chat).
      progress.done = resultOf(run, archivedSessionId, true);
      progress.rest = segments.slice(index).flatMap((rest) => (rest.kind === "chat" ? rest.entries : [rest.entry]));
    }
    // The session's model, from this segment on: a /model earlier in the batch applies here.
    engine = run.engine = activeEngine(base, run.state);
    // Each segment's calls are paid by the chat and the person it answers.
    payFrom(budgetAccounts(input.sessionKey, segment.kind === "chat" ? segment.entries[segment.entries.length - 1] : segment.entry));
    const newId = messageIdAllocator(run.state);
    const scope = compactionScope(run, newId);
    ensureSystemPrompt(run.state, engine.systemPrompt, newId, engine.now());

    if (segment.kind === "action") {
      await answerApproval(run, segment.entry);
      continue;
    }

    if (segment.kind === "reminder") {
      // A fixed reminder: its text is the reply, and the conversation keeps it as the
      // assistant's own message, so the agent knows later that it reminded the user.
      const message = reminderMessage(segment.entry, newId());
      run.state.live.push(message);
      run.transcript.push(message);
      addReply(run, segment.entry.text, "answer", answering(run, [segment.entry]));
      continue;
    }

    if (segment.kind === "command") {
      const toolScope = toolScopeOf(input.sessionKey, [segment.entry], input.target);
      if (segment.command.name === "stop" && run.state.pendingApproval) {
        await resolveApproval(run, "stopped", { continueLoop: false });
        addReply(run, "Stopped: the tool call waiting for approval was not run.", "notice", answering(run, [segment.entry]));
        continue;
      }
      const commandContext: CommandContext = {
        engine, state: run.state, sessionKey: input.sessionKey, scope, now: engine.now(),
        describeTools: async () => describeTools(await engine.tools.forTurn(toolScope, input.log), engine.tools.builtins),
        toolDefinitions: async () => (await engine.tools.forTurn(toolScope, input.log)).tools.definitions(),
        entry: segment.entry,
        timeZone: chatTimeZone(run.state, engine.timeZone),
      };
      const outcome = await runCommand(segment.command, commandContext);
      // Messages of this batch before /new land in the fresh transcript: kept, not lost.
      if (outcome.archive) archivedSessionId = run.state.sessionId;
      run.state = outcome.state;
      // A command that called a model (/compress) may have crossed a budget threshold.
      const warnings = takeBudgetWarnings().map((warning) => `⚠️ ${warning}`);
      addReply(run, [outcome.text, ...warnings].join("\n\n"), "notice", answering(run, [segment.entry]));
      continue;
    }

    // A new message while a tool call waits for approval: the call is not run, and the
    // conversation goes on with what the user wrote (docs/tools.md). A fired task is nobody
    // answering: the request keeps waiting (below).
    const scheduledTask = segment.entries.some((entry) => entry.scheduled);
    if (run.state.pendingApproval && !scheduledTask) await resolveApproval(run, "superseded", { continueLoop: false });

    // The answer's reply id names its preview, so a retried turn continues the same preview.
    input.preview?.begin(replyIdOf(input, run.replies.length));
    const userMessages = toUserMessages(segment.entries, newId, stampFor(engine, run.state));
    run.transcript.push(...userMessages);
    let context: ChatMessage[] = [...run.state.live, ...userMessages];
    run.state.lastTarget = input.target;

    const toolScope = toolScopeOf(input.sessionKey, segment.entries, input.target);
    let { tools } = await engine.tools.forTurn(toolScope, input.log);
    // One step waits for approval at a time: a task that runs meanwhile goes without the tools
    // that would ask again.
    if (run.state.pendingApproval) tools = new ToolRegistry(tools.list().filter((tool) => !tool.needsApproval));
    const toolsScope: CompactionScope = { ...scope, tools: tools.definitions() };
    const speaker = segment.entries[segment.entries.length - 1];
    // Whose memory this conversation reads; at session start, its snapshot.
    if (engine.memory && speaker) await engine.memory.prepareTurn(run.state, speaker);
    const hygiene = await engine.context.hygiene(run.state, context, toolsScope);
    context = hygiene.context;
    const last = segment.entries[segment.entries.length - 1];
    const origin = last ? messageOrigin(last) : undefined;
    const result = await runLoop(run, context, tools, toolsScope, 0, origin);
    finishLoop(run, result, {
      answers: answering(run, segment.entries),
      requestedBy: { platform: input.target.platform, userId: last?.userId ?? "", userName: last?.userName ?? "" },
      scope: { chatId: toolScope.chatId, ...(toolScope.parentChatId ? { parentChatId: toolScope.parentChatId } : {}), userIds: [...toolScope.userIds] },
      ...(origin ? { origin } : {}),
      ...(hygiene.notice ? { notices: [hygiene.notice] } : {}),
    });
    // What the model said about the pictures it was shown: kept with them for summaries and recall.
    if (engine.media && result.stoppedBy !== "approval" && (await engine.media.vision.enabled())) describePictures(userMessages, result.reply);
  }

  run.state.updatedAt = engine.now();
  return resultOf(run, archivedSessionId, false);
}

/** Longest description kept with a picture (the model's answer when it was shown). */
const DESCRIPTION_MAX_CHARS = 1_000;

function describePictures(messages: readonly UserMessage[], reply: string): void {
  const description = reply.length > DESCRIPTION_MAX_CHARS ? `${reply.slice(0, DESCRIPTION_MAX_CHARS)}…` : reply;
  for (const message of messages) {
    for (const attachment of message.attachments ?? []) {
      if (attachment.kind === "image" && attachment.inline && attachment.problem === undefined) attachment.description = description;
    }
  }
}

/**
 * The turn's working copy of the state: everything copied deeply except the live messages,
 * which are never changed in place (only replaced; their token cache aside), so the context is
 * not cloned on every turn and the store can tell which messages it already holds.
 */
export function workingCopy(state: SessionState): SessionState {
  const { live, ...rest } = state;
  return { ...structuredClone(rest), live: [...live] };
}

/** What a run has produced; `snapshot` copies it, so the run can go on without changing it. */
function resultOf(run: TurnRun, archivedSessionId: string | undefined, snapshot: boolean): SegmentsResult {
  const copy = <T>(value: T): T => (snapshot ? structuredClone(value) : value);
  return {
    state: copy(run.state),
    transcript: copy(run.transcript),
    replies: copy(run.replies),
    ...(archivedSessionId === undefined ? {} : { archivedSessionId }),
    ...(run.approvalTimeouts.length > 0 ? { approvalTimeouts: copy(run.approvalTimeouts) } : {}),
  };
}

export function compactionScope(run: TurnRun, newId: () => string): CompactionScope {
  return {
    signal: run.input.signal, log: run.input.log, newId, addToTranscript: (messages) => run.transcript.push(...messages),
    onCompacting: () => run.input.preview?.compacting(),
    timeZone: chatTimeZone(run.state, run.engine.timeZone),
  };
}

/** Where a reply goes and which messages it answers. */
export interface Answering {
  target: ReplyTarget;
  inReplyTo: string[];
}

/**
 * A reply to `entries`: it replies to the last of them a person sent; for a button press, to
 * the message that carried the buttons (a press has no platform message of its own). Scheduled
 * messages have no platform message either: a reply that answers only those is sent plain.
 */
export function answering(run: { input: Pick<SettleInput, "target"> }, entries: readonly InboxEntry[]): Answering {
  const fromPeople = entries.filter((entry) => !entry.scheduled);
  const last = fromPeople[fromPeople.length - 1];
  const anchor = last
    ? (last.action ? last.action.sourceMessageId : last.messageId)
    : (entries.length > 0 ? undefined : run.input.target.replyToMessageId);
  const { replyToMessageId: _previous, ...target } = run.input.target;
  return { target: anchor === undefined ? target : { ...target, replyToMessageId: anchor }, inReplyTo: fromPeople.map((entry) => entry.messageId) };
}

/**
 * Reply `index` of this turn. Its id names the version the turn commits, so a retried turn
 * produces the same ids.
 */
export function addReply(run: Pick<TurnRun, "input" | "replies">, text: string, kind: OutboundReply["kind"], to: Answering, extra: Pick<OutboundReply, "actions" | "replaces" | "preview" | "previewOnly"> = {}): void {
  run.replies.push(buildReply(run.input, run.replies.length, text, kind, to, extra));
}

/**
 * The system prompt heads the live context. It is written once and stays byte-stable (prompt
 * caching); when the operator changes it, it is replaced once, keeping the compaction note.
 */
export function ensureSystemPrompt(state: SessionState, basePrompt: string, newId: () => string, now: number): void {
  // The chat's persona is part of the system prompt, so it stays in the cache-stable prefix.
  const systemPrompt = withPersona(basePrompt, state);
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

/** The assistant message a delivered reminder leaves in the conversation. */
export function reminderMessage(entry: InboxEntry, id: string): ChatMessage {
  return { id, at: entry.sentAt, role: "assistant", content: entry.text };
}

/** The id of reply `index` of the turn that began from `input.state`. */
export const replyIdOf = (input: Pick<SettleInput, "sessionKey" | "state">, index: number): string => `${input.sessionKey}#${input.state.version + 1}#${index}`;

export function buildReply(input: SettleInput, index: number, text: string, kind: OutboundReply["kind"], to: Answering, extra: Pick<OutboundReply, "actions" | "replaces" | "preview" | "previewOnly"> = {}): OutboundReply {
  return {
    replyId: replyIdOf(input, index),
    sessionKey: input.sessionKey,
    target: to.target,
    text,
    inReplyTo: to.inReplyTo,
    kind,
    ...(extra.actions ? { actions: extra.actions } : {}),
    ...(extra.replaces ? { replaces: extra.replaces } : {}),
    ...(extra.preview ? { preview: extra.preview } : {}),
    ...(extra.previewOnly ? { previewOnly: true } : {}),
  };
}
