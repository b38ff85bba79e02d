/**
 * Requests for chat templates that insist on alternating roles (Mistral, Llama-2, Gemma behind
 * vLLM: "After the optional system message, conversation roles must alternate
 * user/assistant/user/assistant/..."). The engine legitimately sends consecutive user messages —
 * the summary next to a kept user message, the memory flush's instruction, a message after a
 * turn that failed without a reply — so with `LLM_ALTERNATE_ROLES` the request (never the stored
 * context) is reshaped here, just before it is sent:
 *
 * - leading system messages stay first;
 * - tool results and assistant messages carrying tool calls are not counted (those templates
 *   render them apart);
 * - two counted messages of the same role that are neighbours are merged into one (text joined
 *   by a blank line, parts concatenated), so nothing is lost and the order holds;
 * - a same-role pair with tool turns between them cannot be merged without moving a message
 *   across the calls, so a one-line message of the other role goes between;
 * - the conversation starts with a user message (a one-line one is put first if needed).
 *
 * Deterministic: the same context always gives the same request, so a provider's prefix cache
 * still holds for everything before the newest change.
 */
import type { WireMessage } from "../core/llm.js";

type Content = WireMessage["content"];
type Part = Exclude<Content, string | null | undefined> extends ReadonlyArray<infer P> ? P : never;

const FILLER = { user: "(continue)", assistant: "(noted)" } as const;

const counted = (message: WireMessage): boolean =>
  message.role === "user" || (message.role === "assistant" && !((message as { tool_calls?: unknown[] }).tool_calls?.length));

function asParts(content: Content): Part[] {
  if (content === null || content === undefined) return [];
  return typeof content === "string" ? [{ type: "text", text: content } as Part] : [...(content as Part[])];
}

function joined(a: Content, b: Content): Content {
  if ((typeof a === "string" || a == null) && (typeof b === "string" || b == null)) {
    return [a ?? "", b ?? ""].filter((text) => text !== "").join("\n\n");
  }
  return [...asParts(a), { type: "text", text: "\n\n" } as Part, ...asParts(b)] as Content;
}

export function alternateRoles(messages: readonly WireMessage[]): WireMessage[] {
  const out: WireMessage[] = [];
  let index = 0;
  while (index < messages.length && messages[index]!.role === "system") out.push(messages[index++]!);
  /** Index in `out` of the last counted message, and whether it is the very last message there. */
  let lastCounted = -1;
  for (; index < messages.length; index++) {
    const message = messages[index]!;
    if (!counted(message)) {
      if (lastCounted === -1 && message.role === "assistant") {
        out.push({ role: "user", content: FILLER.user } as WireMessage);
        lastCounted = out.length - 1;
      }
      out.push(message);
      continue;
    }
    const previous = lastCounted === -1 ? undefined : out[lastCounted]!;
    if (previous === undefined && message.role !== "user") {
      out.push({ role: "user", content: FILLER.user } as WireMessage);
    } else if (previous && previous.role === message.role) {
      if (lastCounted === out.length - 1) {
        out[lastCounted] = { ...previous, content: joined(previous.content, message.content) } as WireMessage;
        continue;
      }
      out.push({ role: message.role === "user" ? "assistant" : "user", content: FILLER[message.role === "user" ? "assistant" : "user"] } as WireMessage);
    }
    out.push(message);
    lastCounted = out.length - 1;
  }
  return out;
}
