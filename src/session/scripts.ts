/**
 * Lua scripts: each runs atomically in Redis, which is what makes "persist before ack", "begin
 * the turn" and "end the turn" all-or-nothing even if a process dies or stalls mid-way. Every
 * key a script touches belongs to one session (one hash tag, one Cluster slot); deployment-wide
 * keys are handled outside the scripts (store.ts).
 *
 * Fencing: a turn and a delivery each hold a lease whose value is a token unique to the attempt.
 * A script that writes on behalf of an attempt first checks that the lease holds its token —
 * or is free, since then no one else can be writing (an expired lease nobody took is taken
 * back). Any other holder means the attempt was superseded and writes nothing.
 */

import { PREVIEW_RECORDED } from "./previews.js";

/** KEYS: seen, inbox. ARGV: entry JSON, dedupe TTL s. → 1 stored, 0 duplicate. */
export const APPEND_INBOX = `
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', tonumber(ARGV[2])) then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  return 1
end
return 0`;

/** Shared helper: the platform of the outbox head (for the per-platform delivery queue), or ''. */
const HEAD_PLATFORM = `
local function headPlatform(outboxKey)
  local head = redis.call('LINDEX', outboxKey, 0)
  if not head then return '' end
  local ok, decoded = pcall(cjson.decode, head)
  if ok and type(decoded) == 'table' and type(decoded.target) == 'table' and type(decoded.target.platform) == 'string' then
    return decoded.target.platform
  end
  return ''
end`;

/**
 * Begins a turn in one step: take the lease, clear a stale abort flag, claim the batch (inbox →
 * pending; `one` takes a single message, and only when nothing is pending) and read the state,
 * all from one consistent snapshot. A retry of an attempt that died gets the same pending batch
 * plus what arrived since. Nothing to do: the lease is not taken, unless `hold` asks for it (a
 * turn with work of its own, such as an approval's timeout). Begun again by the attempt that
 * holds the lease (it waited for the rest of a paste), it claims what arrived meanwhile and
 * keeps an abort flag raised since. A session that moved away (move-session.ts) is never begun
 * here, and neither is one whose move waits for the running turn to end.
 *
 * The claim carries the last commit's token with the version (END_TURN's lineage fence).
 *
 * KEYS: lease, abort, inbox, pending, state, version, outbox, moving, live, last-commit.
 * ARGV: token, lease TTL ms, 'all' | 'one', hold '1' | '0'.
 * → {'busy', PTTL} | {'moved', tombstone} | {'idle', outbox length, outbox platform}
 *   | {'claimed', outbox length, outbox platform, version, last commit token or '',
 *      state JSON or '', L, L live messages, entry, entry, …}
 */
export const BEGIN_TURN = `${HEAD_PLATFORM}
local version = redis.call('GET', KEYS[6])
if version and not tonumber(version) then return {'moved', version} end
if redis.call('EXISTS', KEYS[8]) == 1 then return {'busy', redis.call('PTTL', KEYS[8])} end
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then
  return {'busy', redis.call('PTTL', KEYS[1])}
end
if ARGV[3] == 'one' then
  if redis.call('LLEN', KEYS[4]) == 0 then
    local item = redis.call('LPOP', KEYS[3])
    if item then redis.call('RPUSH', KEYS[4], item) end
  end
else
  local items = redis.call('LRANGE', KEYS[3], 0, -1)
  for i = 1, #items do redis.call('RPUSH', KEYS[4], items[i]) end
  if #items > 0 then redis.call('DEL', KEYS[3]) end
end
local outbox = redis.call('LLEN', KEYS[7])
local platform = headPlatform(KEYS[7])
local batch = redis.call('LRANGE', KEYS[4], 0, -1)
if #batch == 0 and ARGV[4] ~= '1' then
  if holder then redis.call('DEL', KEYS[1]) end
  return {'idle', outbox, platform}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
if holder ~= ARGV[1] then redis.call('DEL', KEYS[2]) end
local live = redis.call('LRANGE', KEYS[9], 0, -1)
local reply = {'claimed', outbox, platform, version or '0', redis.call('GET', KEYS[10]) or '', redis.call('GET', KEYS[5]) or '', #live}
for i = 1, #live do reply[#reply + 1] = live[i] end
for i = 1, #batch do reply[#reply + 1] = batch[i] end
return reply`;

