/**
 * What comes back, as a `ChatResult`: a whole `chat.completion`, or the `chat.completion.chunk`s
 * of a streamed one, which give the same result. Servers differ in what they leave out: a tool
 * call without an id gets one, empty arguments become "{}", a missing `prompt_tokens_details`
 * counts 0 cached tokens (DeepSeek says `prompt_cache_hit_tokens` instead).
 */
import { randomUUID } from "node:crypto";
import type { ToolCall } from "../core/messages.js";
import type { ChatResult, TokenUsage } from "../core/llm.js";
import { errorFromCompletionBody } from "./errors.js";
import { readUsage, type WireUsage } from "./providers/dialect.js";
import type { ProviderProfile } from "./providers/profiles.js";

interface WireToolCall {
  index?: number;
  id?: string;
  type?: string;
  function?: { name?: string; arguments?: unknown };
  /** Gemini 3: `{ google: { thought_signature } }`, wanted back with the call. */
  extra_content?: Record<string, unknown> | null;
}

interface WireChoice {
  message?: { content?: string | null; tool_calls?: WireToolCall[] | null; reasoning_content?: string | null };
  delta?: { content?: string | null; tool_calls?: WireToolCall[] | null; reasoning_content?: string | null };
  finish_reason?: string | null;
}

interface WireCompletion {
  model?: string;
  choices?: WireChoice[];
  usage?: WireUsage | null;
  error?: unknown;
}

const newCallId = () => `call_${randomUUID()}`;
const argumentsText = (text: string) => (text.trim() === "" ? "{}" : text);

/** A whole completion; a body without a choice is the provider's error (`errorFromCompletionBody`). */
export function toChatResult(body: unknown, configuredModel: string, profile: ProviderProfile): ChatResult {
  const completion = body as WireCompletion;
  const choice = completion?.choices?.[0];
  if (!choice) throw errorFromCompletionBody(body);
  const toolCalls: ToolCall[] = [];
  for (const call of choice.message?.tool_calls ?? []) {
    // Some servers omit `type`; custom (free-form) tools are not ours.
    if (!call.function) continue;
    const args = call.function.arguments;
    toolCalls.push({
      id: call.id || newCallId(),
      type: "function",
      function: { name: call.function.name ?? "", arguments: typeof args === "string" ? argumentsText(args) : JSON.stringify(args ?? {}) },
      ...(call.extra_content ? { extra_content: call.extra_content } : {}),
    });
  }
  const usage = readUsage(profile, completion.usage);
  const reasoning = choice.message?.reasoning_content;
  return {
    content: choice.message?.content ?? null,
    toolCalls,
    ...(typeof reasoning === "string" && reasoning !== "" ? { reasoningContent: reasoning } : {}),
    finishReason: choice.finish_reason ?? null,
    ...(usage === undefined ? {} : { usage }),
    model: completion.model || configuredModel,
  };
}

/**
 * The chunks of one streamed step, in order. Text deltas go to `onText` as they arrive; tool
 * calls are assembled by their `index` (id and name in the first delta, the arguments in
 * pieces); the usage comes in a last chunk without choices (`stream_options.include_usage`).
 */
export class StreamedCompletion {
  private content: string | null = null;
  private reasoning = "";
  private finishReason: string | null = null;
  private model = "";
  private usage: WireUsage | undefined;
  private chosen = false;
  private readonly calls = new Map<number, { id: string; name: string; arguments: string; extra?: Record<string, unknown> }>();
  /** Whether any text was handed to `onText` (after that, the step cannot be retried). */
  textSent = false;

  constructor(private readonly onText: (delta: string) => void, private readonly profile: ProviderProfile) {}

  add(body: unknown): void {
    const chunk = body as WireCompletion;
    if (chunk.error !== undefined && chunk.error !== null) throw errorFromCompletionBody(chunk);
    if (chunk.model) this.model = chunk.model;
    if (chunk.usage) this.usage = chunk.usage;
    const choice = chunk.choices?.[0];
    if (!choice) return;
    this.chosen = true;
    const delta = choice.delta ?? {};
    if (typeof delta.content === "string" && delta.content !== "") {
      this.content = (this.content ?? "") + delta.content;
      this.textSent = true;
      this.onText(delta.content);
    }
    if (typeof delta.reasoning_content === "string") this.reasoning += delta.reasoning_content;
    for (const call of delta.tool_calls ?? []) {
      const index = call.index ?? 0;
      const entry = this.calls.get(index) ?? { id: "", name: "", arguments: "" };
      if (call.id) entry.id = call.id;
      if (call.function?.name) entry.name += call.function.name;
      if (typeof call.function?.arguments === "string") entry.arguments += call.function.arguments;
      if (call.extra_content) entry.extra = call.extra_content;
      this.calls.set(index, entry);
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
  }

  result(configuredModel: string): ChatResult {
    if (!this.chosen) throw errorFromCompletionBody({ streamed: "no choice in any chunk" });
    const toolCalls: ToolCall[] = [...this.calls.entries()].sort(([a], [b]) => a - b).filter(([, call]) => call.name !== "").map(([, call]) => ({
      id: call.id || newCallId(),
      type: "function",
      function: { name: call.name, arguments: argumentsText(call.arguments) },
      ...(call.extra ? { extra_content: call.extra } : {}),
    }));
    const usage = readUsage(this.profile, this.usage);
    return { content: this.content, toolCalls, ...(this.reasoning === "" ? {} : { reasoningContent: this.reasoning }), finishReason: this.finishReason, ...(usage === undefined ? {} : { usage }), model: this.model || configuredModel };
  }
}
