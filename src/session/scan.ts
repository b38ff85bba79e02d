/** Walking Redis keys by pattern (SCAN MATCH), for the few places that must find keys they cannot name. */
import type { Redis } from "ioredis";

/** What a Cluster client adds to a connection (ioredis' Cluster, typed as a Redis in queue/redis.ts). */
interface MaybeCluster {
  isCluster?: boolean;
  nodes?(role: "master"): Redis[];
}

/**
 * The keys matching `pattern`, batch by batch, until the cursor comes back to 0 (SCAN may repeat
 * a key). On a Cluster each master holds only its own slots' keys: every master is walked.
 */
export async function* scanBatches(redis: Redis, pattern: string, count = 500): AsyncGenerator<string[]> {
  const cluster = redis as unknown as MaybeCluster;
  // A Cluster client learns its masters from the seeds' slot map once connected: before that,
  // nodes() lists none (a CLI's new connection, whose first command this often is) and the walk
  // found nothing. A command waits for that (the offline queue); PING is one without a key.
  if (cluster.isCluster === true && redis.status !== "ready") await redis.ping();
  const nodes = cluster.isCluster === true && cluster.nodes ? cluster.nodes("master") : [redis];
  for (const node of nodes) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", pattern, "COUNT", count);
      cursor = next;
      yield keys;
    } while (cursor !== "0");
  }
}

/** Every key matching `pattern` (SCAN may repeat a key). */
export async function scanAll(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const batch of scanBatches(redis, pattern)) keys.push(...batch);
  return keys;
}

/** `*`, `?`, `[`, `]` and `\` in a key part must not act as glob characters in SCAN MATCH. */
export const globEscape = (text: string): string => text.replace(/[*?[\]\\]/g, (character) => `\\${character}`);

/**
 * Deletes `keys` (UNLINK) → how many existed. One command per 500 keys on one Redis; on a
 * Cluster a multi-key UNLINK must stay in one slot, so each key goes alone (in parallel).
 */
export async function unlinkKeys(redis: Redis, keys: readonly string[]): Promise<number> {
  let deleted = 0;
  if ((redis as unknown as MaybeCluster).isCluster === true) {
    for (let index = 0; index < keys.length; index += 500) {
      const counts = await Promise.all(keys.slice(index, index + 500).map((key) => redis.unlink(key)));
      deleted += counts.reduce((sum, count) => sum + count, 0);
    }
    return deleted;
  }
  for (let index = 0; index < keys.length; index += 500) deleted += await redis.unlink(...keys.slice(index, index + 500));
  return deleted;
}
