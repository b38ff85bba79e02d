import { compactNumber, contextMeter, duration, usd } from "../../core/format.js";
import { platformPrefix } from "../../core/channel.js";
import type { QueueStatus } from "../../core/queue-wait.js";
import { budgetAccounts } from "../../budget/accounts.js";
import { budgetCommand } from "../../budget/command.js";
import { budgetLines } from "../../budget/usage.js";
import { isAdmin, mayChangeChat, modelCommand, personaCommand, timeZoneCommand } from "../../models/commands.js";
import type { Prices } from "../../models/catalogue.js";
import { checkinCommand, remindersCommand, requesterOf } from "../../schedule/index.js";
import { freshSessionAfter, type SessionState } from "../../session/state.js";
import type { CommandContext, CommandOutcome } from "./command-context.js";
import { CHECKIN_QUIET_RUNS } from "../checkin-segment.js";
import { exportCommand } from "./export-command.js";
import { contextCommand } from "./context-command.js";
import { voiceCommand } from "./voice-command.js";
import { forgetCommand, memoryCommand, pinCommand } from "./memory-commands.js";
import type { ParsedCommand } from "./parse.js";
import type { ToolDefinition } from "../../core/messages.js";

export const HELP_TEXT = [
  "I'm longhaul, an assistant built for long conversations: I compact old parts of our chat instead of forgetting them, and can recall details on request.",
  "",
  "Commands:",
  "/new (or /reset) — archive this conversation and start fresh",
  "/compress [focus] — compact the conversation now, optionally focusing the summary on a topic",
  "/status — model, how full the context is and where it compacts, compactions, session age, the queue and how long messages wait",
  "/usage — tokens used, estimated cost, what compaction saved",
  "/tools — the tools I can use in this chat",
  "/stop — stop what I'm doing",
  "/context — what fills my context (system, tools, memory, pins, summary, messages) and the last compaction",
  "/memory — what I remember here · /memory forget <id|text> · /memory share (in a group: use your memory there too)",
  "/forget <text> — remove it from my memory and from this conversation's context",
  "/pin <text> (or /pin as a reply) — keep a fact word for word through every compaction · /unpin <id>",
  "/model [name] — the models this chat can use, or switch to one (/model default returns to the default)",
  "/persona [name or text] — how I should come across in this chat (/persona off removes it)",
  "/timezone [zone] — this chat's time zone and local time, or set it (e.g. /timezone Europe/Berlin; /timezone default returns to the default)",
  "Admins: /budget <chat> [daily|monthly <amount>] — see or set a budget; /pair approve CODE — let a new user in",
  "/export — your conversations and memory as files (in a private chat with me)",
  "/reminders — your reminders and scheduled tasks (cancel, pause, resume, edit them); ask me in words to set one",
  "/checkin every 4h [what to watch] — I look at this chat every 4 hours and write only when something is worth it · /checkin off · /checkin on",
  "/voice on|auto|off — answer with voice notes: always, only to a voice note (auto), or never",
  "/help — this message",
].join("\n");

export async function runCommand(command: ParsedCommand, context: CommandContext): Promise<CommandOutcome> {
  const outcome = await outcomeOf(command, context);
  // Changing a chat-wide setting in a group without being its admin: refused, to the asker alone.
  const chatWide = (command.name === "model" && context.engine.models !== undefined) || command.name === "persona" || command.name === "timezone" || command.name === "voice";
  if (chatWide && command.args !== "" && !mayChangeChat(context.entry, context.engine.approval.admins)) return { ...outcome, refused: true };
  return outcome;
}

