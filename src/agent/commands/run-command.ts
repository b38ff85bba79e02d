import type { InboundMessage } from "../../core/channel.js";
import { remindersCommand, requesterOf } from "../../schedule/index.js";
import { freshSessionAfter, type SessionState } from "../../session/state.js";
import type { CompactionScope } from "../context-manager.js";
import type { TurnEngine } from "../turn-engine.js";
import { compactNumber, contextMeter, duration, usd } from "./format.js";
import type { ParsedCommand } from "./parse.js";
import type { ToolDefinition } from "../../core/messages.js";
import { contextCommand, forgetCommand, memoryCommand, pinCommand } from "./memory-commands.js";

export interface CommandContext {
  engine: TurnEngine;
  state: SessionState;
  sessionKey: string;
  scope: CompactionScope;
  now: number;
  /** `/tools`: what this chat can use (the chat's access decides). */
  describeTools(): Promise<string>;
  /** `/context`: the tool definitions this chat's requests carry. */
  toolDefinitions(): Promise<ToolDefinition[]>;
  /** The message that carried the command: who asks, from which chat. */
  entry: InboundMessage;
  /** The chat's time zone (the session's own, else TZ). */
  timeZone: string;
}

export interface CommandOutcome {
  state: SessionState;
  text: string;
  /** `/new`: the old session's transcript is archived. */
  archive?: boolean;
}

export const HELP_TEXT = [
  "I'm longhaul, an assistant built for long conversations: I compact old parts of our chat instead of forgetting them, and can recall details on request.",
  "",
  "Commands:",
  "/new (or /reset) — archive this conversation and start fresh",
  "/compress [focus] — compact the conversation now, optionally focusing the summary on a topic",
  "/status — model, how full the context is, compactions, session age",
  "/usage — tokens used, estimated cost, what compaction saved",
  "/tools — the tools I can use in this chat",
  "/stop — stop what I'm doing",
  "/context — what fills my context (system, tools, memory, pins, summary, messages) and the last compaction",
  "/memory — what I remember here · /memory forget <id|text> · /memory share (in a group: use your memory there too)",
  "/forget <text> — remove it from my memory and from this conversation's context",
  "/pin <text> (or /pin as a reply) — keep a fact word for word through every compaction · /unpin <id>",
  "/reminders — your reminders and scheduled tasks (cancel, pause, resume, edit them); ask me in words to set one",
  "/help — this message",
].join("\n");

export async function runCommand(command: ParsedCommand, context: CommandContext): Promise<CommandOutcome> {
  const { state, engine } = context;
  switch (command.name) {
    case "help":
    case "start":
      return { state, text: HELP_TEXT };
    case "new":
    case "reset": {
      return { state: freshSessionAfter(state, context.now), text: "Started a new conversation. The previous one is archived.", archive: true };
    }
    case "stop": {
      const stopped = state.engine.lastTurnAborted === true;
      delete state.engine.lastTurnAborted;
      return { state, text: stopped ? "Stopped." : "Nothing is running right now." };
    }
    case "status":
      return { state, text: await statusText(context) };
    case "usage":
      return { state, text: usageText(state, engine.prices) };
    case "tools":
      return { state, text: await context.describeTools() };
    case "reminders": {
      if (!engine.schedule) return { state, text: "Reminders are not available here." };
      return { state, text: await remindersCommand(engine.schedule, requesterOf(context.entry, context.timeZone), command.args) };
    }
    case "memory":
    case "forget":
    case "pin":
    case "unpin": {
      if (!engine.memory) return { state, text: "Memory is not available here." };
      if (command.name === "memory") return { state, text: await memoryCommand(engine.memory, context, command.args) };
      if (command.name === "forget") return { state, text: await forgetCommand(engine.memory, context, command.args) };
      if (command.name === "pin") return { state, text: pinCommand(engine.memory, context, command.args) };
      return { state, text: engine.memory.unpin(state, command.args) };
    }
    case "context":
      return { state, text: await contextCommand(context) };
    case "compress": {
      if (state.live.filter((message) => message.role !== "system").length < 2) {
        return { state, text: "There is nothing to compress yet." };
      }
      const result = await engine.context.compactNow(state, state.live, command.args || undefined, context.scope);
      state.live = result.context;
      return { state, text: result.summary };
    }
  }
}

async function statusText({ engine, state, sessionKey, now }: CommandContext): Promise<string> {
  const window = engine.context.contextWindow(state);
  const tokens = engine.context.countContext(state, state.live);
  const transcriptLength = await engine.transcriptLength(sessionKey);
  return [
    `Model: ${engine.llm.model}`,
    `Context: ${contextMeter(tokens, window)}`,
    `Messages: ${state.live.length} in context, ${transcriptLength} in the full transcript`,
    `Compactions: ${state.stats.compactions}`,
    `Session age: ${duration(now - state.createdAt)}`,
  ].join("\n");
}

export function usageText(state: SessionState, prices: TurnEngine["prices"]): string {
  const stats = state.stats;
  const uncached = Math.max(0, stats.promptTokens - stats.cachedTokens);
  const cost = (uncached * prices.input + stats.cachedTokens * prices.cachedInput + stats.completionTokens * prices.output) / 1_000_000;
  const summarizerTotal = stats.summarizerPromptTokens + stats.summarizerCompletionTokens;
  const cachedShare = stats.promptTokens > 0 ? Math.round((stats.cachedTokens / stats.promptTokens) * 100) : 0;
  const priced = prices.input + prices.cachedInput + prices.output > 0;
  return [
    `Tokens in: ${compactNumber(stats.promptTokens)} (cached ${compactNumber(stats.cachedTokens)}, ${cachedShare}%) · out: ${compactNumber(stats.completionTokens)}`,
    `Turns: ${stats.turns} · LLM steps: ${stats.steps}`,
    priced ? `Estimated cost: ${usd(cost)}` : "Estimated cost: unknown (set LLM_PRICE_INPUT, LLM_PRICE_CACHED_INPUT, LLM_PRICE_OUTPUT)",
    stats.compactions > 0
      ? `Compaction: ${stats.compactions} compaction(s) removed ${compactNumber(stats.compactionTokensSaved)} tokens from the context; the summarizer used ${compactNumber(summarizerTotal)} tokens`
      : "Compaction: none so far",
  ].join("\n");
}
