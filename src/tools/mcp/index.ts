/** MCP support: the only folder that imports @modelcontextprotocol/sdk. */
export { McpManager, needsApproval, type McpManagerOptions, type ServerTools } from "./manager.js";
export { McpConnection } from "./connection.js";
export { toToolOutput } from "./convert.js";
export { exposedToolName, matchesPattern } from "./naming.js";
export { mcpDoctorCheck } from "./doctor-check.js";
