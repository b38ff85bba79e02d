/**
 * The memory flush before a compaction (as OpenClaw does it): one silent, bounded step in which
 * the agent may save to memory what must outlive the fold. The turn's tools are offered (so the
 * provider's cached prefix holds) but only memory calls are run, the answer is capped at `maxTokens`, nothing of it reaches the user or the conversation, and a
 * failure never stops the compaction (it is logged and the fold goes on).
 */
import type { CallBudget, ChatRequest, LlmClient } from "../core/llm.js";
import type { MemoryOwner } from "../core/memory.js";
import type { ChatMessage, ToolDefinition } from "../core/messages.js";
import type { Logger } from "../logger.js";
import type { MemoryService } from "./service.js";
import { MEMORY_TOOL_DEFINITION, runMemoryAction } from "./tool.js";

/** Starts the flush step's instruction; tests and fakes recognise a flush request by it. */
export const FLUSH_MARKER = "[Automatic memory flush — not a message from the user]";

export const FLUSH_INSTRUCTION = `${FLUSH_MARKER} The older part of this conversation is about to be compacted into a summary, which may lose details. If it holds durable facts, preferences or decisions that are not in your long-term memory yet and should outlive this conversation, save them now with the memory tool (one short fact per call). Do not answer the user; this reply is never shown. If there is nothing to save, reply with NO_REPLY.`;

/** Tool calls one flush may make: a flush saves a few facts, not a transcript. */
export const FLUSH_MAX_CALLS = 8;

export interface FlushInput {
  llm: LlmClient;
  service: MemoryService;
  owner: MemoryOwner;
  context: readonly ChatMessage[];
  prepareRequest: (context: readonly ChatMessage[]) => Pick<ChatRequest, "messages" | "promptCacheKey">;
  /**
   * The tools the turn's requests carry. Tools are part of the cached prefix (OpenAI, Anthropic):
   * the flush sends the same ones (the memory tool added last if the turn has none) and ignores
   * every call but the memory tool's. @defaultValue the memory tool alone
   */
  tools?: readonly ToolDefinition[];
  maxTokens: number;
  signal: AbortSignal;
  /** Who pays for the flush's call (budgets); absent: not metered. */
  budget?: CallBudget;
  log: Logger;
  now: number;
}

/** The turn's tools, so the request's prefix is the turn's; the memory tool appended only when the turn lacks it. */
export function flushTools(tools: readonly ToolDefinition[] | undefined): ToolDefinition[] {
  if (tools === undefined) return [MEMORY_TOOL_DEFINITION];
  const name = MEMORY_TOOL_DEFINITION.function.name;
  return tools.some((tool) => tool.function.name === name) ? [...tools] : [...tools, MEMORY_TOOL_DEFINITION];
}

/** → the facts it saved (the tool's answers), for the log. */
export async function flushMemory(input: FlushInput): Promise<string[]> {
  const instruction: ChatMessage = { id: "memory-flush", at: input.now, role: "user", content: FLUSH_INSTRUCTION };
  const result = await input.llm.complete({
    ...input.prepareRequest([...input.context, instruction]),
    tools: flushTools(input.tools),
    maxTokens: input.maxTokens,
    signal: input.signal,
    budget: input.budget,
  });
  const answers: string[] = [];
  for (const call of result.toolCalls.slice(0, FLUSH_MAX_CALLS)) {
    if (call.function.name !== MEMORY_TOOL_DEFINITION.function.name) continue;
    try {
      const args = JSON.parse(call.function.arguments || "{}") as Record<string, unknown>;
      // The flush may add and replace; removing is left to a turn the user can see.
      if (args.action !== "add" && args.action !== "replace") continue;
      answers.push(await runMemoryAction(input.service, input.owner, args));
    } catch (error) {
      input.log.info({ err: error }, "memory-flush-call-refused");
    }
  }
  input.log.info({ saved: answers.length, usage: result.usage }, "memory-flushed");
  return answers;
}
