/**
 * The child agent behind the `delegate` tool (issue #35 item 4). A child is a tool loop of its
 * own (`runTurn`) over the parent's model with:
 * - its own small context: a fixed system prompt and one user message holding the task and what
 *   the parent passed — no memory snapshot, pins, summary or history of the conversation;
 * - the parent's tools or fewer (the names the parent lists), never `delegate` (no grandchildren),
 *   `recall` (which reads the conversation's transcript) nor `memory` (the chat's long-term
 *   memory: the parent passes what the child should know); a call that would wait for a
 *   person's approval is refused to it (a child cannot pause the turn), the parent may make it;
 * - its own step limit (the last step must answer) and token limit (prompt + completion over
 *   its steps; a step is not started past it);
 * - the parent's payer: the turn's budget scope pays each child call, like the parent's;
 * - its result returned as the tool's result, never posted to a chat (it has no replies).
 * A child's failure (an LLM error, its limits) is the tool's error, not the turn's. At most
 * `maxParallel` children of one turn run at once; the rest wait their turn.
 * The session counts delegations and their tokens (`/context`).
 */
import { toApiMessages, type ChatMessage } from "../core/messages.js";
import { AbortedError } from "../errors.js";
import { DELEGATE_TOOL, ToolRegistry, type DelegateRequest, type Tool } from "../tools/index.js";
import type { ChatPorts } from "./ports.js";
import { runTurn, type RunTurnInput } from "./run-turn.js";
import type { TurnRun } from "./turn-types.js";

/** DELEGATE_MAX_STEPS / _TOKENS / _PARALLEL. */
export interface DelegationLimits {
  maxSteps: number;
  maxTokens: number;
  maxParallel: number;
}

export const DEFAULT_DELEGATION: DelegationLimits = { maxSteps: 6, maxTokens: 30_000, maxParallel: 3 };

const CHILD_SYSTEM_PROMPT = [
  "You are a helper agent doing one sub-task for another assistant, who will use your result to answer its user.",
  "You see only the task and the context you were given; use your tools when they help.",
  "Answer with the result itself, complete and concise: facts, findings, data, and what you could not find. No greetings.",
].join(" ");

type Plumbing = Pick<RunTurnInput, "toolContext" | "outputCap" | "toolOutputs" | "newId" | "now">;

/** The `delegate` port of one turn's tool context: runs children with `parentTools`' rights or fewer. */
export function delegation(run: TurnRun<ChatPorts>, parentTools: ToolRegistry, plumbing: Plumbing): (request: DelegateRequest) => Promise<string> {
  const limits = run.engine.delegation ?? DEFAULT_DELEGATION;
  const slots = semaphore(limits.maxParallel);
  return async (request) => {
    const tools = childTools(parentTools, request.tools);
    const release = await slots.acquire(run.input.signal);
    try {
      return await runChild(run, request, tools, plumbing, limits);
    } finally {
      release();
    }
  };
}

