/**
 * The units compaction moves messages in. A tool call and its results must never be separated
 * (the API rejects a result without its call, and a call without its results), so boundaries
 * are only ever placed between groups.
 */
import type { ChatMessage, ToolCall } from "../core/messages.js";

/** Messages `[start, end)`: an assistant message with tool calls and the tool results right after it, or one message. */
export interface MessageGroup {
  start: number;
  end: number;
}

export const hasToolCalls = (message: ChatMessage): boolean =>
  message.role === "assistant" && message.tool_calls !== undefined && message.tool_calls.length > 0;

export function groupMessages(messages: readonly ChatMessage[]): MessageGroup[] {
  const groups: MessageGroup[] = [];
  let start = 0;
  while (start < messages.length) {
    let end = start + 1;
    if (hasToolCalls(messages[start]!)) {
      while (end < messages.length && messages[end]!.role === "tool") end += 1;
    }
    groups.push({ start, end });
    start = end;
  }
  return groups;
}

/**
 * Turns for dropping: each starts at a user message and runs to the next one, so tool groups
 * stay inside. Messages before the first user message form a turn of their own.
 */
export function groupTurns(messages: readonly ChatMessage[], from: number, to: number): MessageGroup[] {
  const turns: MessageGroup[] = [];
  let start = from;
  for (let index = from + 1; index <= to; index += 1) {
    if (index === to || messages[index]!.role === "user") {
      if (index > start) turns.push({ start, end: index });
      start = index;
    }
  }
  return turns;
}

/** Every tool call in the messages by its id, to name the tool behind a result. */
export function toolCallsById(messages: readonly ChatMessage[]): Map<string, ToolCall> {
  const calls = new Map<string, ToolCall>();
  for (const message of messages) {
    if (message.role === "assistant") for (const call of message.tool_calls ?? []) calls.set(call.id, call);
  }
  return calls;
}

export const isSummary = (message: ChatMessage): boolean => message.kind === "summary";

export function lastIndexWhere(messages: readonly ChatMessage[], predicate: (message: ChatMessage) => boolean): number {
  for (let index = messages.length - 1; index >= 0; index -= 1) if (predicate(messages[index]!)) return index;
  return -1;
}
