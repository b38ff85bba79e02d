/**
 * The durable record of live previews (docs/streaming.md): one hash per session, under the
 * session's hash tag, field = preview id (the reply id of the answer it streams). It says
 * where the preview message is and who may touch it, so that
 * - the final answer always takes over the preview (edits it) instead of sending a second
 *   message, on whichever gateway delivers it, also after a crash mid-final;
 * - no interim edit can land over the final: the final waits while an edit is in flight, and no
 *   edit starts once the final took the preview, or began waiting for it;
 * - no preview appears after its final: a preview the final found missing is closed for good.
 *
 * States: `creating` (a gateway is sending the preview message; `lost` when its answer was
 * lost and the message may exist unseen, until a late answer names it) → `open` (message id known) →
 * `final` (the final took it: only the final edits it now); `closed` (the final found no
 * preview: none may be created any more); `gone` (the platform refused to edit it for good: the
 * final was sent as a new message). Times come from Redis (`TIME`), so gateways' clocks do not
 * matter. Every write renews the hash's TTL; settled fields are pruned after an hour.
 */
import type { Redis } from "ioredis";
import { sessionKeys } from "./keys.js";
import { runScript } from "./run-script.js";

const RECORD_TTL_MS = 24 * 60 * 60 * 1000;
const SETTLED_KEEP_MS = 60 * 60 * 1000;
/** A gateway that rendered a preview keeps rendering it this long after its last edit; then anyone may. */
const OWNER_STICKY_MS = 10_000;

/** A closed record written without a TAKE prunes the settled ones when the hash holds a multiple of this many fields. */
const PRUNE_EVERY_FIELDS = 16;

/** Lua: drops the settled records (final, closed, gone) of `key` older than SETTLED_KEEP_MS, but `keep`'s. */
const PRUNE_SETTLED = `
local function pruneSettled(key, keep, now)
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local ok, other = pcall(cjson.decode, all[i + 1])
    if all[i] ~= keep and ok and type(other) == 'table' and (other.s == 'final' or other.s == 'closed' or other.s == 'gone')
      and type(other.t) == 'number' and other.t < now - ${SETTLED_KEEP_MS} then
      redis.call('HDEL', key, all[i])
    end
  end
end`;

const COMMON = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function load()
  local raw = redis.call('HGET', KEYS[1], ARGV[1])
  if not raw then return nil end
  return cjson.decode(raw)
end
local function save(rec)
  rec.t = now
  redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(rec))
  redis.call('PEXPIRE', KEYS[1], ${RECORD_TTL_MS})
end`;

/**
 * Lua, for the delivery scripts that hand out the outbox head (scripts.ts): whether the final's
 * preview has a record that `take` must look at (1), or none — then it is closed at once, as
 * TAKE closes it, so no preview can appear after its final (0). A turn quicker than
 * STREAMING_DELAY_MS published nothing, so none of its attempts can have shown a preview: its
 * final costs no TAKE round trip. A preview being created has its record (`creating`) before
 * the platform sees it; one whose update is still on its way is refused by the closed record.
 */
export const PREVIEW_RECORDED = `${PRUNE_SETTLED}
local function previewRecorded(key, previewId)
  local raw = redis.call('HGET', key, previewId)
  if raw then
    local ok, rec = pcall(cjson.decode, raw)
    if ok and type(rec) == 'table' and (rec.s == 'closed' or rec.s == 'gone') then return 0 end
    return 1
  end
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  -- No TAKE prunes a session whose finals all come quick: the closed records are pruned here
  -- (one per such final otherwise, for as long as the session lives), once per PRUNE_EVERY_FIELDS
  -- fields, so that a busy session's final does not read the whole hash each time.
  local fields = redis.call('HLEN', key)
  if fields > 0 and fields % ${PRUNE_EVERY_FIELDS} == 0 then pruneSettled(key, previewId, now) end
  redis.call('HSET', key, previewId, cjson.encode({s = 'closed', t = now}))
  redis.call('PEXPIRE', key, ${RECORD_TTL_MS})
  return 0
end`;

/** ARGV: preview id, owner, hold ms. → {'create'} | {'edit', message id} | {'busy'} | {'closed'} */
const CLAIM = `${COMMON}
local rec = load()
local hold = tonumber(ARGV[3])
if not rec then
  save({s = 'creating', o = ARGV[2], u = now + hold, k = now + hold})
  return {'create'}
end
-- A final waits for the write in flight (TAKE found it busy): no other write starts before it.
if rec.w then return {'closed'} end
if rec.s == 'creating' or rec.s == 'lost' then
  if rec.s == 'lost' or rec.o == ARGV[2] or rec.u < now then
    rec.s = 'creating'; rec.o = ARGV[2]; rec.u = now + hold; rec.k = now + hold
    save(rec)
    return {'create'}
  end
  return {'busy'}
end
if rec.s == 'open' then
  if rec.o ~= ARGV[2] and (rec.u > now or rec.k > now) then return {'busy'} end
  rec.o = ARGV[2]; rec.u = now + hold; rec.k = now + hold + ${OWNER_STICKY_MS}
  save(rec)
  return {'edit', rec.m}
