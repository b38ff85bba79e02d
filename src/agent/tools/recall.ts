import type { ChatMessage } from "../../core/messages.js";
import type { Tool } from "./registry.js";

/** Most characters one recall returns; longer originals are paged with `offset`. */
export const RECALL_MAX_CHARS = 8_000;
const SEARCH_LIMIT = 8;
const SNIPPET_CHARS = 240;

/**
 * `recall`: the agent's way back to what compaction took out of the live context. Pruned tool
 * outputs and summarized messages stay in the session's transcript; placeholders name the id
 * to pass here. Reads only the current session's transcript.
 */
export function createRecallTool(): Tool {
  return {
    definition: {
      type: "function",
      function: {
        name: "recall",
        description:
          "Look up earlier parts of this conversation that were compacted away. Pass `id` (from a placeholder such as recall(\"m42\")) to get that message verbatim, or `query` to search the full transcript by words.",
        parameters: {
          type: "object",
          properties: {
            id: { type: "string", description: "Message id, e.g. m42" },
            query: { type: "string", description: "Words to search for in the transcript (newest messages first)" },
            before: { type: "integer", minimum: 0, description: "With query: search messages older than this position (given by an earlier search)" },
            offset: { type: "integer", minimum: 0, description: "For long messages: character offset to continue from" },
          },
          additionalProperties: false,
        },
      },
    },
    async run(args, context) {
      if (typeof args.id === "string" && args.id.trim() !== "") {
        const message = await context.transcript.get(args.id.trim());
        if (!message) return `No message with id ${args.id} in this conversation.`;
        const offset = typeof args.offset === "number" && args.offset > 0 ? Math.floor(args.offset) : 0;
        return page(message, offset);
      }
      if (typeof args.query === "string" && args.query.trim() !== "") {
        const before = typeof args.before === "number" && args.before >= 0 ? Math.floor(args.before) : undefined;
        const found = await context.transcript.search(args.query, SEARCH_LIMIT, before);
        // Each search reads a bounded page, newest first: say where the next, older one starts.
        const older = found.continueBefore === undefined ? "" : `\n[searched ${found.scanned} messages back; older ones: recall with the same query and before ${found.continueBefore}]`;
        if (found.messages.length === 0) return `Nothing in the transcript matches "${args.query}".${older}`;
        return found.messages.map((message) => `${message.id} (${message.role}): ${snippet(textOf(message), args.query as string)}`).join("\n") + older;
      }
      throw new Error("pass either id or query");
    },
  };
}

function textOf(message: ChatMessage): string {
  if (message.role === "assistant" && message.tool_calls?.length) {
    const calls = message.tool_calls.map((call) => `${call.function.name}(${call.function.arguments})`).join(", ");
    return `${message.content ?? ""} [tool calls: ${calls}]`.trim();
  }
  return message.content ?? "";
}

function page(message: ChatMessage, offset: number): string {
  const text = textOf(message);
  const chunk = text.slice(offset, offset + RECALL_MAX_CHARS);
  const end = offset + chunk.length;
  const more = end < text.length ? `\n[${text.length - end} more characters: recall with id "${message.id}" and offset ${end}]` : "";
  return `${message.id} (${message.role}${offset > 0 ? `, from character ${offset}` : ""}):\n${chunk}${more}`;
}

function snippet(text: string, query: string): string {
  const first = query.toLowerCase().split(/\s+/).find((word) => word.length > 0) ?? "";
  const at = Math.max(0, text.toLowerCase().indexOf(first));
  const start = Math.max(0, at - SNIPPET_CHARS / 2);
  const body = text.slice(start, start + SNIPPET_CHARS).replace(/\s+/g, " ");
  return `${start > 0 ? "…" : ""}${body}${start + SNIPPET_CHARS < text.length ? "…" : ""}`;
}
