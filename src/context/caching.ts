/**
 * Prompt caching. Providers cache a request's longest previously seen prefix, so the prefix
 * must stay byte-stable between compactions: this function is deterministic, adds nothing
 * per turn, and is applied to the request only (the stored messages stay plain strings).
 *
 * - Anthropic-family models behind an OpenAI-compatible API (OpenRouter passes `cache_control`
 *   through): `system_and_3`, four breakpoints: the system prompt and the last 3 non-system
 *   messages that can carry one.
 * - Everyone else (OpenAI caches automatically): `prompt_cache_key` = the session id, which
 *   routes a session's requests to the same cache.
 */
import type { TextPart, WireMessage } from "../core/llm.js";
import type { ApiMessage } from "../core/messages.js";

export interface PromptCachingOptions {
  model: string;
  sessionId: string;
}

export interface CachedRequest {
  messages: WireMessage[];
  /** Sent as `prompt_cache_key`; absent for Anthropic-family models, which ignore it. */
  promptCacheKey?: string;
}

/** Breakpoints on non-system messages; with the system prompt's, Anthropic's maximum of 4. */
export const MESSAGE_BREAKPOINTS = 3;

export const isAnthropicFamily = (model: string): boolean => {
  const name = model.toLowerCase();
  return name.includes("claude") || name.startsWith("anthropic/");
};

/**
 * A breakpoint sits on a text part, so a message with empty content (an assistant message that
 * only calls tools) cannot carry one: Anthropic rejects empty text blocks, and OpenRouter ignores
 * a marker on the message itself. Such a message is skipped and the breakpoint goes to the
 * nearest earlier message that can carry it, so the full three are always used when possible.
 */
const canCarryBreakpoint = (message: ApiMessage): boolean => typeof message.content === "string" && message.content !== "";

function withBreakpoint(message: ApiMessage): WireMessage {
  const part: TextPart = { type: "text", text: message.content ?? "", cache_control: { type: "ephemeral" } };
  return { ...message, content: [part] };
}

export function applyPromptCaching(messages: readonly ApiMessage[], options: PromptCachingOptions): CachedRequest {
  if (!isAnthropicFamily(options.model)) return { messages: [...messages], promptCacheKey: options.sessionId };

  const marked = new Set<number>();
  const first = messages[0];
  if (first !== undefined && first.role === "system" && canCarryBreakpoint(first)) marked.add(0);
  let remaining = MESSAGE_BREAKPOINTS;
  for (let index = messages.length - 1; index >= 0 && remaining > 0; index -= 1) {
    const message = messages[index]!;
    if (message.role === "system" || !canCarryBreakpoint(message)) continue;
    marked.add(index);
    remaining -= 1;
  }
  return { messages: messages.map((message, index) => (marked.has(index) ? withBreakpoint(message) : message)) };
}
