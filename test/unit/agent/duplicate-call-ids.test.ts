/**
 * Issue 28: a model that repeats a tool-call id — within one step or across steps (Gemini's
 * OpenAI dialect, some local servers) — must not make a step paused for approval attach a result
 * to the wrong call, drop one, or run a call twice. Real turns (`runTurnSegments`) over a
 * scripted model, a press answering the request.
 */
import { describe, expect, it } from "vitest";
import type { ChatMessage, ToolCall } from "../../../src/core/messages.js";
import { silentLogger } from "../../../src/logger.js";
import type { SessionState } from "../../../src/session/state.js";
import type { InboxEntry } from "../../../src/session/store.js";
import { ToolCatalog, type Tool } from "../../../src/tools/index.js";
import { expectToolPairs } from "../../helpers/tool-pairs.js";
import { engineOver, respondingLlm, say, turn, type Step } from "../../helpers/agent-turns.js";
import { inbound } from "../../helpers/recording-adapter.js";

const ADA = "42";

const call = (name: string, id: string, args: Record<string, unknown> = {}): ToolCall => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });

/** `note` runs at once, `wipe` asks for approval; each records its runs and says which it was. */
function tools(ran: string[]) {
  const tool = (name: string, needsApproval: boolean): Tool => ({
    definition: { type: "function", function: { name, description: `${name} something.`, parameters: { type: "object", properties: { what: { type: "string" } } } } },
    ...(needsApproval ? { needsApproval: true } : {}),
    run: async (args) => {
      ran.push(`${name}:${String(args.what)}`);
      return `${name} did ${String(args.what)}`;
    },
  });
  return new ToolCatalog({ builtins: [tool("note", false), tool("wipe", true)], logger: silentLogger });
}

const press = (state: SessionState, approve = true) => ({
  ...inbound({ platform: "telegram", chatId: ADA, sessionKey: `tg:${ADA}`, chatType: "private", userId: ADA, userName: "Ada", text: "(button)", messageId: "p1",
    action: { id: `${approve ? "approve" : "deny"}:${state.pendingApproval!.id}`, sourceMessageId: "900" } }),
  receivedAt: 0,
});

/** Each tool call of `messages` with the text of its result (in order), for the model's view. */
function pairs(messages: readonly ChatMessage[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  messages.forEach((message, index) => {
    if (message.role !== "assistant") return;
    const calls = message.tool_calls ?? [];
    const results = messages.slice(index + 1, index + 1 + calls.length);
    calls.forEach((toolCall, at) => {
      const result = results[at];
      out.push([`${toolCall.function.name}:${String((JSON.parse(toolCall.function.arguments) as { what?: string }).what)}`, result?.role === "tool" ? String(result.content) : "(none)"]);
    });
  });
  return out;
}

/** A scheduled task fired while the request waits: an agent turn of its own. */
const firedTask = (): InboxEntry => ({
  ...inbound({ platform: "telegram", chatId: ADA, sessionKey: `tg:${ADA}`, chatType: "private", userId: ADA, userName: "Ada", text: "[Scheduled task r2] note it", messageId: "sched-r2-1000" }),
  scheduled: { itemId: "r2", kind: "task", scheduledFor: 1_000 },
  receivedAt: 0,
});

/**
 * Runs the script to its request, (optionally a fired task's turn,) presses, runs the rest:
 * → what ran and each call of the conversation with its result, as the model is shown them.
 */
async function approveAfter(steps: Step[], approve = true, taskMeanwhile = false) {
  const ran: string[] = [];
  const llm = respondingLlm((_request, index) => steps[Math.min(index, steps.length - 1)]!);
  const engine = engineOver(llm, tools(ran));
  let asked = await turn(engine, [say(ADA, ADA, "Ada", "tidy up", "501")]);
  expect(new Set(asked.state.pendingApproval?.waiting.map((waiting) => waiting.name))).toEqual(new Set(["wipe"]));
  if (taskMeanwhile) {
    asked = await turn(engine, [firedTask()], asked.state);
    expect(asked.state.pendingApproval?.waiting.map((waiting) => waiting.name)).toEqual(["wipe"]);
  }
  const answered = await turn(engine, [press(asked.state, approve)], asked.state);
  expect(answered.state.pendingApproval).toBeUndefined();
  // The conversation the model is shown from now on (each request is made from it).
  const live = answered.state.live;
  expect(live.at(-1)).toMatchObject({ role: "assistant", content: "Done." });
  expectToolPairs(live);
  const ids = live.flatMap((message) => (message.role === "assistant" ? (message.tool_calls ?? []).map((toolCall) => toolCall.id) : []));
  expect(new Set(ids).size).toBe(ids.length);
  return { ran, seen: pairs(live) };
}

const done: Step = { content: "Done.", toolCalls: [] };

describe("repeated tool-call ids and a step paused for approval (issue 28)", () => {
  it("one id for two calls of the step: the call that ran keeps its result and is not run again", async () => {
    const { ran, seen } = await approveAfter([{ content: null, toolCalls: [call("note", "dup", { what: "a" }), call("wipe", "dup", { what: "b" })] }, done]);
    expect(ran).toEqual(["note:a", "wipe:b"]);
    expect(seen).toEqual([["note:a", "note did a"], ["wipe:b", "wipe did b"]]);
  });

  it("denied: the call that ran keeps its result, the waiting one is told it did not run", async () => {
    const { ran, seen } = await approveAfter([{ content: null, toolCalls: [call("note", "dup", { what: "a" }), call("wipe", "dup", { what: "b" })] }, done], false);
    expect(ran).toEqual(["note:a"]);
    expect(seen.map(([name, result]) => [name, result.startsWith("note did") ? result : result.slice(0, 20)])).toEqual([["note:a", "note did a"], ["wipe:b", expect.any(String)]]);
    expect(seen[1]![1]).not.toContain("did");
  });

  it("two waiting calls sharing an id each get their own result", async () => {
    const { ran, seen } = await approveAfter([{ content: null, toolCalls: [call("wipe", "same", { what: "x" }), call("note", "other", { what: "n" }), call("wipe", "same", { what: "y" })] }, done]);
    expect(ran.sort()).toEqual(["note:n", "wipe:x", "wipe:y"]);
    expect(seen).toEqual([["note:n", "note did n"], ["wipe:x", "wipe did x"], ["wipe:y", "wipe did y"]]);
  });

  it("an id a previous step used (call_0 on every step): each call paired with its own result", async () => {
    const { ran, seen } = await approveAfter([
      { content: null, toolCalls: [call("note", "call_0", { what: "first" })] },
      { content: null, toolCalls: [call("note", "call_0", { what: "second" }), call("wipe", "call_1", { what: "third" })] },
      done,
    ]);
    expect(ran).toEqual(["note:first", "note:second", "wipe:third"]);
    expect(seen).toEqual([["note:first", "note did first"], ["note:second", "note did second"], ["wipe:third", "wipe did third"]]);
  });

  it("a task fired while the request waits reuses the waiting call's id: each call keeps its own result", async () => {
    const { ran, seen } = await approveAfter([
      { content: null, toolCalls: [call("wipe", "call_0", { what: "asked" })] },
      { content: null, toolCalls: [call("note", "call_0", { what: "task" })] },
      { content: "Task done.", toolCalls: [] },
      done,
    ], true, true);
    expect(ran).toEqual(["note:task", "wipe:asked"]);
    expect(seen).toEqual([["note:task", "note did task"], ["wipe:asked", "wipe did asked"]]);
  });
});
