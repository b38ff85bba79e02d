import type { AssistantMessage, ChatMessage, ToolMessage } from "../core/messages.js";
import { AbortedError, ContextOverflowError, errorMessage } from "../errors.js";
import type { ChatRequest, ChatResult, LlmClient } from "../core/llm.js";
import type { ToolContext, ToolRegistry } from "./tools/registry.js";

export interface RunTurnInput {
  llm: LlmClient;
  /** The live context, ending with the turn's new user message(s). Not mutated. */
  context: readonly ChatMessage[];
  tools: ToolRegistry;
  toolContext: ToolContext;
  maxSteps: number;
  toolOutputMaxChars: number;
  maxOutputTokens: number;
  newId: () => string;
  signal: AbortSignal;
  now: () => number;
  /** Turns the live context into the request (prompt caching lives there). */
  prepareRequest: (context: readonly ChatMessage[]) => Pick<ChatRequest, "messages" | "promptCacheKey">;
  /** Between steps: in-loop compaction. Returns the context the next step uses. */
  beforeStep?: (context: ChatMessage[], step: number) => Promise<ChatMessage[]>;
  /** On a context-overflow error: a forced compaction. `undefined` when nothing could be done. */
  onOverflow?: (context: ChatMessage[], error: ContextOverflowError) => Promise<ChatMessage[] | undefined>;
  /** After each step, with the context that request sent (for usage and calibration). */
  onStepFinished?: (result: ChatResult, step: number, sent: readonly ChatMessage[]) => void;
}

export interface RunTurnResult {
  /** The live context after the turn (possibly compacted, tool outputs capped). */
  context: ChatMessage[];
  /** Every message the turn added, uncut, for the append-only transcript. */
  transcript: ChatMessage[];
  reply: string;
  steps: number;
  stoppedBy: "answer" | "max-steps";
}

/** Consecutive overflow errors a turn survives by compacting; then it gives up (SPEC §3). */
export const MAX_OVERFLOW_RETRIES = 3;

/**
 * The tool loop: steps until the model answers without tool calls or `maxSteps` is reached
 * (the last step offers no tools, so the model must answer). Tool failures are results for
 * the model, not failed turns. Checks the abort signal at every step boundary.
 */
export async function runTurn(input: RunTurnInput): Promise<RunTurnResult> {
  let context = [...input.context];
  const transcript: ChatMessage[] = [];
  let overflowRetries = 0;

  for (let step = 1; ; step++) {
    if (input.signal.aborted) throw new AbortedError("turn aborted", { cause: input.signal.reason });
    if (input.beforeStep) context = await input.beforeStep(context, step);
    const finalStep = step >= input.maxSteps;

    let result: ChatResult;
    try {
      const definitions = input.tools.definitions();
      result = await input.llm.complete({
        ...input.prepareRequest(context),
        ...(finalStep || definitions.length === 0 ? {} : { tools: definitions }),
        maxTokens: input.maxOutputTokens,
        signal: input.signal,
      });
    } catch (error) {
      if (error instanceof ContextOverflowError && input.onOverflow && overflowRetries < MAX_OVERFLOW_RETRIES) {
        overflowRetries++;
        const compacted = await input.onOverflow(context, error);
        if (compacted) {
          context = compacted;
          step--;
          continue;
        }
      }
      throw error;
    }
    overflowRetries = 0;
    input.onStepFinished?.(result, step, context);

    const assistant: AssistantMessage = {
      id: input.newId(),
      at: input.now(),
      role: "assistant",
      content: result.content,
      ...(result.toolCalls.length > 0 ? { tool_calls: result.toolCalls } : {}),
    };
    context.push(assistant);
    transcript.push(assistant);

    if (result.toolCalls.length === 0 || finalStep) {
      return {
        context,
        transcript,
        reply: result.content?.trim() || "(no answer)",
        steps: step,
        stoppedBy: result.toolCalls.length === 0 ? "answer" : "max-steps",
      };
    }

    const outputs = await Promise.all(result.toolCalls.map((call) => runTool(input, call.function.name, call.function.arguments)));
    result.toolCalls.forEach((call, index) => {
      const output = outputs[index] ?? "";
      const id = input.newId();
      const original: ToolMessage = { id, at: input.now(), role: "tool", tool_call_id: call.id, content: output };
      transcript.push(original);
      context.push(capToolOutput(original, input.toolOutputMaxChars));
    });
  }
}

async function runTool(input: RunTurnInput, name: string, rawArguments: string): Promise<string> {
  const tool = input.tools.get(name);
  if (!tool) return `Error: there is no tool named "${name}".`;
  let args: Record<string, unknown>;
  try {
    const parsed: unknown = rawArguments.trim() === "" ? {} : JSON.parse(rawArguments);
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("arguments must be a JSON object");
    args = parsed as Record<string, unknown>;
  } catch (error) {
    return `Error: invalid arguments for ${name}: ${errorMessage(error)}`;
  }
  try {
    return await tool.run(args, input.toolContext);
  } catch (error) {
    if (input.signal.aborted) throw new AbortedError("turn aborted", { cause: error });
    return `Error: ${name} failed: ${errorMessage(error)}`;
  }
}

/** Caps a tool output in the live context; the transcript keeps it whole under the same id. */
export function capToolOutput(message: ToolMessage, maxChars: number): ToolMessage {
  if (message.content.length <= maxChars) return message;
  const note = `\n[output cut at ${maxChars} of ${message.content.length} characters; the full output is kept: recall("${message.id}")]`;
  return { ...message, content: message.content.slice(0, Math.max(0, maxChars - note.length)) + note, kind: "truncated", originalId: message.id };
}
