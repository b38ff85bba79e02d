/** Which tools a turn may use (access.tools looks at the chat and the speakers), and for whom they act. */
import type { InboundMessage, Platform, ReplyTarget } from "../core/channel.js";
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
