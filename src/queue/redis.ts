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

/**
 * CLIENT SETNAME of the connections that carry a role's own commands (session scripts, job
 * adds, events); BullMQ's workers use connections of their own.
 */
export const CONNECTION_NAMES = {
  gateway: "longhaul-gateway",
  gatewayEvents: "longhaul-gateway-events",
  worker: "longhaul-worker",
  /** The worker's subscriber: budget limit changes (src/budget/limits-cache.ts). */
  workerEvents: "longhaul-worker-events",
} as const;

/**
 * Whether Redis answers within `timeoutMs`. Commands wait for a reconnect instead of failing
 * (see above), so a plain PING would hang for as long as Redis is down.
 */
export async function pingWithin(redis: Redis, timeoutMs = 1_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([redis.ping().then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
