/**
 * The message shapes the whole product stores and reasons about. They follow the OpenAI chat
 * completions API (any OpenAI-compatible endpoint accepts them once `toApiMessages` strips the
 * metadata), plus a little bookkeeping every message carries for its whole life.
 */

import type { Attachment } from "./attachments.js";

export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
  /**
   * What the provider attached to the call and wants back with it while the call is in the
   * context (Gemini 3: `{ google: { thought_signature } }`); opaque, sent only to the provider
   * family that wrote it (src/llm/providers).
   */
  extra_content?: Record<string, unknown>;
}

/** Bookkeeping stored with a message; never sent to the LLM. */
export interface MessageMeta {
  /** Unique within the session, stable forever: the transcript and `recall` use it. */
  id: string;
  /** Cached token count under one encoding, so a message is never counted twice. */
  tokens?: { encoding: string; count: number };
  /** Unix ms when the message entered the session. */
  at?: number;
  /**
   * What the context engine made of it: `summary` is the compaction summary message,
   * `pruned` a tool result replaced by a placeholder (its original stays in the transcript
   * under `originalId`), `truncated` a tail tool result cut to fit.
   */
  kind?: "summary" | "pruned" | "truncated";
  /** For `pruned` / `truncated`: the transcript id of the untouched original. */
  originalId?: string;
  /**
   * For `truncated`: the untouched original's length in UTF-16 units, and how much of the content
   * before and after the cut note is shown text (the note, and a tool output cap's note at the
   * end, are not). A second cut (a compaction, an overflow) starts from the shown text, never
   * from a piece of the first note, and its note still gives the original's size.
   */
  cut?: { originalChars: number; headChars: number; tailChars: number };
  /**
   * For `pruned`: the original, clipped as the summarizer reads it, so a result pruned while it
   * was kept still reaches the summary when it is folded later. Never sent to the main model.
   */
  foldText?: string;
}

export type SystemMessage = MessageMeta & { role: "system"; content: string };
/** `content` holds the text and a placeholder per attachment; `attachments` the references (images are re-fetched per request). */
export type UserMessage = MessageMeta & { role: "user"; content: string; attachments?: Attachment[] };
export type AssistantMessage = MessageMeta & {
  role: "assistant";
  content: string | null;
  tool_calls?: ToolCall[];
  /**
   * The model's reasoning as the provider returned it (DeepSeek's thinking mode), opaque. Kept
   * while the message is live (DeepSeek refuses a tool loop's next step without it), counted in
   * the context's tokens, and gone with the message when compaction folds it.
   */
  reasoning_content?: string;
};
export type ToolMessage = MessageMeta & { role: "tool"; tool_call_id: string; content: string };

/**
 * What an assistant message says when the model answered nothing: strict providers (Anthropic)
 * refuse an empty assistant message anywhere but last, so none is ever sent or stored empty.
 */
export const EMPTY_ANSWER = "(no answer)";

export type ChatMessage = SystemMessage | UserMessage | AssistantMessage | ToolMessage;

/** A message as the chat completions API takes it. */
export type ApiMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: ToolCall[]; reasoning_content?: string }
  | { role: "tool"; tool_call_id: string; content: string };

export function toApiMessage(message: ChatMessage): ApiMessage {
  switch (message.role) {
    case "system":
    case "user":
      return { role: message.role, content: message.content };
    case "assistant": {
      const reasoning = message.reasoning_content ? { reasoning_content: message.reasoning_content } : {};
      return message.tool_calls && message.tool_calls.length > 0
        ? { role: "assistant", content: message.content, tool_calls: message.tool_calls, ...reasoning }
        : { role: "assistant", content: message.content ?? "", ...reasoning };
    }
    case "tool":
      return { role: "tool", tool_call_id: message.tool_call_id, content: message.content };
  }
}

export const toApiMessages = (messages: readonly ChatMessage[]): ApiMessage[] => messages.map(toApiMessage);

/** A tool as offered to the model (OpenAI function-tool shape). */
export interface ToolDefinition {
  type: "function";
  function: { name: string; description: string; parameters: Record<string, unknown> };
}
