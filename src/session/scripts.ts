/**
 * Lua scripts: each runs atomically in Redis, which is what makes "persist before ack",
 * "claim the inbox" and "commit the turn" all-or-nothing even if a process dies mid-way.
 */

/** KEYS: seen, inbox, workSet. ARGV: message JSON, dedupe TTL s, session key. → 1 new, 0 duplicate. */
export const APPEND_INBOX = `
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', tonumber(ARGV[2])) then
  redis.call('RPUSH', KEYS[2], ARGV[1])
  redis.call('SADD', KEYS[3], ARGV[3])
  return 1
end
return 0`;

/**
 * KEYS: inbox, pending. ARGV: 'all' | 'one'. Moves inbox messages into the pending batch
 * (kept until the turn commits, so a crashed turn is retried with the same messages) and
 * returns the batch. 'one' (busy mode queue) takes one message per turn.
 */
export const CLAIM_INBOX = `
if ARGV[1] == 'one' then
  if redis.call('EXISTS', KEYS[2]) == 0 then
    local item = redis.call('LPOP', KEYS[1])
    if item then redis.call('RPUSH', KEYS[2], item) end
  end
else
  local items = redis.call('LRANGE', KEYS[1], 0, -1)
  for i = 1, #items do redis.call('RPUSH', KEYS[2], items[i]) end
  if #items > 0 then redis.call('DEL', KEYS[1]) end
end
return redis.call('LRANGE', KEYS[2], 0, -1)`;

/**
 * KEYS: state, version, transcript, pending, outbox, archive, transcript index, archive index.
 * ARGV: expected version, state JSON, clear pending '1'|'0', archive '1'|'0', archive TTL ms
 *       (0 keeps it forever), transcript count N, then N message ids, then N transcript
 *       entries, then outbox entries.
 * → the new version, or -1 when another commit got there first.
 */
export const COMMIT_TURN = `
local current = tonumber(redis.call('GET', KEYS[2]) or '0')
if current ~= tonumber(ARGV[1]) then return -1 end
if ARGV[4] == '1' then
  local ttl = tonumber(ARGV[5])
  if redis.call('EXISTS', KEYS[3]) == 1 then
    redis.call('RENAME', KEYS[3], KEYS[6])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[6], ttl) end
  end
  if redis.call('EXISTS', KEYS[7]) == 1 then
    redis.call('RENAME', KEYS[7], KEYS[8])
    if ttl > 0 then redis.call('PEXPIRE', KEYS[8], ttl) end
  end
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('SET', KEYS[2], current + 1)
local count = tonumber(ARGV[6])
for i = 1, count do
  local length = redis.call('RPUSH', KEYS[3], ARGV[6 + count + i])
  redis.call('HSET', KEYS[7], ARGV[6 + i], length - 1)
end
for i = 7 + 2 * count, #ARGV do redis.call('RPUSH', KEYS[5], ARGV[i]) end
if ARGV[3] == '1' then redis.call('DEL', KEYS[4]) end
return current + 1`;

/** KEYS: outbox, progress. ARGV: reply id. Pops the head if it is that reply. */
export const POP_OUTBOX = `
local head = redis.call('LINDEX', KEYS[1], 0)
if head and cjson.decode(head).replyId == ARGV[1] then
  redis.call('LPOP', KEYS[1])
  redis.call('DEL', KEYS[2])
  return 1
end
return 0`;

/** KEYS: inbox, pending, outbox, workSet. ARGV: session key. Drops an idle session from the work set. */
export const SETTLE = `
if redis.call('LLEN', KEYS[1]) == 0 and redis.call('EXISTS', KEYS[2]) == 0 and redis.call('LLEN', KEYS[3]) == 0 then
  redis.call('SREM', KEYS[4], ARGV[1])
  return 1
end
return 0`;

/** KEYS: lease. ARGV: token, ttl ms. Takes or renews the lease if free or ours. */
export const ACQUIRE_LEASE = `
local holder = redis.call('GET', KEYS[1])
if not holder or holder == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
  return 1
end
return 0`;

/** KEYS: lease. ARGV: token. Releases the lease only if we still hold it. */
export const RELEASE_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
