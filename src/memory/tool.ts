/**
 * The `memory` tool: the agent saves durable facts and preferences. In a private chat it writes
 * the person's user memory; anywhere else the chat's memory. It never reads or writes another
 * person's memory, and it cannot write a user's memory from a group.
 */
import { toolCallKey } from "../core/call-key.js";
import type { MessageOrigin } from "../core/channel.js";
import type { ToolDefinition } from "../core/messages.js";
import { ownerOf, type MemoryOwner } from "./owner.js";
import type { MemoryService } from "./service.js";
import type { MemoryDoc, MemoryFact } from "./store.js";

export interface MemoryToolContext {
  origin?: MessageOrigin;
  /** With `turnVersion`: the key that makes a re-run of the turn find its own earlier write (src/core/call-key.ts). */
  sessionKey?: string;
  /** The version the turn will commit. */
  turnVersion?: number;
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

/**
 * A write (add, replace, remove) lands outside the turn's commit, so a turn re-run after it (a
 * retry after a later step failed, a worker that died past its lease) would write again — a
 * fact added and then replaced in one turn would come back as a second fact. Each write is
 * recorded under its call's key (session, turn version, arguments: src/core/call-key.ts) with
 * what it wrote (action and fact ids, never the text: `/memory forget` must leave nothing
 * behind), and a re-run answers from the record, as the first run did, without writing.
 */
export function createMemoryTool(service: MemoryService): MemoryTool {
  return {
    definition: MEMORY_TOOL_DEFINITION,
    async run(args, context) {
      if (!context.origin) throw new Error("there is no conversation to remember for");
      const owner = ownerOf(context.origin);
      const key = args.action === "list" ? undefined : toolCallKey(context, args);
      if (key === undefined || context.sessionKey === undefined) return runMemoryAction(service, owner, args, context.origin.userName);
      const earlier = await service.store.writtenBy(context.sessionKey, key);
      if (earlier !== null) return answerAgain(service, owner, earlier);
      const { answer, written } = await memoryAction(service, owner, args, context.origin.userName);
      if (written !== undefined) await service.store.recordWrite(context.sessionKey, key, written);
      return answer;
    },
  };
}

const whereOf = (owner: MemoryOwner) => (owner.scope === "user" ? "the user's memory" : "this chat's memory");

/** One memory action for `owner` (the tool, and the flush before compaction). → the answer. */
export async function runMemoryAction(service: MemoryService, owner: MemoryOwner, args: Record<string, unknown>, speaker?: string): Promise<string> {
  return (await memoryAction(service, owner, args, speaker)).answer;
}

/** → the answer, and for a write what it wrote: `<action> <fact ids>` (the record a re-run answers from). */
async function memoryAction(service: MemoryService, owner: MemoryOwner, args: Record<string, unknown>, speaker?: string): Promise<{ answer: string; written?: string }> {
  const text = typeof args.text === "string" ? args.text : "";
  const id = typeof args.id === "string" ? args.id.trim() : "";
  const where = whereOf(owner);
  switch (args.action) {
    case "add": {
      const result = await service.add(owner, text, speaker);
      if (!result.ok) throw new Error(result.reason);
      return { answer: savedText(service, owner, result.doc, result.fact!), written: `add ${result.fact!.id}` };
    }
    case "replace": {
      if (id === "") throw new Error("replace needs the fact's id");
      const result = await service.replace(owner, id, text, speaker);
      if (!result.ok) throw new Error(result.reason);
      return { answer: replacedText(service, owner, result.doc, result.fact!), written: `replace ${id}` };
    }
    case "remove": {
      if (id === "") throw new Error("remove needs the fact's id");
      const removed = await service.remove(owner, id);
      if (removed.length === 0) throw new Error(`there is no fact ${id} in ${where}`);
      return { answer: `Removed [${id}] from ${where}.`, written: `remove ${removed.map((fact) => fact.id).join(" ")}` };
    }
    case "list": {
      const doc = await service.store.read(owner);
      if (doc.facts.length === 0) return { answer: `Nothing is saved in ${where} yet.` };
      return { answer: [`${where} (${service.usage(owner, doc)}):`, ...doc.facts.map((fact) => `[${fact.id}] ${fact.text}`)].join("\n") };
    }
    default:
      throw new Error(`unknown action ${JSON.stringify(args.action)}: use add, replace, remove or list`);
  }
}

const savedText = (service: MemoryService, owner: MemoryOwner, doc: MemoryDoc, fact: MemoryFact) =>
  `Saved [${fact.id}] to ${whereOf(owner)} (${service.usage(owner, doc)}): "${fact.text}". It is in your context from the next snapshot (a new conversation or compaction).`;

const replacedText = (service: MemoryService, owner: MemoryOwner, doc: MemoryDoc, fact: MemoryFact) =>
  `Replaced [${fact.id}] in ${whereOf(owner)} (${service.usage(owner, doc)}): "${fact.text}".`;

/** A re-run's answer from what the first run wrote: the same sentence, with the fact as it is now. */
async function answerAgain(service: MemoryService, owner: MemoryOwner, written: string): Promise<string> {
  const [action = "", ...ids] = written.split(" ");
  if (action === "remove") return `Removed [${ids.join(", ")}] from ${whereOf(owner)}.`;
  const doc = await service.store.read(owner);
  const fact = doc.facts.find((entry) => entry.id === ids[0]);
  if (!fact) return `[${ids[0] ?? ""}] was written to ${whereOf(owner)} earlier in this turn and has been removed since.`;
  return action === "add" ? savedText(service, owner, doc, fact) : replacedText(service, owner, doc, fact);
}
