/**
 * `delegate` (issue #35 item 4): the model hands a self-contained sub-task to a child agent turn
 * and gets its result back as this call's result. Off unless `access.tools` names it (config
 * OPTIONAL_TOOLS): every child costs model calls. The child itself is run by the turn that offers
 * the tool (`ToolContext.delegate`, src/agent/delegate.ts): its own small context (the task and
 * what the parent passes, nothing else of the conversation), its own step and token limits, the
 * parent's tools or fewer, paid by the parent's payer. Nothing a child writes is posted to a chat.
 */
import type { DelegateRequest, Tool } from "../registry.js";

export const DELEGATE_TOOL = "delegate";

export const delegateTool: Tool = {
  definition: {
    type: "function",
    function: {
      name: DELEGATE_TOOL,
      description: [
        "Hand a self-contained sub-task to a helper agent and get its result back (it is not shown to the user; you answer with it).",
        "The helper sees only `task` and `context`: nothing of this conversation, its memory or its people, so pass every fact it needs.",
        "It may use your tools (or the ones you name in `tools`) except recall and memory, with a small step and token limit; calls that need a person's approval are refused to it.",
        "Several delegate calls in one step run in parallel. Use it for research or checking that would flood this conversation with tool output.",
      ].join(" "),
      parameters: {
        type: "object",
        properties: {
          task: { type: "string", description: "What the helper must do and what to return, e.g. \"Read these three pages and list each one's release date\"" },
          context: { type: "string", description: "Facts, excerpts or data from this conversation the helper needs" },
          tools: { type: "array", items: { type: "string" }, description: "Names of your tools the helper may use; default: all of yours" },
        },
        required: ["task"],
        additionalProperties: false,
      },
    },
  },
  async run(args, context) {
    if (!context.delegate) throw new Error("delegation is not available here");
    const task = typeof args.task === "string" ? args.task.trim() : "";
    if (task === "") throw new Error("pass the sub-task as `task`");
    if (args.context !== undefined && typeof args.context !== "string") throw new Error("`context` must be text");
    if (args.tools !== undefined && !(Array.isArray(args.tools) && args.tools.every((name) => typeof name === "string"))) throw new Error("`tools` must be a list of tool names");
    const request: DelegateRequest = {
      task,
      ...(typeof args.context === "string" && args.context.trim() !== "" ? { context: args.context } : {}),
      ...(Array.isArray(args.tools) ? { tools: args.tools as string[] } : {}),
    };
    return context.delegate(request);
  },
};
