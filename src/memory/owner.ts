/**
 * Whose memory a conversation reads and writes. A private chat (DM) reads its person's *user*
 * memory; a group, channel or thread reads its own *chat* memory, plus the user memory of
 * people who allowed it there with `/memory share` sent in that chat. Nothing else ever reaches
 * a request: a user's memory never enters a group by default (docs/memory.md).
 */
import type { MessageOrigin, Platform } from "../core/channel.js";
import type { MemoryOwner } from "../core/memory.js";
import { sessionKeys } from "../session/keys.js";

export type { MemoryOwner };

/** The memory a message's conversation owns: the speaker's in a DM, the chat's elsewhere. */
export function ownerOf(origin: Pick<MessageOrigin, "chatType" | "platform" | "userId" | "sessionKey">): MemoryOwner {
  return origin.chatType === "private"
    ? { scope: "user", platform: origin.platform, userId: origin.userId }
    : { scope: "chat", sessionKey: origin.sessionKey };
}

/** `telegram:42` — how admins and `sharedBy` name a user. */
export const userRef = (platform: string, userId: string) => `${platform}:${userId}`;

export function parseUserRef(ref: string): { platform: Platform; userId: string } | undefined {
  const cut = ref.indexOf(":");
  const platform = ref.slice(0, cut);
  const userId = ref.slice(cut + 1);
  if (cut <= 0 || userId === "" || (platform !== "telegram" && platform !== "discord" && platform !== "console")) return undefined;
  return { platform, userId };
}

/**
 * Redis keys. A user's memory sits under the user's own hash tag, `{user:<platform>:<id>}`,
 * with nothing of any session; a chat's memory under its session's tag, so that moving the
 * session (a Telegram group upgraded to a supergroup) carries it along.
 */
export const memoryKeys = (prefix: string) => ({
  user: (platform: string, userId: string) => `${prefix}:{user:${platform}:${userId}}:memory`,
  chat: (sessionKey: string) => sessionKeys(prefix, sessionKey).memory,
});

export function ownerKey(prefix: string, owner: MemoryOwner): string {
  const keys = memoryKeys(prefix);
  return owner.scope === "user" ? keys.user(owner.platform, owner.userId) : keys.chat(owner.sessionKey);
}

export function sameOwner(a: MemoryOwner, b: MemoryOwner): boolean {
  return a.scope === "user" && b.scope === "user"
    ? a.platform === b.platform && a.userId === b.userId
    : a.scope === "chat" && b.scope === "chat" && a.sessionKey === b.sessionKey;
}
