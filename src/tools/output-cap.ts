/**
 * Tool output caps (issue #13 item 4, #10 item 6): one rule for every tool, MCP or built-in.
 * An output over its cap enters the conversation as a preview plus a recall reference; the
 * full output is stored once, outside the transcript list, and `recall` pages through it. The
 * transcript and the live context keep only the capped form, so a 10 MB result never bloats
 * either (nor every later commit of the state).
 */
import type { ToolMessage } from "../core/messages.js";

/** Characters per token when a window in tokens becomes a cap in characters (prose ~4; code and JSON fewer, so this errs large). */
const CHARS_PER_TOKEN = 4;
/** Share of the context window one tool result may fill. */
const WINDOW_SHARE = 0.1;
/** No window makes the cap smaller than this: below it a preview says too little to be worth a step. */
const MIN_CAP_CHARS = 1_000;

/**
 * The cap of one tool result: the tool's own cap (else TOOL_OUTPUT_MAX_CHARS), but never more
 * than a tenth of the context window (at ~4 characters a token): 50,000 characters for a 128K
 * window, 3,276 for an 8K one, at least 1,000.
 */
export function outputCapChars(options: { configured: number; contextWindow: number; perTool?: number | undefined }): number {
  const byWindow = Math.max(MIN_CAP_CHARS, Math.floor(options.contextWindow * WINDOW_SHARE * CHARS_PER_TOKEN));
  return Math.min(options.perTool ?? options.configured, byWindow);
}

/** Where capped originals go: stored once, under the tool message's id. */
export interface ToolOutputWriter {
  save(id: string, text: string): Promise<void>;
}

/**
 * The tool message the conversation keeps. Over the cap: the head of the output and a note
 * that names the id and offset `recall` continues from; the original is saved first, so the
 * reference never points at nothing.
 */
export async function capToolResult(message: ToolMessage, maxChars: number, writer: ToolOutputWriter): Promise<ToolMessage> {
  const total = message.content.length;
  if (total <= maxChars) return message;
  await writer.save(message.id, message.content);
  const note = (shown: number) =>
    `\n[output cut: the first ${shown} of ${total} characters are shown. The full output is kept: recall with id "${message.id}" and offset ${shown} reads on]`;
  // The note's length depends on the digits of `shown`; the longest case bounds it.
  const shown = Math.max(0, maxChars - note(total).length);
  return {
    ...message, content: message.content.slice(0, shown) + note(shown), kind: "truncated", originalId: message.id,
    cut: { originalChars: total, headChars: shown, tailChars: 0 },
  };
}
