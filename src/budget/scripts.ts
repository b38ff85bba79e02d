/**
 * The budget's two Lua scripts (src/budget/meter.ts runs them by SHA): the reserve before an LLM
 * call and the settle after it. Money is in nano-dollars (integers), every key shares the
 * `{budget}` hash slot.
 */
/**
 * One round trip before the call: the admin's limits of both accounts are read here, beside the
 * counters (every key shares the `{budget}` hash slot), and merged over the config's, which the
 * worker resolves itself. Only limited counters are read and reserved from; a counter without a
 * limit is only counted (settle). A counter is given its lifetime once, when this creates it.
 *
 * Each reservation is recorded in the counter it holds from (field `r:<call id>` = `money:tokens:
 * expires at`), so that it cannot double or leak: the same call reserved again (a RESERVE re-sent
 * by ioredis after a reconnect) finds its record and takes nothing more, and a record past its
 * time (a worker killed during its call) is released by the next reserve of that counter.
 *
 * KEYS: the counters (the chat's daily and monthly, then the user's), then each account's limits
 *       hash (`/budget`: `daily.usd` → "5" or "off").
 * ARGV: the estimate (nano-dollars, tokens), then per counter: its account's limits key (index in
 *       KEYS), the period's first field in it (1 daily, 3 monthly), the config's money and token
 *       limits (-1: none), how long a new counter is kept (ms); then the call's id, now and when
 *       its reservation expires (ms).
 * →     {i} refused by counter i (the first without room), or {0, then per counter its money and
 *       token limits as found (-1: none)}: the settle takes them back.
 */
export const RESERVE = `
local estCost = tonumber(ARGV[1])
local estTokens = tonumber(ARGV[2])
local counters = (#ARGV - 5) / 5
local callId = ARGV[#ARGV - 2]
local now = tonumber(ARGV[#ARGV - 1])
local expiresAt = ARGV[#ARGV]
local record = 'r:' .. callId
local admin = {}
local limits = {}
local fresh = {}
local held = {}
local already = false
local function override(raw, configured, scale)
  if raw == 'off' then return -1 end
  local value = raw and tonumber(raw)
  if not value then return configured end
  return math.ceil(value * scale)
end
-- Releases the reservations of this counter that are past their time (their call's worker
-- died); → whether this call's own record is there (it reserved already).
local function reclaim(key)
  local mine = false
  local fields = redis.call('HGETALL', key)
  for f = 1, #fields, 2 do
    if fields[f] == record then mine = true end
    if string.sub(fields[f], 1, 2) == 'r:' then
      local c, t, at = string.match(fields[f + 1], '^(-?%d+):(-?%d+):(%d+)$')
      if at and tonumber(at) <= now then
        redis.call('HINCRBY', key, 'rc', 0 - tonumber(c))
        redis.call('HINCRBY', key, 'rt', 0 - tonumber(t))
        redis.call('HDEL', key, fields[f])
        if fields[f] == record then mine = false end
      end
    end
  end
  return mine
end
for i = 1, counters do
  local at = 2 + (i - 1) * 5
  local account = tonumber(ARGV[at + 1])
  local set = admin[account]
  if not set then
    set = redis.call('HMGET', KEYS[account], 'daily.usd', 'daily.tokens', 'monthly.usd', 'monthly.tokens')
    admin[account] = set
  end
  local field = tonumber(ARGV[at + 2])
  local limitCost = override(set[field], tonumber(ARGV[at + 3]), 1000000000)
  local limitTokens = override(set[field + 1], tonumber(ARGV[at + 4]), 1)
  limits[2 * i - 1] = limitCost
  limits[2 * i] = limitTokens
  if limitCost >= 0 or limitTokens >= 0 then
    if reclaim(KEYS[i]) then already = true end
    local v = redis.call('HMGET', KEYS[i], 'uc', 'ut', 'rc', 'rt')
    held[i] = { (tonumber(v[1]) or 0) + (tonumber(v[3]) or 0), (tonumber(v[2]) or 0) + (tonumber(v[4]) or 0) }
    fresh[i] = not (v[1] or v[2] or v[3] or v[4])
  end
end
if not already then
  for i = 1, counters do
    local cost = held[i] and held[i][1]
    local tokens = held[i] and held[i][2]
    local limitCost = limits[2 * i - 1]
    local limitTokens = limits[2 * i]
    -- Used up, or no room for this call (an estimate of 0 still needs something left).
    if cost and ((limitCost >= 0 and (cost >= limitCost or cost + estCost > limitCost))
      or (limitTokens >= 0 and (tokens >= limitTokens or tokens + estTokens > limitTokens))) then
      return { i }
    end
  end
  for i = 1, counters do
    local takenCost = 0
    local takenTokens = 0
    if limits[2 * i - 1] >= 0 and estCost > 0 then
      redis.call('HINCRBY', KEYS[i], 'rc', estCost)
      takenCost = estCost
    end
    if limits[2 * i] >= 0 and estTokens > 0 then
      redis.call('HINCRBY', KEYS[i], 'rt', estTokens)
      takenTokens = estTokens
    end
    -- Every limited counter keeps the call's record (even of nothing taken): its settle finds it.
    if held[i] then
      redis.call('HSET', KEYS[i], record, takenCost .. ':' .. takenTokens .. ':' .. expiresAt)
      if fresh[i] then redis.call('PEXPIRE', KEYS[i], ARGV[2 + i * 5]) end
    end
  end
end
table.insert(limits, 1, 0)
return limits
`;

