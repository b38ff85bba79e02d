/** `/context`: what fills the context (system, tools, memory, pins, summary, messages) and the last compaction. */
import type { ToolDefinition } from "../../core/messages.js";
import { compactNumber, contextMeter } from "../../core/format.js";
import { systemBlock } from "../../memory/index.js";
import type { CommandContext } from "./command-context.js";

export interface ContextBreakdown {
  system: number;
  tools: number;
  memory: number;
  pins: number;
  summary: number;
  recent: number;
  total: number;
  window: number;
}

/**
 * What the next request holds, by category, in the main model's tokenizer: the categories add
 * up to the request as sent (the memory and pins ride on the system prompt).
 */
export function contextBreakdown(context: CommandContext, tools: readonly ToolDefinition[]): ContextBreakdown {
  const { engine, state } = context;
  const counter = engine.context.counter();
  const block = systemBlock(state.memory);
  const part = (text: string | undefined) => (text ? counter.countText(`\n\n${text}`) : 0);
  let system = 3; // the reply priming every request carries
  let summary = 0;
  let recent = 0;
  for (const message of state.live) {
    const tokens = counter.countMessage(message);
    if (message.role === "system") system += tokens;
    else if (message.kind === "summary") summary += tokens;
    else recent += tokens;
  }
  const breakdown = { system, tools: counter.countTools([...tools]), memory: part(block?.memory), pins: part(block?.pins), summary, recent };
  const total = Object.values(breakdown).reduce((sum, value) => sum + value, 0);
  return { ...breakdown, total, window: engine.context.contextWindow(state) };
}

export async function contextCommand(context: CommandContext): Promise<string> {
  const { state } = context;
  const tools = await context.toolDefinitions();
  const parts = contextBreakdown(context, tools);
  const number = (value: number) => value.toLocaleString("en-US");
  const messages = state.live.filter((message) => message.role !== "system" && message.kind !== "summary").length;
  const pins = state.memory?.pins?.length ?? 0;
  const lines = [
    `Context: ${contextMeter(parts.total, parts.window)} (${context.engine.context.counter().encoding} tokens)`,
    `• system prompt: ${number(parts.system)}`,
    `• tools (${tools.length}): ${number(parts.tools)}`,
    `• memory: ${number(parts.memory)}`,
    `• pins (${pins}): ${number(parts.pins)}`,
    `• summary: ${number(parts.summary)}`,
    `• recent messages (${messages}): ${number(parts.recent)}`,
    `• free: ${number(Math.max(0, parts.window - parts.total))}`,
    `Compactions: ${state.stats.compactions}`,
  ];
  const delegations = state.stats.delegations ?? 0;
  if (delegations > 0) {
    const inContext = state.live.filter((message) => message.role === "assistant" && message.tool_calls?.some((call) => call.function.name === "delegate")).length;
    lines.push(`Delegated sub-tasks: ${number(delegations)} in this conversation, ${number(state.stats.delegatedTokens ?? 0)} tokens of their own (their results sit in the context; ${inContext} step${inContext === 1 ? "" : "s"} with delegate calls still in it)`);
  }
  const fold = state.memory?.lastFold;
  if (fold) {
    const range = fold.from !== undefined && fold.to !== undefined ? ` from ${stamp(fold.from, context.timeZone)} to ${stamp(fold.to, context.timeZone)}` : "";
    const ids = fold.firstId ? `; ids ${fold.firstId}…${fold.lastId} — ask me to recall("${fold.firstId}") or any id between for an original` : "";
    lines.push(`Last compaction (${fold.reason}, ${stamp(fold.at, context.timeZone)}): folded ${fold.count} messages${range}${ids}.`);
  }
  lines.push(`(${compactNumber(parts.total)} of ${compactNumber(parts.window)} used; /compress compacts now, /pin keeps a fact through compactions)`);
  return lines.join("\n");
}

function stamp(at: number, timeZone: string): string {
  return new Intl.DateTimeFormat("en-GB", { timeZone, dateStyle: "medium", timeStyle: "short" }).format(new Date(at));
}
