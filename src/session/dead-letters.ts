/**
 * Dead letters (SPEC §12 "Nothing blocks a session for good"): an item that keeps failing — an
 * outbox reply the platform or our own code cannot get out — is moved aside after bounded
 * attempts into the session's `dead-letters` list (kept for the operator: `npm run admin --
 * dead-letters`), a short notice takes its place at the head of the outbox, and everything
 * behind it flows. The one home of dead letters: the admin CLI lists them with `listDeadLetters`.
 */
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import type { OutboundReply } from "../core/channel.js";
import { wellFormedDeep, wellFormedJson } from "../core/text.js";
import { sessionKeys } from "./keys.js";
import { runScript } from "./run-script.js";
import { scanAll } from "./scan.js";
import { OUTBOX_HEAD } from "./scripts.js";

/** Dead letters kept per session (the oldest go first). */
export const DEAD_LETTERS_KEPT = 100;

export interface DeadLetter {
  /** Names the letter within its session for retry and drop: the first 12 hex digits of the stored entry's SHA-1. */
  id: string;
  sessionKey: string;
  kind: "reply";
  /** The item as it was queued (an OutboundReply for `reply`). */
  item: unknown;
  error: string;
  attempts: number;
  at: number;
}

/**
 * Counts a failed attempt at the outbox head `ARGV[2]`, fenced by the delivery lease. Under the
 * limit: the count is kept (it follows the reply id, so another reply starts from zero) and the
 * caller retries. At the limit: the head moves to the dead letters (as stored: no decode, so
 * even an entry cjson refuses moves), the notice takes its place, and the new head is returned
 * as by FINISH_REPLY.
 * KEYS: delivery lease, outbox, progress, failures, dead letters, inbox, pending, previews.
 * ARGV: token, reply id, limit, error, now, notice JSON, lease TTL ms, dead letters kept.
 * → {'lost'} | {'retry', attempts} | {'head', …} | {'empty', waiting} (as FINISH_REPLY)
 */
const FAIL_REPLY = `${OUTBOX_HEAD}
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return {'lost'} end
local head = redis.call('LINDEX', KEYS[2], 0)
if not head or replyIdOf(head) ~= ARGV[2] then return {'retry', 0} end
local attempts = 1
local failures = redis.call('GET', KEYS[4])
if failures then
  local replyId, count = string.match(failures, '^(.*):(%d+)$')
  if replyId == ARGV[2] then attempts = tonumber(count) + 1 end
end
if attempts < tonumber(ARGV[3]) then
  redis.call('SET', KEYS[4], ARGV[2] .. ':' .. attempts)
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[7]))
  return {'retry', attempts}
end
redis.call('LPOP', KEYS[2])
redis.call('DEL', KEYS[3], KEYS[4])
redis.call('RPUSH', KEYS[5], cjson.encode({kind = 'reply', item = head, error = ARGV[4], attempts = attempts, at = tonumber(ARGV[5])}))
redis.call('LTRIM', KEYS[5], -tonumber(ARGV[8]), -1)
redis.call('LPUSH', KEYS[2], ARGV[6])
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[7]))
return headWithProgress(KEYS[2], KEYS[3], KEYS[8])`;

export type FailOutcome =
  | { status: "lost" }
  /** Under the limit: retry (attempts so far; 0 when the head is no longer this reply). */
  | { status: "retry"; attempts: number }
  /** Moved aside: the raw step that follows (the notice is the head). */
  | { status: "dead-lettered"; next: unknown[] };

/** What the chat is told in place of a reply that could not be delivered. */
export function undeliverableNotice(reply: OutboundReply): OutboundReply {
  return {
    replyId: `${reply.replyId}:undeliverable`,
    sessionKey: reply.sessionKey,
    target: reply.target,
    text: "⚠️ One of my replies here could not be delivered; it is kept for the operator. Ask again if you need it.",
    inReplyTo: reply.inReplyTo,
    kind: "notice",
  };
}

