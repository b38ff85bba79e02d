/**
 * Moves everything a session owns to another session key, atomically: when a Telegram group is
 * upgraded to a supergroup its chat id changes for good, and weeks of context (transcript, live
 * context, settings, archives, queued messages and replies) must follow it.
 *
 * Every key name comes from `sessionKeys()` (never a hard-coded layout): each string key of
 * the old session is renamed to the same key of the new one, and each per-id key family
 * (archives: `archive(id)`) is found with SCAN on its pattern and renamed id by id. Queued
 * entries (inbox, pending batch, outbox) name their session and chat, so they are rewritten to
 * the new ones. One Lua script does it all, after checking that nothing changed since the
 * entries were read (the version, and each rewritten list), so a commit racing the move makes it
 * retry instead of losing anything. The old version key is left as a tombstone: a turn still
 * running for the old key can no longer commit there (its version check fails), and no turn
 * begins there again (BEGIN_TURN answers 'moved').
 *
 * Fenced against a running turn: while the old session's turn lease is held, the script refuses
 * ('busy'), marks the session as moving (no new turn begins) and asks the running turn to stop
 * at its next step boundary, as a busy-mode interrupt does: nothing of it is committed, its batch
 * stays pending and moves with the session, whose next turn answers it. The move retries until
 * the lease is free. A delivery is not waited for (it may be the caller: a reply refused with
 * "group chat was upgraded" moves the chat); its progress is fenced by the outbox head.
 *
 * Leases, abort flags and dedupe ids stay: they belong to the old key (a platform re-delivery of
 * an old chat's message still finds its dedupe id there). The script touches keys of two
 * sessions; with the session store on Redis Cluster the two keys' hash tags differ (each key
 * follows `<prefix>:{<sessionKey>}:…`), so this move works on a single Redis only and would need
 * a cross-slot copy there (docs/telegram.md).
 */
import type { Redis } from "ioredis";
import type { ChatMoveResult } from "../core/channel.js";
import { globalKeys, sessionKeys, type SessionKeys } from "./keys.js";
import { runScript } from "./run-script.js";
import { globEscape, scanAll } from "./scan.js";

/** The old key's version says where the session went, for a day (stale workers, late re-deliveries). */
const TOMBSTONE_TTL_SECONDS = 24 * 3_600;
const TOMBSTONE_PREFIX = "moved:";
const MAX_ATTEMPTS = 5;
/** How long the move waits for a running turn to stop (it is asked to at once; a heartbeat is 250 ms). */
const DEFAULT_WAIT_FOR_TURN_MS = 8_000;
/** The moving mark outlives a dead mover by this much at most; each retry renews it. */
const MOVING_TTL_MS = 5_000;

/**
 * Keys not moved: leases, the abort flag and the moving mark belong to the old key's holders and
 * the last committed token to its attempts; dedupe ids stay with the old chat's message ids.
 */
const NOT_MOVED = new Set<string>(["lease", "deliveryLease", "abort", "moving", "lastCommit", "seen"]);
/** Lists whose JSON entries name their session and chat. */
const REWRITTEN = ["inbox", "pending", "outbox"] as const satisfies ReadonlyArray<keyof SessionKeys>;

export interface SessionMoveRequest {
  fromSessionKey: string;
  toSessionKey: string;
  /** Queued entries addressed to this chat are re-addressed to `toChatId`. */
  fromChatId: string;
  toChatId: string;
}

export interface SessionMoveOutcome {
  result: ChatMoveResult;
  /** What the moved session still has to do (its turn and delivery jobs must be enqueued). */
  work: { inbox: number; pending: number; outbox: number };
}

/** A running turn held the old session's lease for longer than the move waits. */
export class SessionBusyError extends Error {
  override readonly name = "SessionBusyError";
}

/**
 * KEYS: old version, work set, old lease, old abort flag, old moving mark, old last commit,
 *       then N pairs (old key, new key).
 * ARGV: tombstone value, tombstone TTL s, expected version ('' if none), old session key,
 *       new session key, N, M lists; per list: pair index, count c, c expected entries,
 *       c rewritten entries; then the moving mark's TTL ms.
 * → {'busy', lease PTTL} | {status} | {'moved', counts of the rewritten lists}
 */
