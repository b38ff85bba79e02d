/** Which tools a turn may use (access.tools looks at the chat and the speakers), and for whom they act. */
import type { InboundMessage, Platform, ReplyTarget } from "../core/channel.js";
import type { ToolDefinition } from "../core/messages.js";
import type { Logger } from "../logger.js";
import type { SessionState } from "../session/state.js";
import { ToolRegistry, withoutApprovals, type ToolScope } from "../tools/index.js";
import type { ToolPorts } from "./ports.js";

/** The tool access of a turn answering `entries` (access.tools looks at the chat and the speakers). */
export function toolScopeOf(sessionKey: string, entries: readonly InboundMessage[], target: ReplyTarget): ToolScope {
  const last = entries[entries.length - 1];
  return {
    sessionKey,
    platform: target.platform,
    chatId: last?.chatId ?? target.chatId,
    ...(last?.parentChatId ? { parentChatId: last.parentChatId } : {}),
    userIds: entries.map((entry) => entry.userId),
  };
}

/**
 * The message whose speaker the tools act for in a turn answering `entries` (issue 29 item 8):
 * the model answers them all at once, so it cannot be told which message a call answers, and
 * text planted by one speaker must not act with another's rights. With one speaker that is
 * their latest message; with several, the latest message of a speaker who is not an admin
 * (admins may change anyone's reminders and answer anyone's approval); only a batch of admins
 * acts as its last. The chosen speaker owns what the tools create and must answer an approval.
 */
export function actingEntry<T extends InboundMessage>(entries: readonly T[], admins: Partial<Record<Platform, readonly string[]>>): T | undefined {
  const isAdmin = (entry: T) => (admins[entry.platform] ?? []).includes(entry.userId);
  return entries.findLast((entry) => !isAdmin(entry)) ?? entries.at(-1);
}

/**
 * The tools a chat turn under `scope` offers: the catalogue's for the chat and its speakers (MCP
 * servers connected as a turn connects them). One step waits for approval at a time: while one
 * waits, the tools that would ask again are left out. /compress and idle compaction offer the
 * same, so their thresholds and the memory flush's cached prefix are the turn's (issue #31).
 */
export async function turnTools(engine: Pick<ToolPorts, "tools">, state: SessionState, scope: ToolScope, log: Logger): Promise<ToolRegistry> {
  const { tools } = await engine.tools.forTurn(scope, log);
  return state.pendingApproval ? new ToolRegistry(withoutApprovals(tools.list())) : tools;
}

/**
 * The tool definitions the chat's next turn would offer, for the speakers of its latest chat
 * turn (`state.toolScope`); undefined (the built-ins) when no chat turn recorded one. Used where
 * no message says who asks (idle compaction, its scheduling after a commit).
 */
export async function latestTurnToolDefinitions(engine: Pick<ToolPorts, "tools">, sessionKey: string, state: SessionState, log: Logger): Promise<ToolDefinition[] | undefined> {
  const platform = state.lastTarget?.platform;
  if (!platform || !state.toolScope) return undefined;
  return (await turnTools(engine, state, { sessionKey, platform, ...state.toolScope }, log)).definitions();
}
