/**
 * Durable approval of tool calls, on the turn's side. A step that calls a tool needing
 * approval ends the turn: the calls that ran join the context at once (session-loop.ts), the
 * calls that wait stay in `state.pendingApproval` (outside the live context, so no LLM request
 * carries a call without its result), the request goes out with
 * buttons, and a delayed turn job is scheduled. The answer comes back through the ordinary
 * ingress as a button press; the turn that takes it resolves the step (runs the calls, or
 * turns them into "not run" results) and goes on with the tool loop. A restart loses nothing:
 * all of it is in Redis.
 */
import type { ChatMessage, ToolMessage } from "../core/messages.js";
import type { PendingApproval } from "../core/tools.js";
import { messageIdAllocator } from "../session/state.js";
import { notRunResult, outcomeText, type ApprovalOutcome } from "../tools/index.js";
import { compactionScope } from "./compaction-scope.js";
import type { ChatPorts } from "./ports.js";
import { addReply, replyIdOf } from "./replies.js";
import { runCalls } from "./run-turn.js";
import { finishLoop, runLoop, toolPlumbing } from "./session-loop.js";
import type { TurnRun } from "./turn-types.js";

/** How many answered approvals a session remembers (SessionState.answeredApprovals). */
const ANSWERED_APPROVALS_KEPT = 20;

/** Denies a pending approval whose time is up (its timeout job fired, or a later turn found it late). */
export async function expireApproval(run: TurnRun<ChatPorts>): Promise<void> {
  const pending = run.state.pendingApproval;
  if (!pending) return;
  if (run.input.approvalTimeout !== pending.id && run.engine.now() < pending.expiresAt) return;
  await resolveApproval(run, "expired", { continueLoop: true });
}

export interface ResolveOptions {
  /** Who answered, for the outcome line. */
  by?: string;
  /** The request message, replaced by the outcome. */
  sourceMessageId?: string;
  /** The press being answered (the outcome answers it too). */
  pressId?: string;
  /** Go on with the tool loop (answered, expired) or not (a new message or /stop took over). */
  continueLoop: boolean;
}

/**
 * Resolves the pending step: approved calls run now, the others get a "not run" result the
 * model reads; the waiting calls' message and every result, in the calls' order, join the
 * context and the transcript; then the loop goes on from the step it paused at.
 */
export async function resolveApproval(run: TurnRun<ChatPorts>, outcome: ApprovalOutcome, options: ResolveOptions): Promise<void> {
  const pending = run.state.pendingApproval;
  if (!pending) return;
  delete run.state.pendingApproval;
  const { engine, input } = run;
  const newId = messageIdAllocator(run.state);
  const scope = compactionScope(run, newId);
  const toolScope = { sessionKey: input.sessionKey, platform: pending.target.platform, ...pending.scope };
  const turnTools = outcome === "approved" || options.continueLoop ? await engine.tools.forTurn(toolScope, input.log) : undefined;
  const waitingIds = new Set(pending.waiting.map((call) => call.callId));
  const calls = (pending.assistant.tool_calls ?? []).filter((call) => waitingIds.has(call.id));

  let resolved: ToolMessage[];
  if (outcome === "approved" && turnTools) {
    resolved = await runCalls(toolPlumbing(run, turnTools.tools, newId, pending.origin), calls);
  } else {
    resolved = calls.map((call) => ({ id: newId(), at: engine.now(), role: "tool", tool_call_id: call.id, content: notRunResult(outcome === "approved" ? "denied" : outcome, engine.approval.timeoutMs) }));
  }
  const byCall = new Map([...pending.results, ...resolved].map((message) => [message.tool_call_id, message]));
  const step: ChatMessage[] = [pending.assistant, ...(pending.assistant.tool_calls ?? []).flatMap((call) => byCall.get(call.id) ?? [])];
  run.state.live.push(...step);
  run.transcript.push(...step);
  input.log.info({ approvalId: pending.id, outcome, by: options.by }, "tool-approval-resolved");

  if (options.sourceMessageId) run.state.answeredApprovals = [...(run.state.answeredApprovals ?? []), pending.id].slice(-ANSWERED_APPROVALS_KEPT);
  const answers = { target: pending.target, inReplyTo: pending.inReplyTo };
  if (outcome !== "superseded" && outcome !== "stopped") {
    const outcomeAnswers = options.pressId ? { ...answers, inReplyTo: [...answers.inReplyTo, options.pressId] } : answers;
    addReply(run, outcomeText(pending, outcome, options.by, engine.approval.timeoutMs), "notice", outcomeAnswers, options.sourceMessageId ? { replaces: options.sourceMessageId } : {});
  }
  if (!options.continueLoop || !turnTools) return;
  run.input.preview?.begin(replyIdOf(run.input, run.replies.length));
  const result = await runLoop(run, [...run.state.live], turnTools.tools, { ...scope, tools: turnTools.tools.definitions() }, pending.step, pending.origin);
  finishLoop(run, result, { answers, requestedBy: pending.requestedBy, scope: pending.scope, ...(pending.origin ? { origin: pending.origin } : {}) });
}

export type { PendingApproval };
