/**
 * The tools the agent can use: the registry, the built-ins (recall, current time), MCP servers
 * behind per-chat access, output caps, tool execution and approval. The agent imports from here.
 */
export { ToolRegistry, callNeedsApproval, withoutApprovals, type Tool, type ToolContext, type ToolSet, type DelegateRequest, type TranscriptReader, type ToolOutputReader } from "./registry.js";
export { currentTimeTool } from "./builtin/current-time.js";
export { createFetchUrlTool, type PageToText } from "./builtin/fetch-url.js";
export { createPageFetcher, FetchRefusedError, type PageFetcher, type PageFetchLimits, type FetchedPage, type Resolve } from "./web/page-fetch.js";
export { publicAddressPolicy, type AddressPolicy } from "./web/address-policy.js";
export { delegateTool, DELEGATE_TOOL } from "./builtin/delegate.js";
export { createRecallTool, RECALL_DEFAULT_CHARS, RECALL_MAX_CHARS } from "./builtin/recall.js";
export { outputCapChars, capToolResult, type ToolOutputWriter } from "./output-cap.js";
export { runToolCall, toolResultMessage, parseArguments } from "./execute.js";
export { allowedServers, allowedOptionalTools, platformPrefix, type ToolScope } from "./access.js";
export { ToolCatalog, describeTools, type TurnTools, type ToolCatalogOptions } from "./catalog.js";
export { McpManager } from "./mcp/index.js";
export {
  approvalActions, parseApprovalAction, approvalRequestText, notRunResult, outcomeText, mayAnswer, notYoursText, ALREADY_ANSWERED_TEXT, summariseArguments,
  type ApprovalOutcome,
} from "./approval.js";
