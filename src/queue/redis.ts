import { Redis, type RedisOptions } from "ioredis";

/**
 * One ioredis connection. `maxRetriesPerRequest: null` makes commands wait for a reconnect
 * instead of failing while Redis restarts (BullMQ workers require it anyway), so a Redis
 * restart delays turns and ingress but loses nothing.
 */
export function createRedis(url: string, options: RedisOptions = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    // Reconnect quickly at first, then every 2 s while Redis is down.
    retryStrategy: (attempt) => Math.min(100 * attempt, 2_000),
    ...options,
  });
}

export type { Redis };
