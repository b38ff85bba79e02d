/**
 * The tool loop bound to a turn: runTurn with the session's context engine, output caps and
 * stores wired in, and what becomes of its result (an answer, or a step paused for approval).
 */
import { randomUUID } from "node:crypto";
import type { MessageOrigin } from "../core/channel.js";
import type { AssistantMessage, ChatMessage, ToolMessage } from "../core/messages.js";
import type { PendingApproval } from "../core/tools.js";
import { messageIdAllocator } from "../session/state.js";
import { approvalActions, approvalRequestText, DELEGATE_TOOL, outputCapChars, type ToolRegistry } from "../tools/index.js";
import type { ContextOverflowError } from "../errors.js";
import type { CompactionScope } from "../session-context/index.js";
import type { ChatPorts } from "./ports.js";
import { delegation } from "./delegate.js";
import { addReply } from "./replies.js";
import { runTurn, type RunTurnInput, type RunTurnResult } from "./run-turn.js";
import type { Answering, TurnRun } from "./turn-types.js";
import { chatTimeZone } from "./chat-time-zone.js";

/**
 * The parts of runTurn's input that tie tools to this session: context, caps, stores, and the
 * message the loop answers (`origin`: who asks, in which chat, for tools that act on the chat).
 */
export function toolPlumbing(run: TurnRun<ChatPorts>, tools: ToolRegistry, newId: () => string, origin?: MessageOrigin): Pick<RunTurnInput, "tools" | "toolContext" | "outputCap" | "toolOutputs" | "newId" | "now" | "keepToolImages"> {
  const { engine, input } = run;
  const state = run.state;
  const { sessionId } = state;
  return {
    tools,
    toolContext: {
      sessionKey: input.sessionKey,
      signal: input.signal,
      transcript: engine.transcriptReader(input.sessionKey),
      outputs: { read: (id, offset, length) => engine.toolOutputs.read(input.sessionKey, sessionId, id, offset, length) },
      now: engine.now,
      ...(origin ? { origin } : {}),
      timeZone: chatTimeZone(state, engine.timeZone),
      turnVersion: state.version + 1,
    },
    outputCap: (tool) => outputCapChars({ configured: engine.toolOutputMaxChars, contextWindow: engine.context.contextWindow(state), perTool: tool?.maxOutputChars }),
    toolOutputs: { save: (id, text) => engine.toolOutputs.save(input.sessionKey, sessionId, id, text) },
    ...(engine.media ? { keepToolImages: engine.media.keepToolImages } : {}),
    newId,
    now: engine.now,
  };
}

export function runLoop(run: TurnRun<ChatPorts>, context: ChatMessage[], tools: ToolRegistry, scope: CompactionScope, stepsTaken: number, origin?: MessageOrigin): Promise<RunTurnResult> {
  const { engine, input } = run;
  const state = run.state;
  const definitions = tools.definitions();
  const toolsScope: CompactionScope = { ...scope, tools: definitions };
  const plumbing = toolPlumbing(run, tools, scope.newId, origin);
  // The `delegate` tool (opt-in) runs its children with this turn's tools, model and payer.
  if (tools.get(DELEGATE_TOOL)) plumbing.toolContext = { ...plumbing.toolContext, delegate: delegation(run, tools, plumbing) };
  return runTurn({
    ...plumbing,
    llm: engine.llm,
    context,
    maxSteps: engine.maxSteps,
    maxOutputTokens: engine.maxOutputTokens,
    signal: input.signal,
    budget: run.budget,
    stepsTaken,
    // A step waiting for approval joins the context when answered: a turn meanwhile (a fired task) must not reuse its ids.
    ...(state.pendingApproval ? { reservedCallIds: (state.pendingApproval.assistant.tool_calls ?? []).map((call) => call.id) } : {}),
    ...(input.preview?.current !== undefined ? { preview: input.preview } : {}),
    prepareRequest: async (current) => {
      const prepared = engine.context.prepareRequest(state, current);
      if (!engine.media) return prepared;
      return { ...prepared, messages: await engine.media.addImages(prepared.messages, current, { log: input.log, signal: input.signal, model: engine.llm.model }) };
    },
    // Before every step, the first included: a plain chat without tool calls must compact at
    // the threshold too, not only at the hygiene limit.
    beforeStep: (current) => engine.context.beforeStep(state, current, toolsScope),
    onOverflow: (current, error: ContextOverflowError) => engine.context.onOverflow(state, current, error, toolsScope),
    onStepFinished: (stepResult, _step, sent) => {
      run.reportedModel = stepResult.model;
      engine.context.recordStep(state, sent, stepResult, input.log, definitions);
    },
  });
}

