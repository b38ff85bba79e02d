export { runTurn, capToolOutput, MAX_OVERFLOW_RETRIES, type RunTurnInput, type RunTurnResult } from "./run-turn.js";
export {
  runTurnSegments, segmentBatch, toUserMessages, userMessageText, settleWithoutAnswer, failureNotice,
  BatchFailedError, batchFailureCause,
  type TurnEngine, type SegmentsInput, type SegmentsResult, type SettleInput, type AbortReason,
} from "./turn-engine.js";
export type { ContextManager, CompactionScope } from "./context-manager.js";
export { ToolRegistry, type Tool, type ToolContext, type TranscriptReader } from "./tools/registry.js";
export { currentTimeTool } from "./tools/current-time.js";
export { parseCommand, type ParsedCommand } from "./commands/parse.js";
export { HELP_TEXT } from "./commands/run-command.js";
