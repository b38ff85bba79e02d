import type { Redis } from "ioredis";
import type { ChannelCursors, Platform } from "../core/channel.js";
import { globalKeys } from "../session/keys.js";
import { runScript } from "../session/run-script.js";

/**
 * KEYS: the platform's cursor hash. ARGV: channel id, message id. Moves the channel's cursor
 * forward only: ids are decimal strings of up to 20 digits (past Lua's exact integers), so
 * they compare by length, then as text. Two gateways racing never move a cursor back.
 */
const ADVANCE_CURSOR = `
local current = redis.call('HGET', KEYS[1], ARGV[1])
if current and (#current > #ARGV[2] or (#current == #ARGV[2] and current >= ARGV[2])) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1`;

/**
 * Per-channel cursors in one Redis hash per platform (deployment-wide, like the dedupe ids:
 * small, one field per channel the bot reads). See `ChannelCursors` in src/core/channel.ts.
 */
export class RedisChannelCursors implements ChannelCursors {
  readonly #redis: Redis;
  readonly #keys: ReturnType<typeof globalKeys>;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#keys = globalKeys(prefix);
  }

  async get(platform: Platform, channelId: string): Promise<string | undefined> {
    return (await this.#redis.hget(this.#keys.channelCursors(platform), channelId)) ?? undefined;
  }

  async advance(platform: Platform, channelId: string, messageId: string): Promise<void> {
    if (!/^\d{1,20}$/.test(messageId)) throw new RangeError(`cursor ids are decimal message ids (got ${JSON.stringify(messageId)})`);
    await runScript(this.#redis, ADVANCE_CURSOR, 1, this.#keys.channelCursors(platform), channelId, messageId);
  }

  async forget(platform: Platform, channelId: string): Promise<void> {
    await this.#redis.hdel(this.#keys.channelCursors(platform), channelId);
  }

  async list(platform: Platform): Promise<Map<string, string>> {
    return new Map(Object.entries(await this.#redis.hgetall(this.#keys.channelCursors(platform))));
  }
}