/**
 * After the call: releases what the reserve took (its record in each counter: exactly what was
 * taken, whatever the limits say now), counts the real cost on every counter (nothing for a
 * zero), and records the highest warning threshold newly crossed. A settle of a limited call
 * whose records are all gone was settled already (re-sent by ioredis after a reconnect): it
 * counts nothing twice.
 *
 * KEYS: the counters of the reservation. ARGV: the estimate (nano-dollars, tokens), the real cost
 *       (nano-dollars, tokens), then per counter: the money and token limits the reserve found
 *       (-1: none), how long a new counter is kept (ms); then the call's id.
 * →     per counter the threshold newly crossed (50/75/90), else 0.
 */
export const SETTLE = `
local cost = tonumber(ARGV[3])
local tokens = tonumber(ARGV[4])
local record = 'r:' .. ARGV[#ARGV]
-- Per counter: nil nothing written yet, true every field written was absent (the counter may be
-- new: it needs its lifetime), false one was there.
local fresh
local function add(key, field, by)
  if by == 0 then return nil end
  local value = redis.call('HINCRBY', key, field, by)
  if value ~= by then fresh = false elseif fresh == nil then fresh = true end
  return value
end
local crossed = {}
local taken = {}
local limited = false
local found = false
for i, key in ipairs(KEYS) do
  local at = 4 + (i - 1) * 3
  crossed[i] = 0
  -- Records live only in limited counters: an unlimited call's settle reads nothing first.
  if tonumber(ARGV[at + 1]) >= 0 or tonumber(ARGV[at + 2]) >= 0 then
    limited = true
    taken[i] = redis.call('HGET', key, record)
    if taken[i] then found = true end
  end
end
if limited and not found then return crossed end
for i, key in ipairs(KEYS) do
  local at = 4 + (i - 1) * 3
  local limitCost = tonumber(ARGV[at + 1])
  local limitTokens = tonumber(ARGV[at + 2])
  fresh = nil
  if taken[i] then
    local c, t = string.match(taken[i], '^(-?%d+):(-?%d+)')
    add(key, 'rc', 0 - tonumber(c))
    add(key, 'rt', 0 - tonumber(t))
    redis.call('HDEL', key, record)
  end
  local usedCost = add(key, 'uc', cost)
  local usedTokens = add(key, 'ut', tokens)
  if fresh then redis.call('PEXPIRE', key, ARGV[at + 3]) end
  local share = 0
  if limitCost > 0 and usedCost then share = usedCost * 100 / limitCost end
  if limitTokens > 0 and usedTokens then share = math.max(share, usedTokens * 100 / limitTokens) end
  if share >= 50 then
    local reached = 50
    if share >= 90 then reached = 90 elseif share >= 75 then reached = 75 end
    local warned = tonumber(redis.call('HGET', key, 'w') or '0')
    if reached > warned then
      redis.call('HSET', key, 'w', reached)
      crossed[i] = reached
    end
  end
end
return crossed
`;
