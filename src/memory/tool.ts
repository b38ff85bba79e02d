/**
 * The `memory` tool: the agent saves durable facts and preferences. In a private chat it writes
 * the person's user memory; anywhere else the chat's memory. It never reads or writes another
 * person's memory, and it cannot write a user's memory from a group.
 */
import type { MessageOrigin } from "../core/channel.js";
import type { ToolDefinition } from "../core/messages.js";
import { ownerOf, type MemoryOwner } from "./owner.js";
import type { MemoryService } from "./service.js";

export interface MemoryToolContext {
  origin?: MessageOrigin;
}

export interface MemoryTool {
  definition: ToolDefinition;
  run(args: Record<string, unknown>, context: MemoryToolContext): Promise<string>;
}

// Static text only: tool definitions sit in the cached prompt prefix.
export const MEMORY_TOOL_DEFINITION: ToolDefinition = {
  type: "function",
  function: {
    name: "memory",
    description: [
      "Long-term memory that outlives this conversation (a new conversation, a restart).",
      "Save durable facts and preferences worth knowing next time: who the user is, what they prefer, standing decisions; not the task at hand.",
      "In a private chat it is the user's own memory; in a group, the group's memory (never one member's private memory).",
      "action=add saves `text` (one short fact); replace rewrites fact `id` with `text`; remove deletes fact `id`; list shows what is saved.",
      "Saved facts appear in your context from the next new conversation or compaction; the answer confirms each write.",
    ].join(" "),
    parameters: {
      type: "object",
      properties: {
        action: { type: "string", enum: ["add", "replace", "remove", "list"] },
        text: { type: "string", description: "The fact, one line, e.g. \"Prefers answers in Portuguese\"" },
        id: { type: "string", description: "Fact id for replace and remove, e.g. u3 or c2" },
      },
      required: ["action"],
      additionalProperties: false,
    },
  },
};

export function createMemoryTool(service: MemoryService): MemoryTool {
  return {
    definition: MEMORY_TOOL_DEFINITION,
    async run(args, context) {
      if (!context.origin) throw new Error("there is no conversation to remember for");
      return runMemoryAction(service, ownerOf(context.origin), args, context.origin.userName);
    },
  };
}

/** One memory action for `owner` (the tool, and the flush before compaction). → the answer. */
export async function runMemoryAction(service: MemoryService, owner: MemoryOwner, args: Record<string, unknown>, speaker?: string): Promise<string> {
  const text = typeof args.text === "string" ? args.text : "";
  const id = typeof args.id === "string" ? args.id.trim() : "";
  const where = owner.scope === "user" ? "the user's memory" : "this chat's memory";
  switch (args.action) {
    case "add": {
      const result = await service.add(owner, text, speaker);
      if (!result.ok) throw new Error(result.reason);
      return `Saved [${result.fact!.id}] to ${where} (${service.usage(owner, result.doc)}): "${result.fact!.text}". It is in your context from the next snapshot (a new conversation or compaction).`;
    }
    case "replace": {
      if (id === "") throw new Error("replace needs the fact's id");
      const result = await service.replace(owner, id, text, speaker);
      if (!result.ok) throw new Error(result.reason);
      return `Replaced [${id}] in ${where} (${service.usage(owner, result.doc)}): "${result.fact!.text}".`;
    }
    case "remove": {
      if (id === "") throw new Error("remove needs the fact's id");
      const removed = await service.remove(owner, id);
      if (removed.length === 0) throw new Error(`there is no fact ${id} in ${where}`);
      return `Removed [${id}] from ${where}.`;
    }
    case "list": {
      const doc = await service.store.read(owner);
      if (doc.facts.length === 0) return `Nothing is saved in ${where} yet.`;
      return [`${where} (${service.usage(owner, doc)}):`, ...doc.facts.map((fact) => `[${fact.id}] ${fact.text}`)].join("\n");
    }
    default:
      throw new Error(`unknown action ${JSON.stringify(args.action)}: use add, replace, remove or list`);
  }
}
