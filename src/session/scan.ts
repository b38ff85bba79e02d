/** Walking Redis keys by pattern (SCAN MATCH), for the few places that must find keys they cannot name. */
import type { Redis } from "ioredis";

/** The keys matching `pattern`, batch by batch, until the cursor comes back to 0 (SCAN may repeat a key). */
export async function* scanBatches(redis: Redis, pattern: string, count = 500): AsyncGenerator<string[]> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", count);
    cursor = next;
    yield keys;
  } while (cursor !== "0");
}

/** Every key matching `pattern` (SCAN may repeat a key). */
export async function scanAll(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const batch of scanBatches(redis, pattern)) keys.push(...batch);
  return keys;
}

/** `*`, `?`, `[`, `]` and `\` in a key part must not act as glob characters in SCAN MATCH. */
export const globEscape = (text: string): string => text.replace(/[*?[\]\\]/g, (character) => `\\${character}`);