export async function failReply(
  redis: Redis, prefix: string, token: string, reply: OutboundReply,
  options: { limit: number; error: string; now: number; leaseMs: number },
): Promise<FailOutcome> {
  const keys = sessionKeys(prefix, reply.sessionKey);
  const result = (await runScript(redis, FAIL_REPLY, 8,
    keys.deliveryLease, keys.outbox, keys.outboxProgress, keys.outboxFailures, keys.deadLetters, keys.inbox, keys.pending, keys.previews,
    token, reply.replyId, options.limit, options.error.slice(0, 2_000), options.now, wellFormedJson(undeliverableNotice(reply)), options.leaseMs, DEAD_LETTERS_KEPT,
  )) as unknown[];
  if (result[0] === "lost") return { status: "lost" };
  if (result[0] === "retry") return { status: "retry", attempts: Number(result[1]) };
  return { status: "dead-lettered", next: result };
}

/** The dead letters of one session, or of every session of the deployment (oldest first per session). */
export async function listDeadLetters(redis: Redis, prefix: string, sessionKey?: string): Promise<DeadLetter[]> {
  const listKeys = sessionKey === undefined
    ? (await scanAll(redis, `${prefix}:{*}:dead-letters`)).filter((key, index, all) => all.indexOf(key) === index).sort()
    : [sessionKeys(prefix, sessionKey).deadLetters];
  const letters: DeadLetter[] = [];
  for (const key of listKeys) {
    const owner = /^.*?:\{(.*)\}:dead-letters$/.exec(key)?.[1] ?? "";
    for (const raw of await redis.lrange(key, 0, -1)) {
      const entry = JSON.parse(raw) as { kind: "reply"; item: string; error: string; attempts: number; at: number };
      let item: unknown = entry.item;
      try {
        item = wellFormedDeep(JSON.parse(entry.item) as unknown);
      } catch {
        // Kept as the stored text: the operator still sees what it was.
      }
      letters.push({ id: deadLetterId(raw), sessionKey: owner, kind: entry.kind, item, error: entry.error, attempts: entry.attempts, at: entry.at });
    }
  }
  return letters;
}

/** A letter's id: what `TAKE_LETTER` compares (redis.sha1hex of the stored entry). */
export const deadLetterId = (raw: string) => createHash("sha1").update(raw).digest("hex").slice(0, 12);

/**
 * Takes the letter `ARGV[1]` out of the dead letters; with `ARGV[2]` = 'retry' its item goes back
 * to the tail of the outbox, as it was stored (its failure count and progress were cleared when it
 * was moved aside, so it is sent from its first part again). One script: a letter is never both
 * retried and dropped, nor retried twice.
 * KEYS: dead letters, outbox. → the stored entry, or false when no letter has that id.
 */
const TAKE_LETTER = `
local entries = redis.call('LRANGE', KEYS[1], 0, -1)
for _, raw in ipairs(entries) do
  if string.sub(redis.sha1hex(raw), 1, 12) == ARGV[1] then
    redis.call('LREM', KEYS[1], 1, raw)
    if ARGV[2] == 'retry' then
      local entry = cjson.decode(raw)
      redis.call('RPUSH', KEYS[2], entry.item)
    end
    return raw
  end
end
return false`;

/**
 * Retry (back to the outbox's tail) or drop one dead letter. → the letter taken, or undefined
 * when the session has no letter with that id (already retried or dropped, or trimmed). The
 * caller enqueues the delivery of a retried reply and lists the session as having work.
 */
export async function takeDeadLetter(redis: Redis, prefix: string, sessionKey: string, id: string, mode: "retry" | "drop"): Promise<DeadLetter | undefined> {
  const keys = sessionKeys(prefix, sessionKey);
  const raw = (await runScript(redis, TAKE_LETTER, 2, keys.deadLetters, keys.outbox, id, mode)) as string | null;
  if (raw === null) return undefined;
  const entry = JSON.parse(raw) as { kind: "reply"; item: string; error: string; attempts: number; at: number };
  let item: unknown = entry.item;
  try {
    item = wellFormedDeep(JSON.parse(entry.item) as unknown);
  } catch {
    // The stored text, as listDeadLetters shows it.
  }
  return { id, sessionKey, kind: entry.kind, item, error: entry.error, attempts: entry.attempts, at: entry.at };
}
