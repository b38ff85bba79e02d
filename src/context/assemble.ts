/**
 * Phase 4: head + summary message + kept tail, then the tool-pair sanitizer.
 *
 * The summary is framed as reference material with an explicit end marker: without it, models
 * read "In Progress" and "Pending User Requests" as fresh orders and resume stale tasks instead
 * of answering the latest message (the "replies to stale tasks" bug of the systems SPEC §3
 * compares).
 */
import type { AssistantMessage, ChatMessage, SystemMessage, ToolMessage, UserMessage } from "../core/messages.js";
import { hasToolCalls } from "./message-groups.js";

/** Appended once to the system prompt, on the first compaction; never again, so the prefix stays cache-stable. */
export const COMPACTION_NOTE =
  "[Note: earlier turns of this conversation were compacted to save context; the original messages remain retrievable by id with the recall tool.]";

export const SUMMARY_HEADER =
  "[Summary of earlier turns — reference only] Earlier turns of this conversation were compacted into the summary below. It is background, not instructions: do not answer questions or resume tasks from it unless the latest user message asks for that. Original messages can be fetched by their [id] with the recall tool.";

export const SUMMARY_END_MARKER =
  "[End of summary — respond to the latest user message below, not to tasks from the summary.]";

export const STUB_TOOL_RESULT = "[no result: this tool call's result was not kept in the context]";

export function withCompactionNote(system: SystemMessage): SystemMessage {
  if (system.content.includes(COMPACTION_NOTE)) return system;
  const { tokens: _staleCount, ...rest } = system;
  return { ...rest, content: `${system.content}\n\n${COMPACTION_NOTE}` };
}

export const summaryMessageContent = (summary: string): string => `${SUMMARY_HEADER}\n\n${summary.trim()}\n\n${SUMMARY_END_MARKER}`;

/** The bare summary inside a summary message, for the next compaction's "previous summary". */
export function extractSummaryText(content: string): string {
  let text = content.trim();
  if (text.startsWith(SUMMARY_HEADER)) text = text.slice(SUMMARY_HEADER.length);
  if (text.endsWith(SUMMARY_END_MARKER)) text = text.slice(0, -SUMMARY_END_MARKER.length);
  return text.trim();
}

/**
 * "user", except between two user messages, where "assistant" alternates. Right after the
 * system prompt it must be "user" (Anthropic: "first message must use the user role"). Where
 * neither role can alternate (user before, assistant after, or the reverse) it stays "user":
 * consecutive same-role messages are valid for the OpenAI API and Anthropic merges them, and
 * a summary in the assistant's voice gets repeated as the model's own words.
 */
export function chooseSummaryRole(before: ChatMessage | undefined, after: ChatMessage | undefined): "user" | "assistant" {
  return before?.role === "user" && (after === undefined || after.role === "user") ? "assistant" : "user";
}

/**
 * Every summary message in the role its neighbours allow (`chooseSummaryRole`). A summary kept
 * while the messages around it go (the `dropped` fallback removes the turns before it) may
 * otherwise end up an assistant message right after the system prompt, which Anthropic refuses.
 * Unchanged messages are returned as they are.
 */
export function fixSummaryRoles(messages: readonly ChatMessage[]): ChatMessage[] {
  const result = [...messages];
  result.forEach((message, index) => {
    if (message.kind !== "summary" || (message.role !== "user" && message.role !== "assistant")) return;
    const role = chooseSummaryRole(result[index - 1], result[index + 1]);
    if (role === message.role) return;
    const { id, content, kind, at, tokens } = message;
    const meta = { id, kind, ...(at !== undefined && { at }), ...(tokens !== undefined && { tokens }) };
    result[index] = role === "user" ? { role, content: content ?? "", ...meta } : { role, content: content ?? "", ...meta };
  });
  return result;
}

export interface AssembleInput {
  head: readonly ChatMessage[];
  summary?: { id: string; text: string; at?: number };
  kept: readonly ChatMessage[];
  /** The first compaction adds COMPACTION_NOTE to the system prompt. */
  addNote: boolean;
}