async function outcomeOf(command: ParsedCommand, context: CommandContext): Promise<CommandOutcome> {
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
    case "usage": {
      const budget = engine.budget ? budgetLines(await engine.budget.status(budgetAccounts(context.sessionKey, context.entry)), context.now) : [];
      return { state, text: [usageText(state, engine.prices), ...budget].join("\n") };
    }
    case "tools":
      return { state, text: await context.describeTools() };
    case "reminders": {
      if (!engine.schedule) return { state, text: "Reminders are not available here." };
      return { state, text: await remindersCommand(engine.schedule, requesterOf(context.entry, context.timeZone), command.args) };
    }
    case "checkin": {
      if (!engine.schedule) return { state, text: "Check-ins are not available here." };
      const outcome = await checkinCommand(engine.schedule, requesterOf(context.entry, context.timeZone), command.args);
      // A started or resumed check-in counts its quiet runs afresh.
      if (outcome.restarted) delete state.engine[CHECKIN_QUIET_RUNS];
      return { state, text: outcome.text };
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
    case "model": {
      const router = engine.models;
      if (!router) return { state, text: `Model: ${engine.llm.model} (no other models are configured).` };
      const text = modelCommand({
        catalogue: router.catalogue, state, entry: context.entry, admins: engine.approval.admins, args: command.args,
        windowOf: (model) => router.bind(model).llm.contextWindow,
      });
      return { state, text };
    }
    case "persona":
      return { state, text: personaCommand({ personas: engine.personas ?? {}, state, entry: context.entry, admins: engine.approval.admins, args: command.args }) };
    case "timezone":
      return {
        state,
        text: timeZoneCommand({ state, entry: context.entry, admins: engine.approval.admins, args: command.args, fallback: engine.timeZone, now: context.now }),
      };
    case "voice":
      return { state, text: voiceCommand({ state, entry: context.entry, admins: engine.approval.admins, args: command.args, available: engine.speech !== undefined }) };
    case "budget": {
      if (!isAdmin(context.entry, engine.approval.admins)) return { state, text: "Only an admin can see or change budgets; /usage shows yours.", refused: true };
      if (!engine.budget) return { state, text: "Budgets are not available here." };
      return { state, text: await budgetCommand({ meter: engine.budget, args: command.args, here: context.sessionKey, now: context.now }) };
    }
    case "pair": {
      if (!isAdmin(context.entry, engine.approval.admins)) return { state, text: "Only an admin can approve pairing requests.", refused: true };
      const code = /^approve\s+(\S+)$/i.exec(command.args)?.[1];
      if (!code || !engine.pairing) return { state, text: "Usage: /pair approve CODE" };
      const request = await engine.pairing.approve(code, `chat:${platformPrefix(context.entry.platform)}:${context.entry.userId}`);
      return {
        state,
        text: request ? `Approved ${request.userName} (${request.platform} user ${request.userId}). They can talk to me now.` : `No pending pairing request with code ${code} (codes expire after an hour).`,
      };
    }
    case "export":
      return { state, ...(await exportCommand(context)) };
    case "compress": {
      if (state.live.filter((message) => message.role !== "system").length < 2) {
        return { state, text: "There is nothing to compress yet." };
      }
      // With the tools a turn here offers: the same threshold and budgets as the turn's, and the
      // memory flush keeps the turn's cached prefix (tools first).
      const scope = { ...context.scope, tools: await context.toolDefinitions() };
      const result = await engine.context.compactNow(state, state.live, command.args || undefined, scope);
      state.live = result.context;
      return { state, text: result.summary };
    }
  }
}

/**
 * How long `/status` waits for the chat's tools (an MCP server still connecting, at most its
 * `connect_timeout_ms`); past it, or when the lookup fails, it counts the built-ins and says so.
 */
export const STATUS_TOOLS_WAIT_MS = 2_000;

/** The tools a turn of the asker here offers (`turnTools`), or undefined (the built-ins) when they do not come in time. */
async function statusTools(context: CommandContext): Promise<ToolDefinition[] | undefined> {
  const lookup = context.toolDefinitions();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, STATUS_TOOLS_WAIT_MS, undefined)));
  try {
    return await Promise.race([lookup, late]);
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
    // Left behind after the wait: the connection goes on for the next turn; its outcome is not ours.
    lookup.catch(() => undefined);
  }
}

async function statusText(context: CommandContext): Promise<string> {
  const { engine, state, sessionKey, now } = context;
  const window = engine.context.contextWindow(state);
  // Measured as the chat's next turn measures it: with the tools a turn of the asker here offers
  // (MCP servers, opt-in built-ins), which count toward both the context and the threshold.
  const tools = await statusTools(context);
  const tokens = engine.context.countContext(state, state.live, tools);
  const threshold = engine.context.thresholdTokens(state, state.live, tools);
  const number = (value: number) => value.toLocaleString("en-US");
  const counted = tools
    ? `with the ${tools.length} tool${tools.length === 1 ? "" : "s"} your turns here get`
    : "with the built-in tools only: this chat's other tools could not be listed in time";
  const transcriptLength = await engine.transcriptLength(sessionKey);
  // The catalogue's name of the chat's model, and the id the endpoint knows it by.
  const name = engine.models?.catalogue.active(state.chat?.model).name;
  return [
    `Model: ${name !== undefined && name !== engine.llm.model ? `${name} (${engine.llm.model})` : engine.llm.model}`,
    `Context: ${contextMeter(tokens, window)}`,
    `Compacts at: ${number(threshold)} tokens (now ${number(tokens)}, ${counted})`,
    `Messages: ${state.live.length} in context, ${transcriptLength} in the full transcript`,
    `Compactions: ${state.stats.compactions}`,
    `Session age: ${duration(now - state.createdAt)}`,
    ...(engine.queue ? [queueLine(await engine.queue.status())] : []),
  ].join("\n");
}

/** "Queue: 3 waiting, 40 running · wait p50 0.2 s, p99 1.8 s (last 5 min, 812 messages)": the backlog, and how long messages waited before their turn began. */
export function queueLine(status: QueueStatus): string {
  const seconds = (ms: number) => `${(ms / 1_000).toFixed(ms < 10_000 ? 1 : 0)} s`;
  const head = `Queue: ${status.waiting} waiting, ${status.running} running`;
  if (!status.recent) return head;
  const { p50Ms, p99Ms, windowMs, messages } = status.recent;
  return `${head} · wait p50 ${seconds(p50Ms)}, p99 ${seconds(p99Ms)} (last ${Math.round(windowMs / 60_000)} min, ${messages} message${messages === 1 ? "" : "s"}, this worker)`;
}

export function usageText(state: SessionState, prices: Prices): string {
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
