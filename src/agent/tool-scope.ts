/** Which tools a turn may use: access.tools looks at the chat and the speakers. */
import type { InboundMessage, ReplyTarget } from "../core/channel.js";
import type { ToolScope } from "../tools/index.js";

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
