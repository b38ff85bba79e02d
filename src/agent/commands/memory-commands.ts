/**
 * `/memory`, `/forget`, `/pin`, `/unpin` and `/context`: long-term memory and the live context,
 * shown and steered by the user (issue #16).
 */
import { messageOrigin } from "../../core/channel.js";
import type { ChatMessage, ToolDefinition } from "../../core/messages.js";
import { memoryOf, systemBlock, type MemoryService } from "../../memory/index.js";
import type { CommandContext } from "./command-context.js";
import { compactNumber, contextMeter } from "../../core/format.js";

/** What `/forget` puts where the forgotten text was in live messages. */
export const FORGOTTEN = "[forgotten]";

export async function memoryCommand(memory: MemoryService, context: CommandContext, args: string): Promise<string> {
  return memory.command(context.state, messageOrigin(context.entry), args);
}

/** `/pin <text>`, or `/pin` sent as a reply: the replied-to text. */
export function pinCommand(memory: MemoryService, context: CommandContext, args: string): string {
  const text = args !== "" ? args : (context.entry.replyTo?.quote || context.entry.replyTo?.text || "");
  return memory.pin(context.state, text);
}

/**
 * `/forget <text>`: removes matching facts from this conversation's memory and matching pins,
 * rewrites the live summary without the text (re-summarized; a literal cut if that fails or
 * misses), and cuts it out of the live messages. The transcript keeps the originals.
 */
export async function forgetCommand(memory: MemoryService, context: CommandContext, args: string): Promise<string> {
  const text = args.trim();
  if (text === "") return "Usage: /forget <text> — removes it from my memory and from this conversation's context.";
  const { state } = context;
  const origin = messageOrigin(context.entry);
  await memory.prepareTurn(state, origin);
  const owner = memoryOf(state).owner!;
  const removed = await memory.remove(owner, text);
  const pinsBefore = memoryOf(state).pins ?? [];
  const pins = pinsBefore.filter((pin) => contains(pin.text, text));
  memoryOf(state).pins = pinsBefore.filter((pin) => !pins.includes(pin));

  let summaries = 0;
  let messages = 0;
  const live: ChatMessage[] = [];
  for (const message of state.live) {
    if (message.role === "system" || message.content === null || !contains(message.content, text)) {
      live.push(message);
      continue;
    }
    if (message.kind === "summary") {
      summaries++;
      const content = await memory.rewriteSummary(message.content, text, context.scope.signal, context.scope.log, context.scope.budget);
      live.push({ ...message, content: cut(content, text), tokens: undefined } as ChatMessage);
    } else {
      messages++;
      live.push({ ...message, content: cut(message.content, text), tokens: undefined } as ChatMessage);
    }
  }
  state.live = live;
  // The user asked for it now: the snapshot is retaken at once, not at the next compaction.
  await memory.refreshSnapshot(state);

  const lines: string[] = [];
  for (const fact of removed) lines.push(`• memory [${fact.id}]: ${fact.text}`);
  for (const pin of pins) lines.push(`• pin [${pin.id}]: ${pin.text}`);
  if (summaries > 0) lines.push("• the summary of earlier turns, rewritten without it");
  if (messages > 0) lines.push(`• ${messages} recent message(s) in my context, with "${text}" cut out`);
  if (lines.length === 0) return `Nothing in my memory or in this conversation's context matches "${text}".`;
  return [`Forgot "${text}":`, ...lines, "The full transcript still holds the original messages; /new starts a conversation without them."].join("\n");
}

const contains = (haystack: string, needle: string) => haystack.toLowerCase().includes(needle.toLowerCase());
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const cut = (content: string, text: string) => content.replace(new RegExp(escape(text), "gi"), FORGOTTEN);

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
