/**
 * `npm run admin -- migrate-to-cluster SOURCE_URL`: copies a deployment (REDIS_PREFIX) from one
 * Redis (SOURCE_URL, the old REDIS_URL) to the Cluster this configuration names
 * (REDIS_CLUSTER_NODES), key by key with DUMP / RESTORE, TTLs kept. Session keys keep their
 * names (each is under its `{sessionKey}` tag already); BullMQ's keys move from the plain prefix
 * to the queue's hash tag (`<prefix>:turns:…` → `<prefix>:{turns}:turns:…`, queuePrefix), so
 * queued turns, replies waiting for delivery and reminders (delayed and repeating jobs) are
 * picked up on the Cluster. Stop-the-world: it refuses while a gateway or worker is connected to
 * the source (their connections are named), and when the Cluster already holds keys of the
 * prefix. The source is left as it was.
 */
import type { Redis } from "ioredis";
import { CONNECTION_NAMES, createRedis, IDLE_QUEUE, isCluster, PLATFORMS, queuePrefix, SCHEDULE_QUEUE, TURN_QUEUE, deliveryQueueName } from "../queue/index.js";
import { scanBatches } from "../session/scan.js";

export class MigrationRefusedError extends Error {
  override readonly name = "MigrationRefusedError";
}

/** Every BullMQ queue of a deployment. */
export const QUEUE_NAMES: readonly string[] = [TURN_QUEUE, SCHEDULE_QUEUE, IDLE_QUEUE, ...PLATFORMS.map(deliveryQueueName)];

/** A key's name on a Cluster: a BullMQ key gets its queue's hash tag; every other key keeps its name. */
export function clusterKeyName(prefix: string, key: string): string {
  for (const queue of QUEUE_NAMES) {
    const plain = `${prefix}:${queue}:`;
    if (key.startsWith(plain)) return `${queuePrefix(prefix, queue, true)}:${queue}:${key.slice(plain.length)}`;
  }
  return key;
}

export interface MigrationReport {
  copied: number;
  renamed: number;
}

/** The source's clients that belong to a running longhaul (gateway, worker, and BullMQ's duplicates of theirs). */
async function runningClients(source: Redis): Promise<string[]> {
  const ours = new Set<string>(Object.values(CONNECTION_NAMES));
  const list = (await source.client("LIST")) as string;
  return list.split("\n").map((line) => /\bname=(\S*)/.exec(line)?.[1] ?? "").filter((name) => ours.has(name));
}

export async function migrateToCluster(options: { source: Redis; cluster: Redis; prefix: string; batch?: number; onProgress?: (copied: number) => void }): Promise<MigrationReport> {
  const { source, cluster, prefix } = options;
  if (!isCluster(cluster)) throw new MigrationRefusedError("the configured Redis is not a Cluster: set REDIS_CLUSTER_NODES to the Cluster's nodes (and REDIS_URL only for its password)");
  if (isCluster(source)) throw new MigrationRefusedError("the source is a Cluster already");
  const running = await runningClients(source);
  if (running.length > 0) {
    throw new MigrationRefusedError(`${running.length} longhaul connection(s) on the source (${[...new Set(running)].join(", ")}): stop every gateway and worker first, so nothing changes while it is copied`);
  }
  const pattern = `${prefix.replace(/[*?[\]\\]/g, (character) => `\\${character}`)}:*`;
  for await (const keys of scanBatches(cluster, pattern, 100)) {
    if (keys.length > 0) throw new MigrationRefusedError(`the Cluster already holds keys of REDIS_PREFIX ${prefix} (e.g. ${keys[0]}): migrate into an empty prefix`);
  }
  const seen = new Set<string>();
  const report: MigrationReport = { copied: 0, renamed: 0 };
  for await (const batch of scanBatches(source, pattern, options.batch ?? 200)) {
    // SCAN may return a key twice.
    const keys = batch.filter((key) => !seen.has(key));
    for (const key of keys) seen.add(key);
    if (keys.length === 0) continue;
    const pipeline = source.pipeline();
    for (const key of keys) pipeline.dumpBuffer(key).pttl(key);
    const answers = (await pipeline.exec()) ?? [];
    await Promise.all(keys.map(async (key, index) => {
      const [dumpError, dump] = answers[index * 2] ?? [];
      const [ttlError, ttl] = answers[index * 2 + 1] ?? [];
      if (dumpError || ttlError) throw dumpError ?? ttlError;
      // Gone since the scan (expired): nothing to copy.
      if (dump === null || Number(ttl) === -2) return;
      const name = clusterKeyName(prefix, key);
      await cluster.restore(name, Math.max(0, Number(ttl)), dump as Buffer);
      report.copied += 1;
      if (name !== key) report.renamed += 1;
    }));
    options.onProgress?.(report.copied);
  }
  return report;
}

/** The admin command: SOURCE_URL names the old single Redis. */
export async function migrateToClusterCommand(context: { redis: Redis; prefix: string; write(text: string): void }, sourceUrl: string): Promise<number> {
  const source = createRedis(sourceUrl, { maxRetriesPerRequest: 1, retryStrategy: () => null, enableOfflineQueue: true });
  source.on("error", () => undefined);
  try {
    const report = await migrateToCluster({ source, cluster: context.redis, prefix: context.prefix });
    context.write(`Copied ${report.copied} key(s) of ${context.prefix} to the Cluster (${report.renamed} BullMQ key(s) under their queue's hash tag); the source is unchanged.\n`
      + "Start the bot with REDIS_CLUSTER_NODES set; keep the source until the Cluster has been checked (npm run doctor, npm run admin -- sessions).\n");
    return 0;
  } catch (error) {
    if (error instanceof MigrationRefusedError) {
      context.write(`Refused: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    source.disconnect();
  }
}
