import type { Attachment } from "../../core/attachments.js";
import type { ChatMessage } from "../../core/messages.js";
import type { Tool, ToolContext } from "../registry.js";

/** Characters one recall returns by default, and at most (`length` asks for fewer or more). */
export const RECALL_DEFAULT_CHARS = 8_000;
export const RECALL_MAX_CHARS = 20_000;
const SEARCH_LIMIT = 8;
const SNIPPET_CHARS = 240;

/**
 * `recall`: the agent's way back to what compaction or an output cap took out of the live
 * context. Pruned tool outputs and summarized messages stay in the session's transcript;
 * capped outputs are stored whole beside it. Placeholders name the id (and offset) to pass
 * here. Reads only the current session's data.
 */
export function createRecallTool(): Tool {
  return {
    definition: {
      type: "function",
      function: {
        name: "recall",
        description:
          "Look up earlier parts of this conversation that were compacted away or cut short. Pass `id` (from a placeholder such as recall(\"m42\")) to read that message or full tool output verbatim, page by page with `offset`; or `query` to search the full transcript by words.",
        parameters: {
          type: "object",
          properties: {
            id: { type: "string", description: "Message id, e.g. m42" },
            query: { type: "string", description: "Words to search for in the transcript (newest messages first)" },
            before: { type: "integer", minimum: 0, description: "With query: search messages older than this position (given by an earlier search)" },
            offset: { type: "integer", minimum: 0, description: "Character offset to read from (long outputs are paged)" },
            length: { type: "integer", minimum: 1, maximum: RECALL_MAX_CHARS, description: `Characters to read (default ${RECALL_DEFAULT_CHARS})` },
          },
          additionalProperties: false,
        },
      },
    },
    async run(args, context) {
      if (typeof args.id === "string" && args.id.trim() !== "") {
        const offset = typeof args.offset === "number" && args.offset > 0 ? Math.floor(args.offset) : 0;
        const length = typeof args.length === "number" && args.length > 0 ? Math.min(RECALL_MAX_CHARS, Math.floor(args.length)) : RECALL_DEFAULT_CHARS;
        return readById(args.id.trim(), offset, length, context);
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

/** A capped tool output is read from its stored original; anything else from the transcript. */
async function readById(id: string, offset: number, length: number, context: ToolContext): Promise<string> {
  // One unit more than asked: a page of one character that is an emoji's first half ends after it.
  const stored = await context.outputs.read(id, offset, length + 1);
  if (stored) return page(id, "tool output", stored.text, offset, stored.total, length);
  const message = await context.transcript.get(id);
  if (!message) return `No message or stored output with id ${id} in this conversation (the oldest stored originals are dropped once the chat holds its quota).`;
  const text = textOf(message);
  return page(id, message.role, text.slice(offset, offset + length + 1), offset, text.length, length);
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/**
 * The first `length` units of `read` (which holds one more when the text has it), the bounds
 * moved off the middle of a surrogate pair: pages are cut in UTF-16 units, and half an emoji is
 * invalid on the wire. A high half at the end is left to the next page (the offset the page names
 * starts at it) — or, alone on the page, kept with its low half; a low half at the start, where
 * no page ends, is dropped. A stored text with a lone half of its own reads as U+FFFD.
 */
function wholeCharacters(read: string, offset: number, total: number, length: number): { chunk: string; offset: number } {
  const from = offset > 0 && isLowSurrogate(read.charCodeAt(0)) ? 1 : 0;
  let to = Math.min(read.length, length);
  if (to > from && offset + to < total && isHighSurrogate(read.charCodeAt(to - 1))) to = to - 1 > from ? to - 1 : to + 1;
  return { chunk: read.slice(from, Math.min(to, read.length)).toWellFormed(), offset: offset + from };
}

function textOf(message: ChatMessage): string {
  if (message.role === "user" && message.attachments?.length) {
    // The references behind the placeholders, and what the model said a picture showed.
    const notes = message.attachments.map((attachment) => {
      const facts = [`${attachment.label} ${attachment.name}`, attachment.mimeType, attachment.size === undefined ? undefined : `${attachment.size} bytes`, attachment.sha256 ? `sha256 ${attachment.sha256}` : undefined, `source ${sourceOf(attachment)}`];
      const lines = [`[attachment: ${facts.filter(Boolean).join(", ")}]`];
      if (attachment.description) lines.push(`[described when shown: ${attachment.description}]`);
      if (attachment.outputId) lines.push(`[its whole text: recall with id "${attachment.outputId}"]`);
      return lines.join("\n");
    });
    return `${message.content}\n${notes.join("\n")}`;
  }
  if (message.role === "assistant" && message.tool_calls?.length) {
    const calls = message.tool_calls.map((call) => `${call.function.name}(${call.function.arguments})`).join(", ");
    return `${message.content ?? ""} [tool calls: ${calls}]`.trim();
  }
  return message.content ?? "";
}

function sourceOf(attachment: Attachment): string {
  const source = attachment.source;
  // Only ids: a Telegram file URL would carry the bot token.
  if (source.platform === "telegram") return `telegram file ${source.fileId}`;
  if (source.platform === "discord") return `discord message ${source.messageId} attachment ${source.attachmentId}`;
  return source.url;
}

function page(id: string, what: string, read: string, from: number, total: number, length: number): string {
  const { chunk, offset } = wholeCharacters(read, from, total, length);
  const end = offset + chunk.length;
  const range = offset > 0 || end < total ? `, characters ${offset}–${end} of ${total}` : "";
  const more = end < total ? `\n[${total - end} more characters: recall with id "${id}" and offset ${end}]` : "";
  return `${id} (${what}${range}):\n${chunk}${more}`;
}

function snippet(text: string, query: string): string {
  const first = query.toLowerCase().split(/\s+/).find((word) => word.length > 0) ?? "";
  const at = Math.max(0, text.toLowerCase().indexOf(first));
  const start = Math.max(0, at - SNIPPET_CHARS / 2);
  const body = wholeCharacters(text.slice(start, start + SNIPPET_CHARS + 1), start, text.length, SNIPPET_CHARS).chunk.replace(/\s+/g, " ");
  return `${start > 0 ? "…" : ""}${body}${start + SNIPPET_CHARS < text.length ? "…" : ""}`;
}