async function runChild(run: TurnRun<ChatPorts>, request: DelegateRequest, tools: ToolRegistry, plumbing: Plumbing, limits: DelegationLimits): Promise<string> {
  const { engine, input, state } = run;
  const at = plumbing.now();
  const context: ChatMessage[] = [
    { id: plumbing.newId(), at, role: "system", content: CHILD_SYSTEM_PROMPT },
    { id: plumbing.newId(), at, role: "user", content: request.context ? `Task: ${request.task}\n\nContext:\n${request.context}` : `Task: ${request.task}` },
  ];
  let tokens = 0;
  let steps = 0;
  const log = input.log.child({ delegate: true });
  try {
    const { delegate: _noGrandchildren, ...toolContext } = plumbing.toolContext;
    void _noGrandchildren;
    const result = await runTurn({
      ...plumbing,
      toolContext,
      tools,
      llm: engine.llm,
      context,
      maxSteps: limits.maxSteps,
      maxOutputTokens: engine.maxOutputTokens,
      signal: input.signal,
      ...(run.budget ? { budget: run.budget } : {}),
      prepareRequest: (current) => ({ messages: toApiMessages(current) }),
      beforeStep: async (current) => {
        if (tokens >= limits.maxTokens) throw new Error(`the sub-task used its ${limits.maxTokens.toLocaleString("en-US")} tokens before it finished`);
        return current;
      },
      onStepFinished: (result, _step, sent) => {
        steps++;
        // A server that reports no usage is counted at ~4 characters a token.
        tokens += result.usage
          ? result.usage.promptTokens + result.usage.completionTokens
          : Math.ceil((JSON.stringify(sent).length + (result.content?.length ?? 0) + JSON.stringify(result.toolCalls).length) / 4);
      },
    });
    log.info({ steps, tokens, stoppedBy: result.stoppedBy }, "delegate-finished");
    return `Result of the sub-task (${steps} step${steps === 1 ? "" : "s"}, ${tokens.toLocaleString("en-US")} tokens):\n${result.reply}`;
  } catch (error) {
    if (input.signal.aborted) throw new AbortedError("turn aborted", { cause: input.signal.reason });
    log.warn({ steps, tokens, err: error }, "delegate-failed");
    throw new Error(`the sub-task failed after ${steps} step${steps === 1 ? "" : "s"}: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    state.stats.delegations = (state.stats.delegations ?? 0) + 1;
    state.stats.delegatedTokens = (state.stats.delegatedTokens ?? 0) + tokens;
  }
}

/** Tools no child has: delegation itself, and what reads the conversation or its memory. */
const NOT_FOR_CHILDREN: ReadonlySet<string> = new Set([DELEGATE_TOOL, "recall", "memory"]);

/** The parent's tools a child may use: those named (all when none is), minus NOT_FOR_CHILDREN; approvals refused. */
function childTools(parent: ToolRegistry, names: readonly string[] | undefined): ToolRegistry {
  const unknown = (names ?? []).filter((name) => !parent.get(name) || NOT_FOR_CHILDREN.has(name));
  if (unknown.length > 0) throw new Error(`a helper cannot have ${unknown.map((name) => JSON.stringify(name)).join(", ")}: name tools you have yourself (not ${[...NOT_FOR_CHILDREN].join(", ")})`);
  const chosen = parent.list().filter((tool) => !NOT_FOR_CHILDREN.has(tool.definition.function.name) && (!names || names.includes(tool.definition.function.name)));
  return new ToolRegistry(chosen.flatMap(withoutApproval));
}

function withoutApproval(tool: Tool): Tool[] {
  const rule = tool.needsApproval;
  if (rule === undefined || rule === false) return [tool];
  const { needsApproval: _asks, ...rest } = tool;
  void _asks;
  return [{
    ...rest,
    run: async (args, context) => {
      if (rule === true || rule(args)) throw new Error("this call needs a person's approval, which a helper cannot ask for; return what you found and say the call is needed");
      return tool.run(args, context);
    },
  }];
}

/** At most `size` holders at once; waiting stops with the turn. */
function semaphore(size: number): { acquire(signal: AbortSignal): Promise<() => void> } {
  let free = Math.max(1, size);
  const waiting: Array<() => void> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else free++;
  };
  return {
    acquire(signal) {
      if (free > 0) {
        free--;
        return Promise.resolve(once(release));
      }
      return new Promise((resolve, reject) => {
        const grant = () => {
          signal.removeEventListener("abort", abort);
          resolve(once(release));
        };
        const abort = () => {
          const index = waiting.indexOf(grant);
          if (index >= 0) waiting.splice(index, 1);
          reject(new AbortedError("turn aborted", { cause: signal.reason }));
        };
        if (signal.aborted) return abort();
        waiting.push(grant);
        signal.addEventListener("abort", abort, { once: true });
      });
    },
  };
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    fn();
  };
}