end
return {'closed'}`;

/** ARGV: preview id, owner, message id. → 1 recorded | 0 the final came first (delete the message). */
const OPENED = `${COMMON}
local rec = load()
if not rec or rec.s ~= 'creating' or rec.o ~= ARGV[2] then return 0 end
rec.s = 'open'; rec.m = ARGV[3]; rec.u = 0; rec.k = now + ${OWNER_STICKY_MS}
save(rec)
return 1`;

/** ARGV: preview id, owner. An edit (or a failed create) is over. */
const RELEASE = `${COMMON}
local rec = load()
if not rec or rec.o ~= ARGV[2] then return 0 end
if rec.s == 'creating' then
  -- A final waits for this create: none may start after it (the final sends itself).
  if rec.w then save({s = 'closed'}) else redis.call('HDEL', KEYS[1], ARGV[1]) end
  return 1
end
if rec.s == 'open' then
  rec.u = 0; rec.k = now + ${OWNER_STICKY_MS}
  save(rec)
end
return 1`;

/**
 * ARGV: preview id, owner. A create whose answer was lost (a timeout or reset after the request
 * went out): the platform may have made the message. The record stays, as `lost`, so the next
 * create (Discord: the same nonce returns that message) or the final (which asks the platform
 * for it, then deletes it) can find it.
 */
const LOST = `${COMMON}
local rec = load()
if not rec or rec.o ~= ARGV[2] or rec.s ~= 'creating' then return 0 end
rec.s = 'lost'; rec.u = 0
save(rec)
return 1`;

/**
 * ARGV: preview id, owner, message id. A create recorded `lost` was answered after all, late:
 * while the record is still `lost` (no create since, no final yet) the message becomes the
 * preview (→ 1); otherwise another message or the final stands in its place, and the caller
 * deletes this one (→ 0).
 */
const ARRIVED = `${COMMON}
local rec = load()
if not rec or rec.s ~= 'lost' then return 0 end
rec.s = 'open'; rec.m = ARGV[3]; rec.o = ARGV[2]; rec.u = 0; rec.k = now + ${OWNER_STICKY_MS}
save(rec)
return 1`;

/**
 * ARGV: preview id, owner. An interim edit is over (answered, or failed). When the final took the
 * preview meanwhile (the edit outlived its hold: a stalled gateway), the edit may have landed
 * over the final: → {'reassert', what the final left} when the final recorded it (the
 * renderer puts it back), else {'late'} after marking the record, so the final, when it records
 * what it left, puts it back itself. Otherwise as RELEASE: → {'ok'}.
 */
const EDITED = `${COMMON}
local rec = load()
if not rec then return {'ok'} end
if rec.s == 'final' then
  if rec.x then return {'reassert', rec.x} end
  rec.l = 1
  save(rec)
  return {'late'}
end
if rec.o ~= ARGV[2] then return {'ok'} end
if rec.s == 'open' then
  rec.u = 0; rec.k = now + ${OWNER_STICKY_MS}
  save(rec)
end
return {'ok'}`;

/**
 * ARGV: preview id, what the final left in the preview message ('' = deleted it, else the text
 * it edited in). → 1 when an interim edit reported landing after the final took the preview:
 * the final puts itself back.
 */
const SHOWN = `${COMMON}
local rec = load()
if not rec or rec.s ~= 'final' then return 0 end
rec.x = ARGV[2]
local late = rec.l
rec.l = nil
save(rec)
if late then return 1 end
return 0`;

/**
 * The final takes the preview. ARGV: preview id.
 * → {'edit', message id} | {'none'} | {'busy', ms to wait} | {'lost'} (a create's answer was
 * lost: the platform may show a message whose id nobody knows)
 */
export const TAKE = `${COMMON}${PRUNE_SETTLED}
pruneSettled(KEYS[1], ARGV[1], now)
local rec = load()
if not rec then
  save({s = 'closed'})
  return {'none'}
end
if rec.s == 'lost' then
  rec.s = 'final'
  save(rec)
  return {'lost'}
