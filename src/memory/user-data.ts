/**
 * A user's data rights: everything longhaul keeps about one person, exported or deleted
 * (`npm run admin -- delete-user <platform:id>`). What belongs to a user: their memory, every
 * session whose conversation is theirs (their private chats, found by the memory owner each
 * session records, plus the platforms' DM keys), with its transcript, archives, tool outputs,
 * dedupe and queue keys; their pairing request and rate counters; what they scheduled; and the
 * consent they gave groups (`/memory share`). Messages they wrote in groups belong to those
 * groups' conversations and stay (docs/memory.md).
 */
import type { Redis } from "ioredis";
import type { Platform } from "../core/channel.js";
import type { ChatMessage } from "../core/messages.js";
import { deleteLimits } from "../budget/limits-cache.js";
import { globalKeys, sessionKeys } from "../session/keys.js";
import { runScript } from "../session/run-script.js";
import { globEscape, scanAll, unlinkKeys } from "../session/scan.js";
import { memoryKeys, userRef } from "./owner.js";
import { COMPARE_AND_SET, MemoryStore, type MemoryDoc } from "./store.js";

export interface UserRef {
  platform: Platform;
  userId: string;
}

export interface DeleteUserReport {
  sessions: string[];
  keysDeleted: number;
  scheduledItems: number;
}

/** What `delete-user` needs of the scheduler (src/schedule ScheduleService). */
export interface UserItems {
  removeUserItems(platform: Platform, userId: string): Promise<number>;
}

/** The private-chat session keys a platform gives a user, whether or not a session recorded its owner. */
export function directSessionKeys(user: UserRef): string[] {
  if (user.platform === "telegram") return [`tg:${user.userId}`];
  if (user.platform === "discord") return [`dc:dm:${user.userId}`];
  return [];
}

/** Every session whose conversation belongs to the user (their private chats). */
export async function userSessions(redis: Redis, prefix: string, user: UserRef): Promise<string[]> {
  const found = new Set<string>();
  for (const key of directSessionKeys(user)) {
    if ((await scanAll(redis, `${globEscape(`${prefix}:{${key}}:`)}*`)).length > 0) found.add(key);
  }
  const head = `${prefix}:{`;
  for (const key of await scanAll(redis, `${globEscape(head)}*}:state`)) {
    const sessionKey = key.slice(head.length, key.length - "}:state".length);
    const raw = await redis.get(key);
    if (raw === null) continue;
    try {
      const owner = (JSON.parse(raw) as { memory?: { owner?: { scope?: string; platform?: string; userId?: string } } }).memory?.owner;
      if (owner?.scope === "user" && owner.platform === user.platform && owner.userId === user.userId) found.add(sessionKey);
    } catch {
      // Not a session state of ours: left alone.
    }
  }
  return [...found].sort();
}

export interface UserExport {
  user: string;
  exportedAt: string;
  memory: MemoryDoc;
  sessions: Array<{ sessionKey: string; transcript: ChatMessage[]; archives: Array<{ sessionId: string; transcript: ChatMessage[] }> }>;
}

/** Everything of the user's own, as JSON-ready data: memory, and each private conversation with its archives. */
export async function exportUserData(redis: Redis, prefix: string, user: UserRef, now = Date.now()): Promise<UserExport> {
  const memory = await new MemoryStore(redis, prefix).read({ scope: "user", ...user });
  const sessions: UserExport["sessions"] = [];
  for (const sessionKey of await userSessions(redis, prefix, user)) {
    const keys = sessionKeys(prefix, sessionKey);
    const read = async (key: string) => (await redis.lrange(key, 0, -1)).map((item) => JSON.parse(item) as ChatMessage);
    const archiveHead = keys.archive("\u0000").split("\u0000")[0]!;
    const archives: UserExport["sessions"][number]["archives"] = [];
    for (const key of (await scanAll(redis, `${globEscape(archiveHead)}*`)).sort()) {
      if (key.endsWith(":index")) continue;
      archives.push({ sessionId: key.slice(archiveHead.length), transcript: await read(key) });
    }
    sessions.push({ sessionKey, transcript: await read(keys.transcript), archives });
  }
  return { user: userRef(user.platform, user.userId), exportedAt: new Date(now).toISOString(), memory, sessions };
}

