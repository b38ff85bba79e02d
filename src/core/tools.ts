/**
 * Tool shapes more than one layer sees: what a tool returns, and the approval a turn waits
 * for (stored in the session state, read by the agent, shown by the adapters).
 */
import type { MessageOrigin, ReplyTarget } from "./channel.js";
import type { AssistantMessage, ToolMessage } from "./messages.js";

/** An image a tool returned (MCP image content): base64 data and its MIME type. */
export interface ToolImage {
  mimeType: string;
  data: string;
}

/** What a tool returns when plain text is not enough. */
export interface ToolOutput {
  text: string;
  /** The tool reported a failure the model should read (MCP `isError`). */
  isError?: boolean;
  images?: ToolImage[];
}

/** One tool call of a paused step that waits for a person's answer. */
export interface WaitingCall {
  callId: string;
  /** The name the model called (`server__tool`). */
  name: string;
  /** The MCP server and its own tool name, for the request text. */
  server?: string;
  tool?: string;
  arguments: string;
}

/** Whom a turn's tools were chosen for (access.tools looks at the chat and the speakers). */
export interface ToolAccessScope {
  chatId: string;
  /** The channel of a Discord thread. */
  parentChatId?: string;
  /** The people whose messages the turn answered. */
  userIds: string[];
}

/**
 * A tool step paused for approval. Kept in the session state, outside the live context, so
 * no LLM request ever carries the assistant's tool call without its result (Anthropic refuses
 * that); on resolution the step joins the context and the transcript whole.
 */
export interface PendingApproval {
  /** Random; the buttons and the timeout job name it. */
  id: string;
  /** Who may answer besides the admins: the person whose message led to the call. */
  requestedBy: { platform: ReplyTarget["platform"]; userId: string; userName: string };
  requestedAt: number;
  expiresAt: number;
  target: ReplyTarget;
  /** The step: the assistant message with every call, and the results of calls already run. */
  assistant: AssistantMessage;
  results: ToolMessage[];
  waiting: WaitingCall[];
  /** The tool loop's step count so far; the resumed loop goes on from there. */
  step: number;
  /** Platform message ids the pending turn answers (the resumed answer replies to them). */
  inReplyTo: string[];
  /** The chat the tools were chosen for (access.tools), so the resumed loop offers the same. */
  scope: ToolAccessScope;
  /** The message the paused turn answers (who asks, in which chat), for tools the resumed loop runs. */
  origin?: MessageOrigin;
}