export function assemble(input: AssembleInput): ChatMessage[] {
  const head = input.head.map((message, index) =>
    index === 0 && message.role === "system" && input.addNote ? withCompactionNote(message) : message,
  );
  if (input.summary === undefined) return [...head, ...input.kept];
  const role = chooseSummaryRole(head.at(-1), input.kept[0]);
  const content = summaryMessageContent(input.summary.text);
  const meta = { id: input.summary.id, kind: "summary" as const, ...(input.summary.at !== undefined && { at: input.summary.at }) };
  const summaryMessage: UserMessage | AssistantMessage = role === "user" ? { role, content, ...meta } : { role, content, ...meta };
  return [...head, summaryMessage, ...input.kept];
}

export interface SanitizeResult {
  messages: ChatMessage[];
  /** Tool results dropped because no call of theirs is left (or they duplicate an answered one). */
  droppedResults: number;
  /** Results found away from their call (before it, or after other messages) and put back after it. */
  movedResults: number;
  /** Stub results added for calls whose result is gone. */
  stubbedCalls: number;
  /** The stubs, new messages with ids from `newId`: the caller stores them in the transcript. */
  stubs: ToolMessage[];
}

/**
 * Makes every assistant tool call have exactly one result, right after it (OpenAI: "An assistant
 * message with 'tool_calls' must be followed by tool messages responding to each
 * 'tool_call_id'"; Anthropic: "`tool_use` ids were found without `tool_result` blocks
 * immediately after"). Results right after their call keep their order (the tail stays
 * byte-identical); a result found elsewhere for a call (out of order) is moved back after them;
 * a call with no result anywhere gets a stub, last. Results answering no call, and second
 * results for the same call, are dropped. A context that is already valid comes back as the
 * same messages.
 */
export function sanitizeToolPairs(messages: readonly ChatMessage[], newId: () => string): SanitizeResult {
  // Calls of each assistant message, and where every result is.
  const callOwner = new Map<string, number>();
  messages.forEach((message, index) => {
    if (message.role === "assistant") for (const call of message.tool_calls ?? []) if (!callOwner.has(call.id)) callOwner.set(call.id, index);
  });
  const resultsById = new Map<string, number[]>();
  messages.forEach((message, index) => {
    if (message.role === "tool") resultsById.set(message.tool_call_id, [...(resultsById.get(message.tool_call_id) ?? []), index]);
  });

  const output: ChatMessage[] = [];
  const stubs: ToolMessage[] = [];
  const used = new Set<number>();
  let movedResults = 0;
  let index = 0;
  while (index < messages.length) {
    const position = index;
    const message = messages[index]!;
    index += 1;
    if (message.role === "tool") continue; // placed with its call, or dropped (counted below)
    output.push(message);
    if (!hasToolCalls(message) || message.role !== "assistant") continue;

    const answered = new Set<string>();
    const ownCall = (result: ToolMessage) => callOwner.get(result.tool_call_id) === position;
    while (index < messages.length && messages[index]!.role === "tool") {
      const result = messages[index] as ToolMessage;
      if (ownCall(result) && !answered.has(result.tool_call_id)) {
        answered.add(result.tool_call_id);
        used.add(index);
        output.push(result);
      }
      index += 1;
    }
    for (const call of message.tool_calls!) {
      if (answered.has(call.id) || callOwner.get(call.id) !== position) continue;
      const elsewhere = (resultsById.get(call.id) ?? []).find((candidate) => !used.has(candidate));
      if (elsewhere !== undefined) {
        used.add(elsewhere);
        output.push(messages[elsewhere]!);
        movedResults += 1;
      } else {
        const stub: ToolMessage = { role: "tool", tool_call_id: call.id, content: STUB_TOOL_RESULT, id: newId() };
        output.push(stub);
        stubs.push(stub);
      }
      answered.add(call.id);
    }
  }
  const toolMessages = messages.filter((message) => message.role === "tool").length;
  return { messages: output, droppedResults: toolMessages - used.size, movedResults, stubbedCalls: stubs.length, stubs };
}
