/**
 * The tool loop bound to a turn: runTurn with the session's context engine, output caps and
 * stores wired in, and what becomes of its result (an answer, or a step paused for approval).
 */
import { randomUUID } from "node:crypto";
import type { MessageOrigin } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import type { PendingApproval } from "../core/tools.js";
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
    const pending: PendingApproval = {
      id: randomUUID(),
      requestedBy: origin.requestedBy,
      requestedAt: now,
      expiresAt: now + engine.approval.timeoutMs,
      target: origin.answers.target,
      assistant: result.paused.assistant,
      results: result.paused.results,
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
    run.input.log.info({ approvalId: pending.id, tools: pending.waiting.map((call) => call.name) }, "tool-approval-requested");
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
