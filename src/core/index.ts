/**
 * The bottom layer: types shared by every other folder (messages, replies, targets, the LLM
 * request shape). Imports nothing of ours.
 */
export * from "./channel.js";
export * from "./llm.js";
export * from "./messages.js";
export * from "./tools.js";
export * from "./memory.js";
export * from "./attachments.js";
export * from "./commands.js";
export * from "./send-budget.js";
export * from "./queue-wait.js";