/** Deletes every key of the user (see the header). Idempotent. */
export async function deleteUserData(redis: Redis, prefix: string, user: UserRef, schedule?: UserItems): Promise<DeleteUserReport> {
  const store = new MemoryStore(redis, prefix);
  const owner = { scope: "user" as const, ...user };
  const ref = userRef(user.platform, user.userId);
  // Consent given to groups goes with the memory: each group forgets the reference.
  for (const sessionKey of (await store.read(owner)).sharedWith ?? []) {
    await store.update({ scope: "chat", sessionKey }, (doc) => ({ ok: true, doc: { ...doc, sharedBy: (doc.sharedBy ?? []).filter((entry) => entry !== ref) } }));
    await dropSnapshot(redis, sessionKeys(prefix, sessionKey).state);
  }
  const sessions = await userSessions(redis, prefix, user);
  const global = globalKeys(prefix);
  const doomed = new Set<string>([memoryKeys(prefix).user(user.platform, user.userId), global.pairingUser(user.platform, user.userId)]);
  const pairing = await redis.hget(global.pairingUser(user.platform, user.userId), "code");
  if (pairing) doomed.add(global.pairingCode(pairing));
  for (const key of await scanAll(redis, `${globEscape(`${prefix}:rate:${user.platform}:${user.userId}:`)}*`)) doomed.add(key);
  // Spending counters (src/budget): accounts `user:<platform>:<id>` and `chat:<sessionKey>`.
  const short = user.platform === "telegram" ? "tg" : user.platform === "discord" ? "dc" : user.platform;
  const accounts = [...new Set([`user:${user.platform}:${user.userId}`, `user:${short}:${user.userId}`, ...sessions.map((sessionKey) => `chat:${sessionKey}`)])];
  for (const account of accounts) {
    for (const key of await scanAll(redis, `${globEscape(global.budget(account, ""))}*`)) doomed.add(key);
  }
  for (const sessionKey of sessions) {
    for (const key of await scanAll(redis, `${globEscape(`${prefix}:{${sessionKey}}:`)}*`)) doomed.add(key);
    // Queue deduplication keys name the session (`<prefix>:<queue>:de:turn/<sessionKey>`).
    for (const key of await scanAll(redis, `${globEscape(`${prefix}:`)}*:de:*${globEscape(sessionKey)}`)) doomed.add(key);
    await redis.srem(global.workSet, sessionKey);
  }
  let keysDeleted = 0;
  // The limits an admin set for these accounts, each with its publish (src/budget/limits-cache.ts).
  for (const account of accounts) keysDeleted += await deleteLimits(redis, prefix, account);
  const list = [...doomed];
  keysDeleted += await unlinkKeys(redis, list);
  const scheduledItems = schedule ? await schedule.removeUserItems(user.platform, user.userId) : 0;
  return { sessions, keysDeleted, scheduledItems };
}

/**
 * A group's stored snapshot may quote the user's shared memory: it goes, and the group's next
 * turn takes a new one. (A turn of that group running at this very moment commits the state it
 * loaded; its snapshot is retaken at its next compaction or /new — docs/memory.md.)
 */
async function dropSnapshot(redis: Redis, stateKey: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const raw = await redis.get(stateKey);
    if (raw === null) return;
    const state = JSON.parse(raw) as { memory?: { snapshot?: string } };
    if (state.memory?.snapshot === undefined) return;
    delete state.memory.snapshot;
    if ((await runScript(redis, COMPARE_AND_SET, 1, stateKey, raw, JSON.stringify(state))) === 1) return;
  }
}

