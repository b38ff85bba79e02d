export { runTurn, runCalls, MAX_OVERFLOW_RETRIES, type RunTurnInput, type RunTurnResult, type PausedStep } from "./run-turn.js";
export {
  runTurnSegments, segmentBatch, toUserMessages, userMessageText, settleWithoutAnswer, failureNotice, toolScopeOf,
  BatchFailedError, batchFailureCause,
  type TurnEngine, type SegmentsInput, type SegmentsResult, type SettleInput, type AbortReason, type ApprovalTimeout, type ToolOutputStorage,
} from "./turn-engine.js";
export type { ContextManager, CompactionScope } from "./context-manager.js";
export { parseCommand, type ParsedCommand } from "./commands/parse.js";
export { HELP_TEXT } from "./commands/run-command.js";
export { joinPasteParts, pasteWaitMs, PASTE_WAIT_MS } from "./paste-parts.js";