/**
 * Ends a turn: the fenced commit. Writes only if the lease holds this attempt's token (or is
 * free) AND the version is the one the turn began from AND the turn's claim is still this
 * store's: the last commit is the one the turn began after (same lineage, not just the same
 * number) and every claimed entry is still pending. Redis replicates asynchronously, so a
 * master that failed over — frozen, then woken as a stale master for a moment, or killed —
 * may have answered BEGIN_TURN with a claim its replica, now the master, never received: there
 * the claimed messages still wait in the inbox at the same version, and a commit would answer
 * them, leave them waiting, and have them answered again ('stale': nothing written; the
 * messages stay for the next turn). Then it stores the state (without its live
 * context), updates the live list (keeps its first K entries, appends L), appends the
 * transcript, queues the replies, removes exactly the claimed entries from pending (never a
 * message another attempt claimed), releases the lease, and reports what is left to do.
 * Re-sent after a lost reply, it answers 'done' instead of committing twice.
 *
 * KEYS: lease, last-commit, version, state, transcript, transcript index, pending, outbox,
 *       inbox, archive, archive index, live.
 * ARGV: token, expected version, state JSON, archive '1'|'0', archive TTL ms (0 keeps it),
 *       T transcript count, C claimed count, K live entries kept (-1: all), L live entries
 *       appended, last commit token the turn began after ('' none), then T message ids,
 *       T transcript entries, C claimed entries (as claimed), L live entries, then outbox entries.
 * → {'committed' | 'done', version, inbox length, pending length, outbox length, outbox platform}
 *   | {'lost'} | {'conflict', current version, or -1 when the session moved away} | {'stale', current version}
 */
export const END_TURN = `${HEAD_PLATFORM}
local token = ARGV[1]
local function report(status, version)
  return {status, version, redis.call('LLEN', KEYS[9]), redis.call('LLEN', KEYS[7]), redis.call('LLEN', KEYS[8]), headPlatform(KEYS[8])}
end
local holder = redis.call('GET', KEYS[1])
if holder ~= token then
  if redis.call('GET', KEYS[2]) == token then return report('done', tonumber(redis.call('GET', KEYS[3]) or '0')) end
  if holder then return {'lost'} end
end
local current = tonumber(redis.call('GET', KEYS[3]) or '0')
-- Not a number: the session moved away (a tombstone, move-session.ts); nothing lands here.
if current == nil then return {'conflict', -1} end
if current ~= tonumber(ARGV[2]) then return {'conflict', current} end
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[10] then return {'stale', current} end
local count = tonumber(ARGV[6])
local claimed = tonumber(ARGV[7])
local base = 10
if claimed > 0 then
  local held = {}
  for _, entry in ipairs(redis.call('LRANGE', KEYS[7], 0, -1)) do held[entry] = (held[entry] or 0) + 1 end
  for i = base + 2 * count + 1, base + 2 * count + claimed do
    if (held[ARGV[i]] or 0) == 0 then return {'stale', current} end
    held[ARGV[i]] = held[ARGV[i]] - 1
  end
end
if ARGV[4] == '1' then
  local ttl = tonumber(ARGV[5])
  if redis.call('EXISTS', KEYS[5]) == 1 then
    redis.call('RENAME', KEYS[5], KEYS[10])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[10], ttl) end
  end
  if redis.call('EXISTS', KEYS[6]) == 1 then
    redis.call('RENAME', KEYS[6], KEYS[11])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[11], ttl) end
  end
end
redis.call('SET', KEYS[4], ARGV[3])
redis.call('SET', KEYS[3], current + 1)
local keep = tonumber(ARGV[8])
local live = tonumber(ARGV[9])
for i = 1, count do
  local length = redis.call('RPUSH', KEYS[5], ARGV[base + count + i])
  redis.call('HSET', KEYS[6], ARGV[base + i], length - 1)
end
for i = base + 2 * count + 1, base + 2 * count + claimed do redis.call('LREM', KEYS[7], 1, ARGV[i]) end
local at = base + 2 * count + claimed
if keep == 0 then redis.call('DEL', KEYS[12]) elseif keep > 0 then redis.call('LTRIM', KEYS[12], 0, keep - 1) end
for i = at + 1, at + live do redis.call('RPUSH', KEYS[12], ARGV[i]) end
for i = at + live + 1, #ARGV do redis.call('RPUSH', KEYS[8], ARGV[i]) end
redis.call('SET', KEYS[2], token)
redis.call('DEL', KEYS[1])
return report('committed', current + 1)`;

