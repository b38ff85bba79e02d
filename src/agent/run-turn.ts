import { randomUUID } from "node:crypto";
import type { StepPreview } from "./preview.js";
import { wellFormedDeep } from "../core/text.js";
import type { AssistantMessage, ChatMessage, ToolCall, ToolMessage } from "../core/messages.js";
import { repairToolPairs } from "../context/index.js";
import type { ToolImage, WaitingCall } from "../core/tools.js";
import { AbortedError, ContextOverflowError } from "../errors.js";
import type { CallBudget, ChatRequest, ChatResult, LlmClient } from "../core/llm.js";
import { callNeedsApproval, runToolCall, toolResultMessage, type Tool, type ToolContext, type ToolOutputWriter, type ToolSet } from "../tools/index.js";

export interface RunTurnInput {
  llm: LlmClient;
  /** The live context, ending with the turn's new user message(s) or a resolved tool step. Not mutated. */
  context: readonly ChatMessage[];
  tools: ToolSet;
  toolContext: ToolContext;
  maxSteps: number;
  /** The output cap of one call of `tool` (undefined: a tool the set does not have). */
  outputCap: (tool: Tool | undefined) => number;
  /** Where capped originals are stored for `recall`. */
  toolOutputs: ToolOutputWriter;
  maxOutputTokens: number;
  newId: () => string;
  signal: AbortSignal;
  /** Who pays for each step's call (budgets); absent: not metered. */
  budget?: CallBudget;
  now: () => number;
  /** Steps already taken by this turn before a pause for approval (the loop goes on from there). */
  stepsTaken?: number;
  /** Turns the live context into the request (prompt caching lives there). */
  prepareRequest: (context: readonly ChatMessage[]) => Pick<ChatRequest, "messages" | "promptCacheKey"> | Promise<Pick<ChatRequest, "messages" | "promptCacheKey">>;
  /** Between steps: in-loop compaction. Returns the context the next step uses. */
  beforeStep?: (context: ChatMessage[], step: number) => Promise<ChatMessage[]>;
  /** On a context-overflow error: a forced compaction. `undefined` when nothing could be done. */
  onOverflow?: (context: ChatMessage[], error: ContextOverflowError) => Promise<ChatMessage[] | undefined>;
  /** Live preview of the turn (docs/streaming.md); set: steps stream their text. */
  preview?: StepPreview;
  /** Pictures a tool returned (MCP image content), kept in memory for the requests of this turn (src/media). */
  keepToolImages?: (toolCallId: string, images: readonly ToolImage[]) => void;
  /** After each step, with the context that request sent (for usage and calibration). */
  onStepFinished?: (result: ChatResult, step: number, sent: readonly ChatMessage[]) => void;
  /** Tool-call ids outside `context` that will join it later (a step waiting for approval): never reused. */
  reservedCallIds?: Iterable<string>;
}

/** A step that waits for a person: calls that need approval, and the results of those that did not. */
export interface PausedStep {
  assistant: AssistantMessage;
  results: ToolMessage[];
  waiting: WaitingCall[];
  step: number;
}

export interface RunTurnResult {
  /** The live context after the turn (possibly compacted). A paused step is not in it. */
  context: ChatMessage[];
  /** Every message the turn added, as kept (tool outputs capped), for the append-only transcript. */
  transcript: ChatMessage[];
  reply: string;
  steps: number;
  stoppedBy: "answer" | "max-steps" | "approval";
  /** Set when `stoppedBy` is "approval". */
  paused?: PausedStep;
}

const NO_ANSWER = "(no answer)";

/** Consecutive overflow errors a turn survives by compacting; then it gives up (SPEC §3). */
export const MAX_OVERFLOW_RETRIES = 3;

/**
 * The tool loop: steps until the model answers without tool calls or `maxSteps` is reached
 * (the last step sends the tools with `tool_choice: "none"`, so the model must answer). Tool failures are results for
 * the model, not failed turns. Checks the abort signal at every step boundary. A step that
 * calls a tool needing approval runs its other calls and pauses: the step leaves the loop
 * whole (`paused`), outside the context, until someone answers.
 */