const MOVE_SESSION = `
local version = redis.call('GET', KEYS[1])
if version and string.sub(version, 1, ${TOMBSTONE_PREFIX.length}) == '${TOMBSTONE_PREFIX}' then return {'already-moved'} end
local movingTtl = tonumber(ARGV[#ARGV])
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('SET', KEYS[5], '1', 'PX', movingTtl)
  redis.call('SET', KEYS[4], 'interrupt', 'PX', movingTtl)
  return {'busy', redis.call('PTTL', KEYS[3])}
end
if (version or '') ~= ARGV[3] then return {'changed'} end
local pairs_count = tonumber(ARGV[6])
local any = false
for i = 0, pairs_count - 1 do
  if redis.call('EXISTS', KEYS[7 + 2 * i]) == 1 then any = true end
  if redis.call('EXISTS', KEYS[8 + 2 * i]) == 1 then
    redis.call('DEL', KEYS[5])
    return {'target-exists'}
  end
end
if not any then
  redis.call('DEL', KEYS[5])
  return {'nothing'}
end
local lists = tonumber(ARGV[7])
local at = 8
local plan = {}
for l = 1, lists do
  local pair = tonumber(ARGV[at])
  local count = tonumber(ARGV[at + 1])
  local current = redis.call('LRANGE', KEYS[7 + 2 * pair], 0, -1)
  if #current ~= count then return {'changed'} end
  for i = 1, count do
    if current[i] ~= ARGV[at + 1 + i] then return {'changed'} end
  end
  plan[l] = { pair = pair, first = at + 2 + count, count = count }
  at = at + 2 + 2 * count
end
for i = 0, pairs_count - 1 do
  if redis.call('EXISTS', KEYS[7 + 2 * i]) == 1 then redis.call('RENAME', KEYS[7 + 2 * i], KEYS[8 + 2 * i]) end
end
local counts = {}
for l = 1, lists do
  local step = plan[l]
  local target = KEYS[8 + 2 * step.pair]
  redis.call('DEL', target)
  for i = 0, step.count - 1 do redis.call('RPUSH', target, ARGV[step.first + i]) end
  counts[l] = step.count
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', tonumber(ARGV[2]))
redis.call('DEL', KEYS[4], KEYS[5], KEYS[6])
redis.call('SREM', KEYS[2], ARGV[4])
local work = 0
for l = 1, lists do work = work + counts[l] end
if work > 0 then redis.call('SADD', KEYS[2], ARGV[5]) end
return {'moved', unpack(counts)}`;

export async function moveSession(redis: Redis, prefix: string, request: SessionMoveRequest, options: { waitForTurnMs?: number } = {}): Promise<SessionMoveOutcome> {
  const from = sessionKeys(prefix, request.fromSessionKey);
  const to = sessionKeys(prefix, request.toSessionKey);
  const waitUntil = Date.now() + (options.waitForTurnMs ?? DEFAULT_WAIT_FOR_TURN_MS);
  const tombstone = TOMBSTONE_PREFIX + JSON.stringify({ sessionKey: request.toSessionKey, chatId: request.toChatId } satisfies MovedTo);
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; ) {
    const version = await redis.get(from.version);
    const pairs = await keyPairs(redis, from, to);
    const lists: Array<{ pair: number; expected: string[]; rewritten: string[]; name: (typeof REWRITTEN)[number] }> = [];
    for (const name of REWRITTEN) {
      const pair = pairs.findIndex(([source]) => source === from[name]);
      if (pair < 0) continue;
      const expected = await redis.lrange(from[name], 0, -1);
      lists.push({ pair, expected, rewritten: expected.map((entry) => readdress(entry, request)), name });
    }
    const reply = (await runScript(redis,
      MOVE_SESSION,
      6 + pairs.length * 2,
      from.version, globalKeys(prefix).workSet, from.lease, from.abort, from.moving, from.lastCommit, ...pairs.flat(),
      tombstone, TOMBSTONE_TTL_SECONDS, version ?? "", request.fromSessionKey, request.toSessionKey,
      pairs.length, lists.length,
      ...lists.flatMap((list) => [list.pair, list.expected.length, ...list.expected, ...list.rewritten]),
      MOVING_TTL_MS,
    )) as [string, ...number[]];
    const [status, ...counts] = reply;
    if (status === "busy") {
      // A turn runs on the old key: it was asked to stop; no new one begins meanwhile.
      if (Date.now() >= waitUntil) throw new SessionBusyError(`a turn of ${request.fromSessionKey} still runs; its move to ${request.toSessionKey} is retried later`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(250, Math.max(20, Number(counts[0] ?? 0)))));
      continue;
    }
    attempt++;
    if (status === "changed") continue;
    const count = (name: (typeof REWRITTEN)[number]) => {
      const index = lists.findIndex((list) => list.name === name);
      return index < 0 ? 0 : Number(counts[index] ?? 0);
    };
    return { result: status as ChatMoveResult, work: { inbox: count("inbox"), pending: count("pending"), outbox: count("outbox") } };
  }
  throw new Error(`session ${request.fromSessionKey} kept changing; its move to ${request.toSessionKey} is retried later`);
}

