/**
 * A request in one provider's dialect, from its profile (profiles.ts), and the answer's provider
 * fields read back. Applied to every request the client sends (main model, summarizer, memory
 * flush), so a history stored before a fix, or written by another provider's model, is sent as
 * this provider accepts it:
 *
 * - optional fields only when the profile accepts them (`prompt_cache_key`, `stream_options`);
 *   the output cap under the profile's name;
 * - opaque step fields (`reasoning_content`, a tool call's `extra_content`) sent back to the
 *   family that wants them and stripped for everyone else; a Gemini tool-call step written
 *   without a signature (another model's, or before the switch) carries Google's documented
 *   placeholder signature, so Gemini 3 validates the step instead of refusing it;
 * - no empty assistant message: one without tool calls and without text says EMPTY_ANSWER, one
 *   with tool calls has `null` content (Anthropic refuses empty text blocks);
 * - alternating roles when the profile or the operator (LLM_ALTERNATE_ROLES) asks for them.
 */
import type { ChatRequest, TokenUsage, WireMessage } from "../../core/llm.js";
import { EMPTY_ANSWER, type ToolCall } from "../../core/messages.js";
import { alternateRoles } from "../alternate-roles.js";
import { usesMaxCompletionTokens } from "../models.js";
import type { ProviderProfile } from "./profiles.js";

/**
 * Google's placeholder for a function call that has no signature of its own ("If you are
 * transferring a conversation trace from another model … set the thought_signature to
 * `skip_thought_signature_validator`", Gemini API docs, thought signatures).
 */
export const SKIP_SIGNATURE = "skip_thought_signature_validator";

export interface ShapeOptions {
  model: string;
  /** `max_tokens` of a request that sets none. */
  maxOutputTokens?: number;
  /** LLM_ALTERNATE_ROLES, on top of the profile's own rule. */
  alternateRoles?: boolean;
  stream: boolean;
}

/** The request body for `POST /chat/completions`. */
export function shapeRequest(profile: ProviderProfile, request: ChatRequest, options: ShapeOptions): Record<string, unknown> {
  const maxTokens = request.maxTokens ?? options.maxOutputTokens;
  const tools = request.tools ?? [];
  const messages = shapeMessages(profile, request.messages);
  const accepts = profile.accepts;
  return {
    model: options.model,
    messages: options.alternateRoles || profile.alternateRoles ? alternateRoles(messages) : messages,
    ...(tools.length > 0 ? { tools: tools.map((tool) => ({ type: "function" as const, function: tool.function })), tool_choice: request.toolChoice ?? "auto" } : {}),
    ...(maxTokens === undefined ? {} : { [maxTokensField(profile, options.model)]: maxTokens }),
    ...(request.promptCacheKey !== undefined && accepts.has("prompt_cache_key") ? { prompt_cache_key: request.promptCacheKey } : {}),
    ...(options.stream ? { stream: true, ...(accepts.has("stream_options") ? { stream_options: { include_usage: true } } : {}) } : {}),
  };
}

function maxTokensField(profile: ProviderProfile, model: string): "max_tokens" | "max_completion_tokens" {
  if (profile.maxTokensField !== "openai-by-model") return profile.maxTokensField;
  return usesMaxCompletionTokens(model) ? "max_completion_tokens" : "max_tokens";
}

type AssistantWire = Extract<WireMessage, { role: "assistant" }> & { reasoning_content?: string; tool_calls?: ToolCall[] };

/** Every message as the provider accepts it; messages that need no change are passed as they are. */
export function shapeMessages(profile: ProviderProfile, messages: readonly WireMessage[]): WireMessage[] {
  return messages.map((message) => (message.role === "assistant" ? shapeAssistant(profile, message as AssistantWire) : message));
}

const isEmpty = (content: WireMessage["content"]): boolean =>
  content === null || content === undefined || (typeof content === "string" ? content.trim() === "" : content.every((part) => part.type === "text" && part.text.trim() === ""));

function shapeAssistant(profile: ProviderProfile, message: AssistantWire): WireMessage {
  const { reasoning_content: reasoning, tool_calls: calls, ...rest } = message;
  const hasCalls = calls !== undefined && calls.length > 0;
  const content = isEmpty(rest.content) ? (hasCalls ? null : EMPTY_ANSWER) : rest.content;
  const shaped: AssistantWire = { ...rest, content } as AssistantWire;
  if (hasCalls) shaped.tool_calls = calls.map((call, index) => shapeCall(profile, call, index));
  if (reasoning && profile.sendsBack.reasoningContent) shaped.reasoning_content = reasoning;
  return shaped as WireMessage;
}

function shapeCall(profile: ProviderProfile, call: ToolCall, index: number): ToolCall {
  const { extra_content: extra, ...plain } = call;
  if (!profile.sendsBack.thoughtSignatures) return plain;
  if (extra !== undefined) return call;
  // Gemini wants a signature on the first call of each step (parallel calls after it carry none).
  return index === 0 ? { ...plain, extra_content: { google: { thought_signature: SKIP_SIGNATURE } } } : plain;
}

/** The wire usage object; only what we read. */
export interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
  /** DeepSeek's name for cached prompt tokens. */
  prompt_cache_hit_tokens?: number;
}

/** Usage in one unit for every provider: output includes reasoning, cached tokens wherever the provider reports them. */
export function readUsage(profile: ProviderProfile, usage: WireUsage | null | undefined): TokenUsage | undefined {
  if (!usage) return undefined;
  const deepSeekHits = usage.prompt_cache_hit_tokens;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  const apart = profile.reasoningTokens === "apart" && typeof reasoning === "number" ? reasoning : 0;
  return {
    promptTokens: usage.prompt_tokens ?? 0,
    completionTokens: (usage.completion_tokens ?? 0) + apart,
    cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? (typeof deepSeekHits === "number" ? deepSeekHits : 0),
  };
}
