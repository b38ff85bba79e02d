/**
 * Scheduled items in Redis. Each item is a hash: `data` (the JSON of what the user asked for)
 * beside the fields that change on their own (`next`, `paused`, `rev`, `fires`, `last`), so
 * the Lua scripts can compare and set them without decoding JSON. Index sets by chat and by
 * creator carry the caps; one set of all ids lets a worker re-arm every item's alarm.
 */
import { wellFormedJson } from "../core/text.js";
import type { Redis } from "ioredis";
import { scheduleKeys } from "../session/keys.js";
import type { ScheduleItem } from "./item.js";
import { runScript } from "../session/run-script.js";

/**
 * KEYS: item, byChat, byUser, all, created (the idempotency key's; unused when ARGV[6] is '').
 * ARGV: id, data, next, paused, max, idempotency TTL s ('' for none).
 * → 1, -1 chat full, -2 user full, or the id of the item this key already created.
 */
const CREATE = `
if ARGV[6] ~= '' then
  local existing = redis.call('GET', KEYS[5])
  if existing then return existing end
end
if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[5]) then return -1 end
if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[5]) then return -2 end
redis.call('HSET', KEYS[1], 'data', ARGV[2], 'next', ARGV[3], 'paused', ARGV[4], 'rev', 1, 'fires', 0)
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[4], ARGV[1])
if ARGV[6] ~= '' then redis.call('SET', KEYS[5], ARGV[1], 'EX', tonumber(ARGV[6])) end
return 1`;

/** KEYS: item. ARGV: expected rev, data, next, paused. → new rev, 0 on a conflict, -1 when gone. */
const UPDATE = `
local rev = redis.call('HGET', KEYS[1], 'rev')
if not rev then return -1 end
if rev ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[2], 'next', ARGV[3], 'paused', ARGV[4])
return redis.call('HINCRBY', KEYS[1], 'rev', 1)`;

/**
 * KEYS: item. ARGV: expected next, new next, fired at ('' when the occurrence was skipped).
 * Moves the item to its next run only if it is still at the expected one: of two workers that
 * fire the same occurrence (a takeover after a stall), one advances it. → 1 moved, 0 not.
 */
const ADVANCE = `
if redis.call('HGET', KEYS[1], 'next') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'next', ARGV[2])
if ARGV[3] ~= '' then
  redis.call('HINCRBY', KEYS[1], 'fires', 1)
  redis.call('HSET', KEYS[1], 'last', ARGV[3])
end
redis.call('HINCRBY', KEYS[1], 'rev', 1)
return 1`;