/** Where a moved session went, as its tombstone says. */
interface MovedTo {
  sessionKey: string;
  chatId: string;
}

function parseTombstone(value: string | null): MovedTo | undefined {
  if (!value?.startsWith(TOMBSTONE_PREFIX)) return undefined;
  try {
    const parsed = JSON.parse(value.slice(TOMBSTONE_PREFIX.length)) as Partial<MovedTo>;
    return typeof parsed.sessionKey === "string" && typeof parsed.chatId === "string" ? { sessionKey: parsed.sessionKey, chatId: parsed.chatId } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * KEYS: old version, old inbox, new inbox. ARGV: count c, c expected entries, c rewritten entries.
 * → number forwarded, or -1 when the old inbox changed meanwhile.
 */
const FORWARD_LATE = `
if string.sub(redis.call('GET', KEYS[1]) or '', 1, ${TOMBSTONE_PREFIX.length}) ~= '${TOMBSTONE_PREFIX}' then return 0 end
local count = tonumber(ARGV[1])
local current = redis.call('LRANGE', KEYS[2], 0, -1)
if #current ~= count then return -1 end
for i = 1, count do
  if current[i] ~= ARGV[1 + i] then return -1 end
end
for i = 1, count do redis.call('RPUSH', KEYS[3], ARGV[1 + count + i]) end
if count > 0 then redis.call('DEL', KEYS[2]) end
return count`;

/**
 * Messages that reached a session after it moved (a late re-delivery addressed to the old chat)
 * are forwarded to the session it moved to, re-addressed, so they are answered there.
 * → the new session key and how many were forwarded, or undefined when the session did not move.
 */
export async function forwardToMovedSession(redis: Redis, prefix: string, sessionKey: string): Promise<{ toSessionKey: string; forwarded: number } | undefined> {
  const from = sessionKeys(prefix, sessionKey);
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const movedTo = parseTombstone(await redis.get(from.version));
    if (!movedTo) return undefined;
    const expected = await redis.lrange(from.inbox, 0, -1);
    const rewritten = expected.map((raw) => {
      const chatId = (JSON.parse(raw) as { chatId?: unknown }).chatId;
      return readdress(raw, { fromSessionKey: sessionKey, toSessionKey: movedTo.sessionKey, fromChatId: String(chatId), toChatId: movedTo.chatId });
    });
    const forwarded = Number(await runScript(redis, FORWARD_LATE, 3, from.version, from.inbox, sessionKeys(prefix, movedTo.sessionKey).inbox, expected.length, ...expected, ...rewritten));
    if (forwarded >= 0) return { toSessionKey: movedTo.sessionKey, forwarded };
  }
  throw new Error(`the inbox of moved session ${sessionKey} kept changing; forwarding is retried later`);
}

/** (old, new) for every key the old session has or may have. */
async function keyPairs(redis: Redis, from: SessionKeys, to: SessionKeys): Promise<Array<[string, string]>> {
  const pairs: Array<[string, string]> = [];
  const seen = new Set<string>();
  for (const [name, value] of Object.entries(from) as Array<[keyof SessionKeys, unknown]>) {
    if (NOT_MOVED.has(name) || typeof value !== "string") continue;
    pairs.push([value, to[name] as string]);
    seen.add(value);
  }
  for (const [name, value] of Object.entries(from) as Array<[keyof SessionKeys, unknown]>) {
    if (NOT_MOVED.has(name) || typeof value !== "function") continue;
    const family = value as (id: string) => string;
    const target = to[name] as (id: string) => string;
    const marker = "\u0000";
    const [head = "", tail = ""] = family(marker).split(marker);
    for (const key of await scanAll(redis, `${globEscape(head)}*${globEscape(tail)}`)) {
      if (seen.has(key) || !key.startsWith(head) || !key.endsWith(tail)) continue;
      seen.add(key);
      pairs.push([key, target(key.slice(head.length, key.length - tail.length))]);
    }
  }
  return pairs;
}

/** An inbox, pending or outbox entry re-addressed to the new session and chat. */
function readdress(raw: string, request: SessionMoveRequest): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return raw;
  }
  if (entry.sessionKey === request.fromSessionKey) entry.sessionKey = request.toSessionKey;
  if (entry.chatId === request.fromChatId) entry.chatId = request.toChatId;
  const target = entry.target as Record<string, unknown> | undefined;
  if (target && target.chatId === request.fromChatId) entry.target = { ...target, chatId: request.toChatId };
  return JSON.stringify(entry);
}
