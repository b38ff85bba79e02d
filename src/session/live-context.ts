/**
 * How a session's state is stored: the state key without the live context, and the live context
 * as a list of its own (one JSON message per entry), written by the commit as a change against
 * the list the turn loaded.
 */
import { wellFormedJson } from "../core/text.js";
import type { ChatMessage } from "../core/messages.js";
import { newSessionState, type SessionState } from "./state.js";

/**
 * What the state key holds: the session state without its live context, which is a list of its
 * own (the `live` key, one message per entry). A state written before that split still carries
 * `live` inline; it loads as it is, and its first commit moves the context into the list.
 */
export type StoredState = Omit<SessionState, "live"> & { live?: ChatMessage[] };

export function readState(raw: string, live: readonly string[], version: number, now: number): SessionState {
  if (raw === "") return newSessionState(now, version);
  const stored = JSON.parse(raw) as StoredState;
  // The inline format (before the split): its list is empty until the first commit.
  if (Array.isArray(stored.live) && live.length === 0) return stored as SessionState;
  return {
    ...stored,
    live: live.map((entry) => {
      const message = JSON.parse(entry) as ChatMessage;
      loadedLive.set(message, { json: entry, tokens: message.tokens });
      return message;
    }),
  };
}

/**
 * Each live message as loaded → its stored JSON and its token cache at the time. Messages are
 * never changed in place except for that cache (context/tokens.ts), so a message still holding
 * the same cache object is still its stored JSON, and the commit compares it without
 * serializing the whole context again.
 */
const loadedLive = new WeakMap<ChatMessage, { json: string; tokens: ChatMessage["tokens"] }>();

/**
 * How the stored live list becomes `next`: keep its first `keep` entries (-1: all of them) and
 * append the rest. Messages are compared as stored (JSON), so a turn that only appended writes
 * only its new messages; compaction, which replaces the head, rewrites the list.
 */
export function liveChange(stored: readonly string[], next: readonly ChatMessage[]): { keep: number; append: string[] } {
  const append: string[] = [];
  let keep = 0;
  for (const message of next) {
    const loaded = loadedLive.get(message);
    const json = loaded !== undefined && loaded.tokens === message.tokens ? loaded.json : wellFormedJson(message);
    if (append.length === 0 && keep < stored.length && stored[keep] === json) keep++;
    else append.push(json);
  }
  return { keep: keep === stored.length ? -1 : keep, append };
}

/** The transcript keeps messages as they were; token caches belong to the live context. */
export function stripTokenCache(message: ChatMessage): ChatMessage {
  if (message.tokens === undefined) return message;
  const { tokens: _tokens, ...rest } = message;
  return rest as ChatMessage;
}
