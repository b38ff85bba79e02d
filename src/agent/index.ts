export { runTurn, runCalls, MAX_OVERFLOW_RETRIES, type RunTurnInput, type RunTurnResult, type PausedStep } from "./run-turn.js";
export {
  runTurnSegments,
  type TurnEngine, type SegmentsInput, type SegmentsResult, type SettleInput, type AbortReason, type ApprovalTimeout, type ToolOutputStorage,
} from "./turn-engine.js";
export { segmentBatch } from "./segments.js";
export { toUserMessages, userMessageText } from "./user-messages.js";
export { toolScopeOf } from "./chat-segment.js";
export { BatchFailedError, batchFailureCause, settleWithoutAnswer, failureNotice } from "./turn-failure.js";
export type { ContextManager, CompactionScope } from "./context-manager.js";
export { parseCommand, type ParsedCommand } from "./commands/parse.js";
export { HELP_TEXT } from "./commands/run-command.js";
export { joinPasteParts, pasteWaitMs, PASTE_WAIT_MS } from "./paste-parts.js";
