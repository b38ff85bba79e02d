/**
 * Runs one tool call the model made and turns whatever happens into a result the model can
 * read: unknown tools, malformed arguments and thrown errors are results, not failed turns
 * (only an abort of the turn itself propagates).
 */
import { wellFormed } from "../core/text.js";
import type { ToolCall, ToolMessage } from "../core/messages.js";
import type { ToolOutput } from "../core/tools.js";
import { AbortedError, errorMessage } from "../errors.js";
import { capToolResult, type ToolOutputWriter } from "./output-cap.js";
import type { ToolContext, ToolSet } from "./registry.js";

export async function runToolCall(tools: ToolSet, call: ToolCall, context: ToolContext): Promise<ToolOutput> {
  const name = call.function.name;
  const tool = tools.get(name);
  if (!tool) return { text: `Error: there is no tool named "${name}".`, isError: true };
  let args: Record<string, unknown>;
  try {
    args = parseArguments(call.function.arguments);
  } catch (error) {
    return { text: `Error: invalid arguments for ${name}: ${errorMessage(error)}`, isError: true };
  }
  try {
    const output = await tool.run(args, context);
    return typeof output === "string" ? { text: output } : output;
  } catch (error) {
    if (context.signal.aborted) throw new AbortedError("turn aborted", { cause: error });
    return { text: `Error: ${name} failed: ${errorMessage(error)}`, isError: true };
  }
}

export function parseArguments(raw: string): Record<string, unknown> {
  const parsed: unknown = raw.trim() === "" ? {} : JSON.parse(raw);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("arguments must be a JSON object");
  return parsed as Record<string, unknown>;
}

export interface ToolResultOptions {
  id: string;
  at: number;
  /** The cap for this call's tool (see outputCapChars). */
  maxChars: number;
  writer: ToolOutputWriter;
}

/** The tool message the conversation keeps for `output`: capped, its original stored when cut. */
export function toolResultMessage(call: ToolCall, output: ToolOutput, options: ToolResultOptions): Promise<ToolMessage> {
  const message: ToolMessage = { id: options.id, at: options.at, role: "tool", tool_call_id: call.id, content: wellFormed(output.text) };
  return capToolResult(message, options.maxChars, options.writer);
}
