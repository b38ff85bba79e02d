import type { Tool } from "../../src/tools/index.js";
import { getTokenCounter } from "../../src/context/index.js";
import type { ChatMessage } from "../../src/core/messages.js";
import { type RecordedRequest, textOf } from "../fakes/fake-llm.js";

/** A deterministic pseudo file: `lines` numbered lines that name the path, so outputs are large and unique. */
export function fakeFileContent(path: string, lines: number): string {
  return Array.from({ length: lines }, (_, index) => `${path}:${index + 1}: const value${index} = computeSomething(${index}, "${path}");`).join("\n");
}

/** A tool with large outputs, like a coding agent's file reader. */
export const readFileTool: Tool = {
  definition: {
    type: "function",
    function: {
      name: "read_file",
      description: "Read a file of the project.",
      parameters: { type: "object", properties: { path: { type: "string" }, lines: { type: "integer" } }, required: ["path"] },
    },
  },
  async run(args) {
    return fakeFileContent(String(args.path), typeof args.lines === "number" ? args.lines : 60);
  },
};

export const isSummarizerRequest = (request: RecordedRequest) =>
  textOf(request.body.messages[0]?.content).startsWith("You compact the context");

/** The silent memory flush before a compaction (src/memory/flush.ts): its last message is the instruction. */
export const isFlushRequest = (request: RecordedRequest) =>
  textOf(request.body.messages.at(-1)?.content).startsWith("[Automatic memory flush");

/** Tokens of a request as sent (messages + tools), with the main model's tokenizer. */
export function requestTokens(request: RecordedRequest, model = "gpt-4o-mini"): number {
  const counter = getTokenCounter(model);
  const messages = request.body.messages.map((message, index) => ({
    id: `r${index}`,
    role: message.role,
    content: textOf(message.content),
    ...(message.tool_calls ? { tool_calls: message.tool_calls } : {}),
    ...(message.tool_call_id ? { tool_call_id: message.tool_call_id } : {}),
  })) as ChatMessage[];
  return counter.countMessages(messages) + counter.countTools((request.body.tools ?? []) as never);
}
