/**
 * One-time, idempotent move of a wave-1 deployment's keys to the hash-tagged layout, run at
 * start by every role before it takes messages or jobs, so a deployed bot keeps its sessions.
 * One process migrates (a lock key); the others wait for the layout marker. A finished
 * deployment costs one GET per start.
 */
import type { Redis } from "ioredis";
import { globalKeys, KEY_LAYOUT, legacyKeys, sessionKeys } from "./keys.js";
import { MIGRATE_SESSION } from "./scripts.js";
import { DEDUPE_TTL_SECONDS } from "./store.js";
import { runScript } from "./run-script.js";
import { scanBatches } from "./scan.js";

export interface MigrationReport {
  /** The layout was current already (nothing scanned). */
  current: boolean;
  sessions: number;
  archives: number;
  /** Stored originals of capped tool outputs (one hash per conversation). */
  toolOutputs: number;
  /** Messages and replies moved out of wave-1 inboxes, pending batches and outboxes. */
  messages: number;
  replies: number;
  /** Wave-1 dedupe keys exist: they are consulted until they expire. */
  legacySeen: boolean;
}

const LOCK_MS = 120_000;

export async function migrateLayout(redis: Redis, prefix: string, options: { waitMs?: number } = {}): Promise<MigrationReport> {
  const keys = globalKeys(prefix);
  const report: MigrationReport = { current: true, sessions: 0, archives: 0, toolOutputs: 0, messages: 0, replies: 0, legacySeen: false };
  const deadline = Date.now() + (options.waitMs ?? LOCK_MS);
  const lockToken = `${process.pid}:${Math.random().toString(36).slice(2)}`;
  for (;;) {
    if ((await redis.get(keys.layout)) === String(KEY_LAYOUT)) return report;
    if ((await redis.set(keys.migrationLock, lockToken, "PX", LOCK_MS, "NX")) === "OK") break;
    // Another process migrates; its lock expires if it died, and then one of us takes over.
    if (Date.now() > deadline) throw new Error("timed out waiting for another process to migrate the Redis key layout");
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  report.current = false;
  try {
    const sessions = new Set<string>();
    const toolOutputs: string[] = [];
    for await (const key of scan(redis, legacyKeys.sessionPattern(prefix))) {
      const parsed = legacyKeys.parseSession(prefix, key);
      if (parsed) sessions.add(parsed.sessionKey);
      else if (legacyKeys.parseToolOutputs(prefix, key)) toolOutputs.push(key);
    }
    for (const key of toolOutputs) {
      const parsed = legacyKeys.parseToolOutputs(prefix, key)!;
      // RENAMENX keeps the TTL of an archived conversation's outputs and overwrites nothing.
      await redis.renamenx(key, sessionKeys(prefix, parsed.sessionKey).toolOutputs(parsed.sessionId));
      report.toolOutputs++;
    }
    for (const sessionKey of sessions) {
      const moved = await migrateSession(redis, prefix, sessionKey);
      report.sessions++;
      report.messages += moved.messages;
      report.replies += moved.replies;
    }
    for await (const key of scan(redis, legacyKeys.archivePattern(prefix))) {
      const parsed = legacyKeys.parseArchive(prefix, key);
      if (!parsed) continue;
      const target = sessionKeys(prefix, parsed.sessionKey);
      // RENAMENX keeps the key's TTL and never overwrites an archive already moved.
      await redis.renamenx(key, parsed.index ? target.archiveIndex(parsed.sessionId) : target.archive(parsed.sessionId));
      report.archives++;
    }
    for await (const _key of scan(redis, legacyKeys.seenPattern(prefix))) {
      report.legacySeen = true;
      break;
    }
    if (report.legacySeen) {
      // A dedupe key lives at most DEDUPE_TTL_SECONDS; until then a re-delivery may name one.
      const until = Date.now() + DEDUPE_TTL_SECONDS * 1_000;
      await redis.set(keys.legacySeenUntil, String(until), "PX", DEDUPE_TTL_SECONDS * 1_000);
    }
    await redis.set(keys.layout, String(KEY_LAYOUT));
    return report;
  } finally {
    await runScript(redis, "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0", 1, keys.migrationLock, lockToken);
  }
}

/** Moves one session's wave-1 keys (safe to repeat: nothing left, nothing moved). */
export async function migrateSession(redis: Redis, prefix: string, sessionKey: string): Promise<{ messages: number; replies: number }> {
  const legacy = (suffix: string) => legacyKeys.session(prefix, sessionKey, suffix);
  const target = sessionKeys(prefix, sessionKey);
  const legacyState = await redis.get(legacy("state"));
  let legacyId = "wave1";
  try {
    const parsed = legacyState === null ? undefined : (JSON.parse(legacyState) as { sessionId?: unknown });
    if (typeof parsed?.sessionId === "string" && parsed.sessionId !== "") legacyId = parsed.sessionId;
  } catch {
    // An unreadable state still moves; its archive gets the placeholder id.
  }
  const [messages, replies] = (await runScript(redis,
    MIGRATE_SESSION, 19,
    ...legacyKeys.suffixes.map(legacy),
    target.state, target.version, target.transcript, target.transcriptIndex, target.inbox, target.outbox, target.outboxProgress,
    target.archive(legacyId), target.archiveIndex(legacyId),
  )) as [number, number, number];
  return { messages, replies };
}

/**
 * Whether wave-1 keys with waiting work exist for a session (written by an old process still
 * running). One EXISTS per key: the wave-1 keys have no hash tag, so on a Cluster they lie in
 * three slots and one EXISTS over them is refused (CROSSSLOT) — which failed every sweep that met
 * a listed session with nothing left (issue 33).
 */
export async function hasLegacyWork(redis: Redis, prefix: string, sessionKey: string): Promise<boolean> {
  const found = await Promise.all(["inbox", "pending", "outbox"].map((suffix) => redis.exists(legacyKeys.session(prefix, sessionKey, suffix))));
  return found.some((count) => count > 0);
}

async function* scan(redis: Redis, pattern: string): AsyncGenerator<string> {
  for await (const keys of scanBatches(redis, pattern, 1_000)) yield* keys;
}