export async function runTurn(input: RunTurnInput): Promise<RunTurnResult> {
  let context = [...input.context];
  const transcript: ChatMessage[] = [];
  let overflowRetries = 0;

  for (let step = (input.stepsTaken ?? 0) + 1; ; step++) {
    if (input.signal.aborted) throw new AbortedError("turn aborted", { cause: input.signal.reason });
    // Every request is valid for every provider: a call without its result gets a stub result,
    // a result out of place goes back after its call, an orphan result is dropped (a context
    // stored by an older version, a crash between steps). Compaction relies on it too.
    const repaired = repairToolPairs(context, input.newId);
    if (repaired.stubbedCalls > 0 || repaired.droppedResults > 0 || repaired.movedResults > 0) {
      context = repaired.messages;
      transcript.push(...repaired.stubs);
    }
    if (input.beforeStep) context = await input.beforeStep(context, step);
    const finalStep = step >= input.maxSteps;

    let result: ChatResult;
    try {
      const definitions = input.tools.definitions();
      input.preview?.step(step);
      const onText = input.preview?.text;
      result = await input.llm.complete({
        ...(onText ? { onText } : {}),
        ...(await input.prepareRequest(context)),
        // The last step keeps the tools (the history holds tool calls; the cached prefix stays)
        // and asks for text only.
        ...(definitions.length === 0 ? {} : { tools: definitions, toolChoice: finalStep ? ("none" as const) : ("auto" as const) }),
        maxTokens: input.maxOutputTokens,
        signal: input.signal,
        budget: input.budget,
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
    // The model's text is well-formed from here on (a stream cut mid-emoji, a server's byte soup).
    result = wellFormedDeep(result);
    result = { ...result, toolCalls: uniqueCallIds(result.toolCalls, context, input.reservedCallIds) };
    input.onStepFinished?.(result, step, context);

    // A call on the last step (tool_choice "none", which some servers ignore) is not run: only
    // the text is kept, never a tool call without its result. With no text either (also when
    // the model answered nothing), the message says so: an empty assistant message is refused by
    // Anthropic-family endpoints.
    const calls = finalStep ? [] : result.toolCalls;
    const content = calls.length === 0 && !result.content?.trim() ? NO_ANSWER : result.content;
    const assistant: AssistantMessage = {
      id: input.newId(),
      at: input.now(),
      role: "assistant",
      content,
      // A step that calls tools keeps the provider's reasoning: DeepSeek wants it back for the loop's next step.
      ...(calls.length > 0 ? { tool_calls: calls, ...(result.reasoningContent ? { reasoning_content: result.reasoningContent } : {}) } : {}),
    };

    if (calls.length === 0) {
      context.push(assistant);
      transcript.push(assistant);
      return {
        context,
        transcript,
        reply: result.content?.trim() || NO_ANSWER,
        steps: step,
        stoppedBy: result.toolCalls.length === 0 ? "answer" : "max-steps",
      };
    }

    input.preview?.tools(calls.map((call) => call.function.name), step);
    const waiting = calls.filter((call) => callNeedsApproval(input.tools.get(call.function.name), call.function.arguments));
    const runNow = calls.filter((call) => !waiting.includes(call));
    const results = await runCalls(input, runNow);
    if (waiting.length > 0) {
      return {
        context,
        transcript,
        reply: "",
        steps: step,
        stoppedBy: "approval",
        paused: { assistant, results, waiting: waiting.map((call) => waitingCall(input.tools, call)), step },
      };
    }
    context.push(assistant, ...results);
    transcript.push(assistant, ...results);
  }
}

/**
 * The step's calls with ids unique in the conversation: an id repeated within the step, or one a
 * message of `context` (or `reserved`) already uses, is replaced. Some models repeat ids (Gemini's
 * OpenAI dialect, local servers that number calls from call_0 on every step); results are paired
 * with calls by id — in the request, and when a step paused for approval is split and resolved —
 * so a repeated id attached a result to the wrong call, dropped one, or ran a call twice (issue 28).
 */
export function uniqueCallIds(calls: readonly ToolCall[], context: readonly ChatMessage[], reserved: Iterable<string> = []): ToolCall[] {
  if (calls.length === 0) return [];
  const taken = new Set(reserved);
  for (const message of context) {
    if (message.role === "assistant") for (const call of message.tool_calls ?? []) taken.add(call.id);
    else if (message.role === "tool") taken.add(message.tool_call_id);
  }
  return calls.map((call) => {
    const id = call.id !== "" && !taken.has(call.id) ? call.id : `call_${randomUUID()}`;
    taken.add(id);
    return id === call.id ? call : { ...call, id };
  });
}

/** Runs calls in parallel; their results keep the calls' order. */
export async function runCalls(input: Pick<RunTurnInput, "tools" | "toolContext" | "outputCap" | "toolOutputs" | "newId" | "now" | "keepToolImages">, calls: readonly ToolCall[]): Promise<ToolMessage[]> {
  const outputs = await Promise.all(calls.map((call) => runToolCall(input.tools, call, input.toolContext)));
  calls.forEach((call, index) => {
    const images = outputs[index]?.images;
    if (images?.length) input.keepToolImages?.(call.id, images);
  });
  return Promise.all(calls.map((call, index) => toolResultMessage(call, outputs[index] ?? { text: "" }, {
    id: input.newId(),
    at: input.now(),
    maxChars: input.outputCap(input.tools.get(call.function.name)),
    writer: input.toolOutputs,
  })));
}

function waitingCall(tools: ToolSet, call: ToolCall): WaitingCall {
  const origin = tools.get(call.function.name)?.origin;
  return {
    callId: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
    ...(origin ? { server: origin.server, tool: origin.tool } : {}),
  };
}
