/**
 * Who may use which MCP servers (`access.tools`). A server a chat may not use is never offered
 * to the model there. Without an `access.tools` section every configured server is offered
 * everywhere (a single operator's setup); with one, only what it grants:
 *
 *   default  ∪  chats[this chat]  ∪  (users[speaker] for every speaker of the turn)
 *
 * A chat key matches the session key (`tg:-100123:7` for a topic), its chat (`tg:-100123`)
 * or, for a Discord thread, its parent channel. A user grant applies only when every person
 * whose message the turn answers has it: in a group, one member's grant must not act for another.
 */
import type { ToolAccessConfig } from "../../config/tool-sections.js";
import { platformPrefix, type Platform } from "../core/channel.js";

export interface ToolScope {
  sessionKey: string;
  platform: Platform;
  chatId: string;
  /** The channel of a Discord thread. */
  parentChatId?: string;
  /** The people whose messages the turn answers. */
  userIds: readonly string[];
}

export { platformPrefix };

export function allowedServers(servers: readonly string[], access: ToolAccessConfig | undefined, scope: ToolScope): string[] {
  if (!access) return [...servers];
  return granted(servers, access, scope, true);
}

/**
 * The opt-in built-ins (`fetch_url`) this turn may use: only where `access.tools` names them —
 * never without the section, never through `"*"`; a user grant only when every speaker has it.
 */
export function allowedOptionalTools(names: readonly string[], access: ToolAccessConfig | undefined, scope: ToolScope): string[] {
  if (!access) return [];
  return granted(names, access, scope, false);
}

/** `default` ∪ `chats[this chat]` ∪ what every speaker of the turn holds; `"*"` counts only when `star`. */
function granted(names: readonly string[], access: ToolAccessConfig, scope: ToolScope, star: boolean): string[] {
  const result = new Set<string>();
  const expand = (list: readonly string[] | undefined) => new Set((list ?? []).flatMap((name) => (name === "*" ? (star ? names : []) : [name])));
  const grant = (list: readonly string[] | undefined) => {
    for (const name of expand(list)) result.add(name);
  };
  grant(access.default);
  const prefix = platformPrefix(scope.platform);
  const chatKeys = new Set([scope.sessionKey, `${prefix}:${scope.chatId}`, ...(scope.parentChatId ? [`${prefix}:${scope.parentChatId}`] : [])]);
  for (const key of chatKeys) grant(access.chats[key]);
  const speakers = [...new Set(scope.userIds)];
  if (speakers.length > 0) {
    const perUser = speakers.map((userId) => expand(access.users[`${prefix}:${userId}`]));
    for (const name of perUser[0] ?? []) if (perUser.every((set) => set.has(name))) result.add(name);
  }
  return names.filter((name) => result.has(name));
}
