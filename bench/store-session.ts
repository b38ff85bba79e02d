/**
 * What the store benchmarks (turn-bytes, session-memory) share: a private Redis for the run, and
 * the text their sessions are made of.
 */
import type { Redis } from "ioredis";
import { createRedis } from "../src/queue/index.js";
import { startRedisServer } from "../test/helpers/redis-server.js";

/** ~4 characters per token: the live context compaction keeps (COMPACTION_THRESHOLD 0.5 of a 128k window ≈ 64k tokens). */
export const LIVE_CHARS = 60_000 * 4;

/** `chars` characters of words that vary with `seed` (so Redis cannot share or compress them). */
export const words = (seed: number, chars: number): string => {
  let text = "";
  for (let index = seed; text.length < chars; index++) text += `word${(index * 7_919) % 5_003} `;
  return text.slice(0, chars);
};

/** Runs `run` against a redis-server of its own, stopped afterwards. */
export async function withPrivateRedis<T>(options: { appendOnly?: boolean }, run: (redis: Redis) => Promise<T>): Promise<T> {
  const server = await startRedisServer(options);
  const redis = createRedis(server.url);
  try {
    return await run(redis);
  } finally {
    redis.disconnect();
    await server.dispose();
  }
}
