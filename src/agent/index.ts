/**
 * The agent room's public surface: the turn over a batch (`runTurnSegments`) and what the
 * worker, the eval harness and the gateway use of it. The layout is in docs/architecture.md.
 */
export { runTurn, runCalls, MAX_OVERFLOW_RETRIES, type RunTurnInput, type RunTurnResult, type PausedStep } from "./run-turn.js";
export { runTurnSegments } from "./run-segments.js";
export type { SegmentsInput, SegmentsResult, SettleInput, AbortReason, ApprovalTimeout } from "./turn-types.js";
export type {
  TurnEngine, ToolOutputStorage, ChatPorts, CommandPorts, StartPorts, RoutingPorts, ModelPorts, ToolPorts, Clock, ApprovalSettings,
} from "./ports.js";
export { activeEngine } from "./active-model.js";
export { segmentBatch } from "./segments.js";
export { toUserMessages, userMessageText } from "./user-messages.js";
export { toolScopeOf } from "./tool-scope.js";
export { BatchFailedError, batchFailureCause, settleWithoutAnswer, failureNotice } from "./turn-failure.js";
export type { ContextManager, CompactionScope } from "../session-context/index.js";
export { parseCommand, type ParsedCommand } from "./commands/parse.js";
export { HELP_TEXT } from "./commands/run-command.js";
export { joinPasteParts, pasteWaitMs, PASTE_WAIT_MS } from "./paste-parts.js";