export interface LoopOrigin {
  answers: Answering;
  requestedBy: PendingApproval["requestedBy"];
  scope: PendingApproval["scope"];
  /** The message the loop answers; a paused step keeps it for the loop it resumes. */
  origin?: MessageOrigin;
  notices?: string[];
}

/**
 * Takes the loop's result into the turn: the context and transcript, then either the answer,
 * or (a step paused for approval) the pending approval in the state, the request with its
 * buttons, and a timeout to schedule once the turn is committed.
 */
export function finishLoop(run: TurnRun<ChatPorts>, result: RunTurnResult, origin: LoopOrigin): void {
  const { engine, state } = run;
  run.transcript.push(...result.transcript);
  state.live = result.context;
  if (result.stoppedBy === "approval" && result.paused) {
    const now = engine.now();
    const waits = splitPausedStep(result.paused.assistant, result.paused.results, new Set(result.paused.waiting.map((call) => call.callId)), messageIdAllocator(state));
    // The calls that ran are in the conversation now, as the step they were: a turn that runs
    // while the request waits (a fired task) must see what was done, or its model may do it
    // again (a reminder set twice). Only the calls that wait stay out until the answer.
    if (waits.ran.length > 0) {
      state.live.push(...waits.ran);
      run.transcript.push(...waits.ran);
    }
    const pending: PendingApproval = {
      id: randomUUID(),
      requestedBy: origin.requestedBy,
      requestedAt: now,
      expiresAt: now + engine.approval.timeoutMs,
      target: origin.answers.target,
      assistant: waits.assistant,
      results: [],
      waiting: result.paused.waiting,
      step: result.paused.step,
      inReplyTo: origin.answers.inReplyTo,
      scope: origin.scope,
      ...(origin.origin ? { origin: origin.origin } : {}),
    };
    state.pendingApproval = pending;
    const preview = run.input.preview?.consume();
    addReply(run, approvalRequestText(pending, engine.approval.timeoutMs), "notice", origin.answers, { actions: approvalActions(pending.id), ...(preview === undefined ? {} : { preview }) });
    run.approvalTimeouts.push({ approvalId: pending.id, delayMs: engine.approval.timeoutMs });
    // The reply id ties the request to its delivery's lines (a part whose outcome is unknown names it).
    run.input.log.info({ approvalId: pending.id, replyId: run.replies.at(-1)?.replyId, tools: pending.waiting.map((call) => call.name) }, "tool-approval-requested");
    return;
  }
  state.stats.turns++;
  const notices = [...(origin.notices ?? []), ...engine.context.takeNotices(state), ...(run.budget?.takeWarnings() ?? [])];
  let reply = result.reply;
  if (state.chat?.confirmModel && run.reportedModel !== undefined) {
    // The model the endpoint says answered, not the one we asked for: a router or proxy may differ.
    reply = `${reply}\n\n(answered by ${run.reportedModel})`;
    delete state.chat.confirmModel;
  }
  const warned = notices.length > 0 ? `${notices.map((notice) => `⚠️ ${notice}`).join("\n")}\n\n${reply}` : reply;
  // COMPACTION_NOTICE=brief: one line saying a compaction happened, never the summary itself.
  const compacted = state.memory?.notice;
  if (compacted !== undefined) delete state.memory!.notice;
  const text = compacted ? `${compacted}\n\n${warned}` : warned;
  const preview = run.input.preview?.consume();
  addReply(run, text, "answer", origin.answers, preview === undefined ? {} : { preview });
}

/**
 * A paused step in two: the calls that ran (an assistant message naming only them, then their
 * results: in the conversation at once), and an assistant message naming only the calls that
 * wait (it joins the conversation with their results once the request is answered). The text and
 * the provider's reasoning stay with the first; the reasoning goes with the second too (DeepSeek
 * wants it on each step of a tool loop). Nothing ran: the step as it is.
 */
function splitPausedStep(assistant: AssistantMessage, results: readonly ToolMessage[], waitingIds: ReadonlySet<string>, newId: () => string): { ran: ChatMessage[]; assistant: AssistantMessage } {
  const calls = assistant.tool_calls ?? [];
  const ranCalls = calls.filter((call) => !waitingIds.has(call.id));
  if (ranCalls.length === 0 || results.length === 0) return { ran: [], assistant };
  const ranIds = new Set(ranCalls.map((call) => call.id));
  const ran: ChatMessage[] = [
    { ...assistant, tool_calls: ranCalls },
    ...calls.flatMap((call) => (ranIds.has(call.id) ? results.filter((message) => message.tool_call_id === call.id) : [])),
  ];
  const { reasoning_content: reasoning, ...rest } = assistant;
  return {
    ran,
    assistant: { ...rest, id: newId(), content: null, tool_calls: calls.filter((call) => waitingIds.has(call.id)), ...(reasoning ? { reasoning_content: reasoning } : {}) },
  };
}
