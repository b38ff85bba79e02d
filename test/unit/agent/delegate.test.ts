/**
 * The `delegate` tool (issue 35 item 4), through real turns (`runTurnSegments` with the session's
 * context manager): a child agent turn with its own small context, the parent's tools or fewer,
 * its own limits and the parent's payer; its result comes back as the tool's result and is never
 * posted; its failure is a tool error, not a lost turn; parallel children stay within a limit.
 */
import { describe, expect, it } from "vitest";
import type { TurnEngine } from "../../../src/agent/index.js";
import { contextCommand } from "../../../src/agent/commands/context-command.js";
import type { ChatRequest } from "../../../src/core/llm.js";
import type { ToolCall } from "../../../src/core/messages.js";
import { silentLogger } from "../../../src/logger.js";
import { currentTimeTool, delegateTool, ToolCatalog, type Tool } from "../../../src/tools/index.js";
import { contextFor, engineOver, freshState, respondingLlm, say, turn, type Step } from "../../helpers/agent-turns.js";

const ADA = "42";
const CHILD_MARK = "You are a helper agent";

const isChild = (request: ChatRequest) => JSON.stringify(request.messages[0]).includes(CHILD_MARK);
const textOf = (request: ChatRequest) => JSON.stringify(request.messages);
const toolNames = (request: ChatRequest) => (request.tools ?? []).map((tool) => tool.function.name).sort();
const call = (name: string, args: Record<string, unknown>, id: string): ToolCall => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });
const answer = (content: string): Step => ({ content, toolCalls: [] });

/** A tool that records its calls; `asks` makes it need approval for every call. */
function recordingTool(name: string, asks = false): Tool & { calls: unknown[] } {
  const calls: unknown[] = [];
  return {
    calls,
    definition: { type: "function", function: { name, description: `The ${name} tool.`, parameters: { type: "object", properties: {} } } },
    ...(asks ? { needsApproval: true } : {}),
    async run(args) {
      calls.push(args);
      return `${name} ran`;
    },
  };
}

/** The tool results (role tool) of the parent's requests, by call id. */
function toolResults(requests: readonly ChatRequest[]): Map<string, string> {
  const results = new Map<string, string>();
  for (const request of requests) {
    if (isChild(request)) continue;
    for (const message of request.messages) if (message.role === "tool") results.set((message as { tool_call_id: string }).tool_call_id, String(message.content));
  }
  return results;
}

function engineWith(llm: ReturnType<typeof respondingLlm>, builtins: Tool[], extra: Partial<TurnEngine> = {}, memory?: string): TurnEngine {
  const tools = new ToolCatalog({ builtins, optional: [delegateTool], access: { default: ["delegate"], chats: {}, users: {} }, logger: silentLogger });
  return engineOver(llm, tools, {
    ...(memory ? { context: contextFor(llm, tools, { systemBlock: () => memory }) } : {}),
    ...extra,
  });
}