/**
 * Keeps a lease alive: renews it while it holds this token (or takes it back if it expired and
 * nobody took it), and reads the abort flag when one is given.
 * KEYS: lease[, abort]. ARGV: token, TTL ms. → 'lost' | '' | the abort reason.
 */
export const HEARTBEAT = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 'lost' end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
if KEYS[2] then return redis.call('GET', KEYS[2]) or '' end
return ''`;

/** KEYS: lease. ARGV: token. Releases the lease only if this token holds it. */
export const RELEASE_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** KEYS: lease, abort. ARGV: reason, TTL ms. Flags an abort only while a turn holds the lease. */
export const REQUEST_ABORT = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('SET', KEYS[2], ARGV[1], 'PX', tonumber(ARGV[2]))
  return 1
end
return 0`;

/**
 * Shared by the delivery scripts: the reply id of an outbox entry. Read without trusting the
 * entry to decode: an entry cjson refuses (a lone surrogate's escape, written before text was
 * made well-formed on the way in) must never fail the script that would move it on — that was
 * the poison pill that blocked a session's outbox for good.
 */
export const REPLY_ID_OF = `
local function replyIdOf(entry)
  local ok, decoded = pcall(cjson.decode, entry)
  if ok and type(decoded) == 'table' and type(decoded.replyId) == 'string' then return decoded.replyId, decoded end
  return string.match(entry, '"replyId":"([^"]*)"'), nil
end`;

/**
 * Shared by the delivery scripts: the outbox head, the part to resume from, the outbox's length
 * (the head included), and for a head with a live preview to take over (from part 0) whether
 * that preview has a record (PREVIEW_RECORDED: 0 closes it). Progress is `<replyId>:<next part>`
 * and counts only for the reply it names, so a stale value left by another reply can never skip
 * a part of this one.
 */
export const OUTBOX_HEAD = `${PREVIEW_RECORDED}${REPLY_ID_OF}
local function headWithProgress(outboxKey, progressKey, previewsKey)
  local head = redis.call('LINDEX', outboxKey, 0)
  if not head then return nil end
  local reply = nil
  local fromPart = 0
  local progress = redis.call('GET', progressKey)
  if progress then
    local replyId, part = string.match(progress, '^(.*):(%d+)$')
    if replyId ~= nil then
      local headId
      headId, reply = replyIdOf(head)
      if replyId == headId then fromPart = tonumber(part) end
    end
  end
  local recorded = 0
  if fromPart == 0 and string.find(head, '"preview":', 1, true) then
    if not reply then
      local _
      _, reply = replyIdOf(head)
    end
    if reply and type(reply.preview) == 'string' then recorded = previewRecorded(previewsKey, reply.preview) end
  end
  return {'head', head, fromPart, redis.call('LLEN', outboxKey), recorded}
end`;

/**
 * Begins a delivery: takes the session's delivery lease and returns the outbox head with the
 * part to resume from. Empty outbox: the lease is not taken.
 * KEYS: delivery lease, outbox, progress, previews. ARGV: token, TTL ms.
 * → {'busy', lease PTTL} | {'empty'} | {'head', reply JSON, from part, outbox length, preview recorded 1|0}
 */
export const BEGIN_DELIVERY = `${OUTBOX_HEAD}
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return {'busy', redis.call('PTTL', KEYS[1])} end
local head = headWithProgress(KEYS[2], KEYS[3], KEYS[4])
if not head then
  if holder then redis.call('DEL', KEYS[1]) end
  return {'empty'}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return head`;

/**
 * Records that part `next − 1` of the outbox head went out, fenced by the delivery lease and
 * checked against the head's reply id.
 * KEYS: delivery lease, outbox, progress. ARGV: token, reply id, next part, TTL ms.
 * → 1 recorded | 0 the lease belongs to another delivery | -1 the head is another reply.
 */