end
if rec.s == 'creating' or rec.s == 'open' then
  if rec.u > now then
    -- The write in flight is the last: CLAIM refuses the next one (the renderer's latest
    -- update, due at the chat's interval), so the final takes the preview as soon as it ends.
    if not rec.w then
      rec.w = 1
      save(rec)
    end
    return {'busy', rec.u - now}
  end
  if rec.s == 'creating' then
    -- A create past its hold: its gateway died or stalled mid-call, and the message may exist.
    -- Treated as lost (the final asks the platform for it); a late 'opened' finds the record
    -- taken and deletes its message.
    rec.s = 'final'
    save(rec)
    return {'lost'}
  end
  rec.s = 'final'
  save(rec)
  return {'edit', rec.m}
end
if rec.s == 'final' then
  if rec.m then return {'edit', rec.m} end
  return {'lost'}
end
return {'none'}`;

/** ARGV: preview id. The platform refused the final's edit for good. */
const REFUSED = `${COMMON}
local rec = load() or {}
rec.s = 'gone'
save(rec)
return 1`;

export type PreviewClaim = { status: "create" } | { status: "edit"; messageId: string } | { status: "busy" } | { status: "closed" };
/** The final's first wait for a preview write in flight (PreviewRecords.takeWhenFree). */
export const PREVIEW_POLL_FIRST_MS = 20;
/** The longest it waits before asking again. */
export const PREVIEW_POLL_MAX_MS = 250;

const defaultSleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export type PreviewTake = { status: "edit"; messageId: string } | { status: "none" } | { status: "busy"; retryInMs: number } | { status: "lost" };
export type PreviewEdited = { status: "ok" } | { status: "late" } | { status: "reassert"; shown: string };

export class PreviewRecords {
  constructor(private readonly redis: Redis, private readonly prefix: string) {}

  /** The hash holding a session's preview records. */
  keysFor(sessionKey: string): string {
    return sessionKeys(this.prefix, sessionKey).previews;
  }

  #run(script: string, sessionKey: string, ...args: Array<string | number>): Promise<unknown> {
    return runScript(this.redis, script, 1, sessionKeys(this.prefix, sessionKey).previews, ...args);
  }

  /** A renderer wants to show `previewId`: create its message, edit it, or leave it. `holdMs` bounds the request it is about to make. */
  async claim(sessionKey: string, previewId: string, owner: string, holdMs: number): Promise<PreviewClaim> {
    const reply = (await this.#run(CLAIM, sessionKey, previewId, owner, holdMs)) as [string, string?];
    if (reply[0] === "edit") return { status: "edit", messageId: String(reply[1]) };
    return { status: reply[0] as "create" | "busy" | "closed" };
  }

  /** The preview message was created. → false: the final came first; the caller deletes the message. */
  async opened(sessionKey: string, previewId: string, owner: string, messageId: string): Promise<boolean> {
    return (await this.#run(OPENED, sessionKey, previewId, owner, messageId)) === 1;
  }

  /** The edit (or the failed create) claimed with `claim` is over. */
  async release(sessionKey: string, previewId: string, owner: string): Promise<void> {
    await this.#run(RELEASE, sessionKey, previewId, owner);
  }

  /** The create claimed with `claim` lost its answer: the platform may have made the message. */
  async lost(sessionKey: string, previewId: string, owner: string): Promise<void> {
    await this.#run(LOST, sessionKey, previewId, owner);
  }

  /** A create recorded `lost` made `messageId` after all (its answer came late). → false: it must be deleted. */
  async arrived(sessionKey: string, previewId: string, owner: string, messageId: string): Promise<boolean> {
    return (await this.#run(ARRIVED, sessionKey, previewId, owner, messageId)) === 1;
  }

  /** The edit claimed with `claim` is over; says whether it may have landed over the final (see EDITED). */
  async edited(sessionKey: string, previewId: string, owner: string): Promise<PreviewEdited> {
    const reply = (await this.#run(EDITED, sessionKey, previewId, owner)) as [string, string?];
    if (reply[0] === "reassert") return { status: "reassert", shown: String(reply[1] ?? "") };
    return { status: reply[0] === "late" ? "late" : "ok" };
  }

  /**
   * The final is in the chat; `shown` is what it left in the preview message ('' = deleted it).
   * → true: an interim edit landed after the final took the preview, and the final must put itself back.
   */
  async shown(sessionKey: string, previewId: string, shown: string): Promise<boolean> {
    return (await this.#run(SHOWN, sessionKey, previewId, shown)) === 1;
  }

  /** The final answer takes the preview over (idempotent: a resumed final gets the same message). */
  async take(sessionKey: string, previewId: string): Promise<PreviewTake> {
    const reply = (await this.#run(TAKE, sessionKey, previewId)) as [string, string | number | undefined];
    if (reply[0] === "edit") return { status: "edit", messageId: String(reply[1]) };
    if (reply[0] === "busy") return { status: "busy", retryInMs: Math.max(10, Number(reply[1])) };
    if (reply[0] === "lost") return { status: "lost" };
    return { status: "none" };
  }

  /**
   * The final takes the preview, waiting while a write is in flight: asked again after
   * PREVIEW_POLL_FIRST_MS, then twice as long each time up to PREVIEW_POLL_MAX_MS (never past the
   * write's hold). A write takes tens of milliseconds; its hold, the longest it may take, seconds:
   * a second's wait each time (the poll before) was the final's p99 at 25 answers a second (issue 32).
   */
  async takeWhenFree(sessionKey: string, previewId: string, sleep: (ms: number) => Promise<void> = defaultSleep): Promise<Exclude<PreviewTake, { status: "busy" }>> {
    for (let waitMs = PREVIEW_POLL_FIRST_MS; ; waitMs = Math.min(PREVIEW_POLL_MAX_MS, waitMs * 2)) {
      const taken = await this.take(sessionKey, previewId);
      if (taken.status !== "busy") return taken;
      await sleep(Math.min(taken.retryInMs, waitMs));
    }
  }

  /** The platform refused to edit the preview for good (deleted, too old): the final goes out as a new message, once. */
  async refused(sessionKey: string, previewId: string): Promise<void> {
    await this.#run(REFUSED, sessionKey, previewId);
  }
}
