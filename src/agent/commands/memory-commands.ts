/**
 * `/memory`, `/forget`, `/pin`, `/unpin`: long-term memory, shown and steered by the user
 * (issue #16).
 */
import { messageOrigin } from "../../core/channel.js";
import type { ChatMessage } from "../../core/messages.js";
import { memoryOf, type MemoryService } from "../../memory/index.js";
import type { CommandContext } from "./command-context.js";

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