/** KEYS: item, byChat, byUser, all. ARGV: id, expected next ('' = any). → 1 removed, 0 not. */
const REMOVE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if ARGV[2] ~= '' and redis.call('HGET', KEYS[1], 'next') ~= ARGV[2] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
return 1`;

/**
 * KEYS: item, old byChat, new byChat. ARGV: id, expected rev, data. The item moves to another
 * chat id (a Telegram supergroup upgrade) with its index entry. → new rev, 0 conflict, -1 gone.
 */
const MOVE = `
local rev = redis.call('HGET', KEYS[1], 'rev')
if not rev then return -1 end
if rev ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'data', ARGV[3])
redis.call('SREM', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
return redis.call('HINCRBY', KEYS[1], 'rev', 1)`;

type StoredData = Omit<ScheduleItem, "nextRunAt" | "paused" | "revision" | "fireCount" | "lastFiredAt">;

export type CreateOutcome = "created" | "chat-full" | "user-full" | { existing: string };

/** How long a tool call's create is remembered: longer than any turn's retries and hand-backs. */
const IDEMPOTENCY_TTL_S = 7 * 24 * 3600;
export type UpdateOutcome = "updated" | "conflict" | "missing";

export class ScheduleStore {
  readonly #redis: Redis;
  readonly #keys: ReturnType<typeof scheduleKeys>;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#keys = scheduleKeys(prefix);
  }

  /** A fresh item id: `r` + a deployment-wide counter (never all digits: BullMQ job ids embed it). */
  async nextId(): Promise<string> {
    return `r${await this.#redis.incr(this.#keys.sequence)}`;
  }

  /**
   * Stores a new item unless the chat or the creator already has `maxItems`. With an
   * `idempotencyKey` (a tool call of a turn), a second create under the same key stores nothing
   * and → `{ existing }`, the item the first one made.
   */
  async create(item: ScheduleItem, maxItems: number, idempotencyKey?: string): Promise<CreateOutcome> {
    const result = await runScript(this.#redis,
      CREATE, 5, ...this.#indexKeys(item), this.#keys.created(idempotencyKey ?? "none"),
      item.id, wellFormedJson(dataOf(item)), String(item.nextRunAt), item.paused ? "1" : "0", maxItems, idempotencyKey ? IDEMPOTENCY_TTL_S : "",
    );
    if (typeof result === "string") return { existing: result };
    return result === 1 ? "created" : result === -1 ? "chat-full" : "user-full";
  }

  /** The answer recorded for a tool call's change under `idempotencyKey`, if any. */
  async doneText(idempotencyKey: string): Promise<string | null> {
    return this.#redis.get(this.#keys.done(idempotencyKey));
  }

  /** Records a tool call's answer under its key (the first answer stays; expires with the create keys). */
  async recordDone(idempotencyKey: string, text: string): Promise<void> {
    await this.#redis.set(this.#keys.done(idempotencyKey), text, "EX", IDEMPOTENCY_TTL_S, "NX");
  }

  async get(itemId: string): Promise<ScheduleItem | undefined> {
    const fields = await this.#redis.hgetall(this.#keys.item(itemId));
    return fields.data === undefined ? undefined : fromFields(fields);
  }

  /** Items by id, in the order given; ids without an item are left out. */
  async getMany(itemIds: readonly string[]): Promise<ScheduleItem[]> {
    if (itemIds.length === 0) return [];
    const pipeline = this.#redis.pipeline();
    for (const id of itemIds) pipeline.hgetall(this.#keys.item(id));
    const results = (await pipeline.exec()) ?? [];
    return results
      .map(([, fields]) => fields as Record<string, string>)
      .filter((fields) => fields?.data !== undefined)
      .map(fromFields);
  }

  /** The chat's items, soonest first. */
  async listChat(platform: string, chatId: string): Promise<ScheduleItem[]> {
    const items = await this.getMany(await this.#redis.smembers(this.#keys.byChat(platform, chatId)));
    return items.sort((a, b) => a.nextRunAt - b.nextRunAt || idOrder(a.id, b.id));
  }

  async listUser(platform: string, userId: string): Promise<ScheduleItem[]> {
    return this.getMany(await this.#redis.smembers(this.#keys.byUser(platform, userId)));
  }

  async allIds(): Promise<string[]> {
    return this.#redis.smembers(this.#keys.all);
  }

  /** Writes what an edit, pause or resume changed, if nobody changed the item since it was read. */
  async update(item: ScheduleItem): Promise<UpdateOutcome> {
    const result = await runScript(this.#redis,
      UPDATE, 1, this.#keys.item(item.id),
      String(item.revision), wellFormedJson(dataOf(item)), String(item.nextRunAt), item.paused ? "1" : "0",
    );
    return result === -1 ? "missing" : result === 0 ? "conflict" : "updated";
  }

  /** Writes `item`, which now names another chat id than `fromChatId`, and moves its index entry. */
  async moveChat(item: ScheduleItem, fromChatId: string): Promise<UpdateOutcome> {
    const result = await runScript(this.#redis,
      MOVE, 3, this.#keys.item(item.id), this.#keys.byChat(item.chat.platform, fromChatId), this.#keys.byChat(item.chat.platform, item.chat.chatId),
      item.id, String(item.revision), wellFormedJson(dataOf(item)),
    );
    return result === -1 ? "missing" : result === 0 ? "conflict" : "updated";
  }

  /** After a firing: the item moves from `expectedNext` to `newNext`. `firedAt` undefined: skipped. */
  async advance(itemId: string, expectedNext: number, newNext: number, firedAt: number | undefined): Promise<boolean> {
    const result = await runScript(this.#redis, ADVANCE, 1, this.#keys.item(itemId), String(expectedNext), String(newNext), firedAt === undefined ? "" : String(firedAt));
    return result === 1;
  }

  /** Deletes the item (only while it is still at `expectedNext`, when given). */
  async remove(item: ScheduleItem, expectedNext?: number): Promise<boolean> {
    const result = await runScript(this.#redis, REMOVE, 4, ...this.#indexKeys(item), item.id, expectedNext === undefined ? "" : String(expectedNext));
    return result === 1;
  }

  #indexKeys(item: ScheduleItem): [string, string, string, string] {
    return [
      this.#keys.item(item.id),
      this.#keys.byChat(item.chat.platform, item.chat.chatId),
      this.#keys.byUser(item.chat.platform, item.creator.userId),
      this.#keys.all,
    ];
  }
}

function dataOf(item: ScheduleItem): StoredData {
  const { nextRunAt: _next, paused: _paused, revision: _revision, fireCount: _fires, lastFiredAt: _last, ...data } = item;
  return data;
}

function fromFields(fields: Record<string, string>): ScheduleItem {
  const data = JSON.parse(fields.data ?? "{}") as StoredData;
  return {
    ...data,
    nextRunAt: Number(fields.next),
    paused: fields.paused === "1",
    revision: Number(fields.rev ?? 1),
    fireCount: Number(fields.fires ?? 0),
    ...(fields.last !== undefined ? { lastFiredAt: Number(fields.last) } : {}),
  };
}

/** `r9` before `r10`. */
const idOrder = (a: string, b: string) => Number(a.slice(1)) - Number(b.slice(1)) || a.localeCompare(b);