describe("delegate: a child agent turn for a sub-task (issue 35 item 4)", () => {
  it("the child sees only the task and what is passed, not the conversation or its memory; its result comes back to the parent and is never posted", async () => {
    const llm = respondingLlm((request) => {
      if (isChild(request)) return answer("The release date is 2026-03-01.");
      const results = request.messages.filter((message) => message.role === "tool");
      if (results.length === 0) return { content: null, toolCalls: [call("delegate", { task: "Find the release date", context: "The product is Zephyr 2." }, "d1")] };
      return answer("Zephyr 2 ships on 1 March 2026.");
    });
    const engine = engineWith(llm, [currentTimeTool], {}, "About Ada: allergic to nuts; lives in Lisbon.");
    const result = await turn(engine, [say(ADA, ADA, "Ada", "my passport number is X1234; when does Zephyr 2 ship?", "1")]);

    const children = llm.requests.filter(isChild);
    expect(children).toHaveLength(1);
    const child = textOf(children[0]!);
    expect(child).toContain("Find the release date");
    expect(child).toContain("The product is Zephyr 2.");
    for (const hidden of ["X1234", "allergic", "Lisbon", "careful assistant"]) expect(child).not.toContain(hidden);
    // The parent's own requests do carry the memory (so the test would see a leak).
    expect(textOf(llm.requests[0]!)).toContain("allergic");

    expect(toolResults(llm.requests).get("d1")).toMatch(/^Result of the sub-task \(1 step, 110 tokens\):\nThe release date is 2026-03-01\.$/);
    expect(result.replies.map((reply) => reply.text)).toEqual(["Zephyr 2 ships on 1 March 2026."]);
    expect(result.state.stats).toMatchObject({ delegations: 1, delegatedTokens: 110 });
  });

  it("the child has the parent's tools or fewer: never delegate, recall or memory; approval-needing calls are refused to it", async () => {
    const lookup = recordingTool("lookup");
    const deploy = recordingTool("deploy", true);
    const memory = recordingTool("memory");
    const recall = recordingTool("recall");
    let childStep = 0;
    const llm = respondingLlm((request) => {
      if (isChild(request)) {
        childStep++;
        if (childStep === 1) return { content: null, toolCalls: [call("lookup", {}, "c1"), call("deploy", {}, "c2")] };
        return answer("looked it up; deploying needs you");
      }
      const results = request.messages.filter((message) => message.role === "tool");
      if (results.length === 0) {
        return { content: null, toolCalls: [
          call("delegate", { task: "look up and deploy" }, "d1"),
          call("delegate", { task: "only the clock", tools: ["current_time"] }, "d2"),
          call("delegate", { task: "read the chat", tools: ["recall"] }, "d3"),
        ] };
      }
      return answer("done");
    });
    const engine = engineWith(llm, [currentTimeTool, lookup, deploy, memory, recall]);
    await turn(engine, [say(ADA, ADA, "Ada", "go", "1")]);

    const parentTools = toolNames(llm.requests[0]!);
    expect(parentTools).toEqual(["current_time", "delegate", "deploy", "lookup", "memory", "recall"]);
    const children = llm.requests.filter(isChild);
    const byTask = (task: string) => children.filter((request) => textOf(request).includes(task));
    expect(toolNames(byTask("look up and deploy")[0]!)).toEqual(["current_time", "deploy", "lookup"]);
    expect(toolNames(byTask("only the clock")[0]!)).toEqual(["current_time"]);
    expect(byTask("read the chat")).toHaveLength(0);
    // The child ran lookup; deploy (approval needed) was refused to it, so it never ran.
    expect(lookup.calls).toHaveLength(1);
    expect(deploy.calls).toHaveLength(0);
    const childSaw = textOf(byTask("look up and deploy")[1]!);
    expect(childSaw).toContain("needs a person's approval, which a helper cannot ask for");
    const results = toolResults(llm.requests);
    expect(results.get("d3")).toMatch(/a helper cannot have "recall"/);
    expect(results.get("d1")).toContain("looked it up; deploying needs you");
  });

  it("a child's failure is the tool's error: the parent answers, the turn is not lost", async () => {
    const llm = respondingLlm((request) => {
      if (isChild(request)) throw new Error("upstream 503 from the provider");
      const results = request.messages.filter((message) => message.role === "tool");
      if (results.length === 0) return { content: null, toolCalls: [call("delegate", { task: "check the weather" }, "d1")] };
      return answer("I could not check the weather just now.");
    });
    const result = await turn(engineWith(llm, []), [say(ADA, ADA, "Ada", "weather?", "1")]);
    expect(toolResults(llm.requests).get("d1")).toMatch(/the sub-task failed after 0 steps: upstream 503 from the provider/);
    expect(result.replies.map((reply) => reply.text)).toEqual(["I could not check the weather just now."]);
    expect(result.state.stats.delegations).toBe(1);
  });

  it("a child stops at its token limit and at its step limit (its last step must answer)", async () => {
    const lookup = recordingTool("lookup");
    let childRequests = 0;
    const llm = respondingLlm((request) => {
      if (isChild(request)) {
        childRequests++;
        // Always wants another lookup; on a step sent with tool_choice "none" it must answer.
        if (request.toolChoice === "none") return answer("partial findings");
        return { content: null, toolCalls: [call("lookup", {}, `c${childRequests}`)] };
      }
      const results = request.messages.filter((message) => message.role === "tool");
      if (results.length === 0) return { content: null, toolCalls: [call("delegate", { task: "dig deep" }, "d1")] };
      return answer("summary");
    });
    // 110 tokens a step: a 250-token limit lets three steps start, not a fourth.
    await turn(engineWith(llm, [lookup], { delegation: { maxSteps: 10, maxTokens: 250, maxParallel: 3 } }), [say(ADA, ADA, "Ada", "dig", "1")]);
    expect(childRequests).toBe(3);
    expect(toolResults(llm.requests).get("d1")).toMatch(/the sub-task failed after 3 steps: the sub-task used its 250 tokens before it finished/);

    childRequests = 0;
    const steps = respondingLlm((request, index) => (isChild(request) ? (childRequests++, request.toolChoice === "none" ? answer("partial findings") : { content: null, toolCalls: [call("lookup", {}, `s${index}`)] })
      : request.messages.some((message) => message.role === "tool") ? answer("summary") : { content: null, toolCalls: [call("delegate", { task: "dig deep" }, "d1")] }));
    await turn(engineWith(steps, [lookup], { delegation: { maxSteps: 2, maxTokens: 100_000, maxParallel: 3 } }), [say(ADA, ADA, "Ada", "dig", "1")]);
    expect(childRequests).toBe(2);
    expect(toolResults(steps.requests).get("d1")).toMatch(/^Result of the sub-task \(2 steps, 220 tokens\):\npartial findings$/);
  });

  it("parallel children run within the limit, each result to its own call, all paid by the turn's payer", async () => {
    let running = 0;
    let most = 0;
    const llm = respondingLlm(async (request) => {
      if (isChild(request)) {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 20));
        running--;
        const task = /Task: (task \d)/.exec(textOf(request))?.[1];
        return answer(`done with ${task}`);
      }
      const results = request.messages.filter((message) => message.role === "tool");
      if (results.length === 0) return { content: null, toolCalls: [1, 2, 3, 4, 5].map((n) => call("delegate", { task: `task ${n}` }, `d${n}`)) };
      return answer("all five done");
    });
    const meter = {} as NonNullable<TurnEngine["budget"]>;
    const result = await turn(engineWith(llm, [], { delegation: { maxSteps: 3, maxTokens: 10_000, maxParallel: 2 }, budget: meter }), [say(ADA, ADA, "Ada", "do five things", "1")]);
    expect(most).toBe(2);
    const results = toolResults(llm.requests);
    for (const n of [1, 2, 3, 4, 5]) expect(results.get(`d${n}`)).toContain(`done with task ${n}`);
    expect(result.replies.map((reply) => reply.text)).toEqual(["all five done"]);
    // The same payer (the turn's budget scope) travels with the children's calls.
    const parentBudget = llm.requests[0]!.budget;
    expect(parentBudget).toBeDefined();
    for (const request of llm.requests.filter(isChild)) expect(request.budget).toBe(parentBudget);
  });

  it("without access.tools naming it, the model has no delegate tool; /context shows delegated work", async () => {
    const llm = respondingLlm(() => answer("hi"));
    const tools = new ToolCatalog({ builtins: [currentTimeTool], optional: [delegateTool], access: { default: [], chats: {}, users: {} }, logger: silentLogger });
    await turn(engineOver(llm, tools), [say(ADA, ADA, "Ada", "hello", "1")]);
    expect(toolNames(llm.requests[0]!)).toEqual(["current_time"]);

    const state = freshState();
    state.stats.delegations = 3;
    state.stats.delegatedTokens = 4_210;
    const engine = engineOver(llm, tools);
    const text = await contextCommand({ engine, state, timeZone: "UTC", toolDefinitions: async () => [] } as never);
    expect(text).toContain("Delegated sub-tasks: 3 in this conversation, 4,210 tokens of their own");
  });
});