export const RECORD_PART = `${REPLY_ID_OF}
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
local head = redis.call('LINDEX', KEYS[2], 0)
if not head or replyIdOf(head) ~= ARGV[2] then return -1 end
redis.call('SET', KEYS[3], ARGV[2] .. ':' .. ARGV[3])
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[4]))
return 1`;

/**
 * Pops the outbox head once the reply `ARGV[2]` is done (sent, or refused for good), then
 * returns the next head like BEGIN_DELIVERY; an empty outbox releases the lease and reports
 * whether messages wait (the session is idle, for settling it in the same round trip).
 * KEYS: delivery lease, outbox, progress, inbox, pending, previews. ARGV: token, reply id, TTL ms.
 * → {'lost'} | {'empty', inbox length + pending length} | {'head', reply JSON, from part, outbox length, preview recorded 1|0}
 */
export const FINISH_REPLY = `${OUTBOX_HEAD}
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return {'lost'} end
local head = redis.call('LINDEX', KEYS[2], 0)
if head and replyIdOf(head) == ARGV[2] then
  redis.call('LPOP', KEYS[2])
  redis.call('DEL', KEYS[3])
end
local next = headWithProgress(KEYS[2], KEYS[3], KEYS[6])
if not next then
  redis.call('DEL', KEYS[1])
  return {'empty', redis.call('LLEN', KEYS[4]) + redis.call('LLEN', KEYS[5])}
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[3]))
return next`;

/**
 * What a session still has to do, for the sweeper and for settling.
 * KEYS: inbox, pending, outbox, lease, delivery lease.
 * → {inbox length, pending length, outbox length, lease held 1|0, delivery lease held 1|0, outbox platform}
 */
export const SESSION_WORK = `${HEAD_PLATFORM}
return {redis.call('LLEN', KEYS[1]), redis.call('LLEN', KEYS[2]), redis.call('LLEN', KEYS[3]),
  redis.call('EXISTS', KEYS[4]), redis.call('EXISTS', KEYS[5]), headPlatform(KEYS[3])}`;

/**
 * Moves one session from the wave-1 layout (`<prefix>:s:<sessionKey>:*`) to the hash-tagged one.
 * Runs only on a single Redis (wave 1 never ran on a Cluster), so its keys may span slots.
 * Waiting messages (wave-1 pending, then inbox) go ahead of any newer inbox entries; wave-1
 * replies go ahead of newer ones; state and transcript move as they are unless the session
 * already has new-layout state, in which case the old transcript becomes an archive.
 *
 * KEYS: legacy state, version, transcript, transcript-index, inbox, pending, outbox,
 *       outbox-progress, lease, abort; new state, version, transcript, transcript index, inbox,
 *       outbox, outbox progress, archive (of the legacy session id), archive index.
 * → {messages moved, replies moved, 1 if state moved | 2 if archived | 0}
 */
export const MIGRATE_SESSION = `
local waiting = redis.call('LRANGE', KEYS[6], 0, -1)
local inbox = redis.call('LRANGE', KEYS[5], 0, -1)
for i = 1, #inbox do waiting[#waiting + 1] = inbox[i] end
for i = #waiting, 1, -1 do redis.call('LPUSH', KEYS[15], waiting[i]) end
local outbox = redis.call('LRANGE', KEYS[7], 0, -1)
for i = #outbox, 1, -1 do redis.call('LPUSH', KEYS[16], outbox[i]) end
local progress = redis.call('GET', KEYS[8])
if progress and #outbox > 0 and redis.call('EXISTS', KEYS[17]) == 0 then
  redis.call('SET', KEYS[17], cjson.decode(outbox[1]).replyId .. ':' .. progress)
end
local stateMoved = 0
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then
  if redis.call('EXISTS', KEYS[11]) == 0 and redis.call('EXISTS', KEYS[12]) == 0 then
    for i = 1, 4 do
      if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('RENAME', KEYS[i], KEYS[10 + i]) end
    end
    stateMoved = 1
  else
    if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('RENAME', KEYS[3], KEYS[18]) end
    if redis.call('EXISTS', KEYS[4]) == 1 then redis.call('RENAME', KEYS[4], KEYS[19]) end
    stateMoved = 2
  end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10])
return {#waiting, #outbox, stateMoved}`;
