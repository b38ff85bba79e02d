/**
 * Full originals of capped tool outputs (and long documents and pastes), stored once beside the
 * transcript (never in it): one hash per conversation (`sessionId`), fields `<messageId>:<n>`
 * holding chunks of the text and `<messageId>:starts` their offsets, so `recall` reads one page
 * without loading 10 MB.
 *
 * One chat keeps at most `quotaBytes` of originals across all its conversations (archived ones
 * too): a list per chat (`…:tool-outputs-index`) holds each original's conversation, id, size
 * and chunk count, oldest first, and a save that would pass the quota drops the oldest. Saves of
 * one chat are serialised by its session lease, so the read-then-write below has one writer.
 */
import type { Redis } from "ioredis";
import { sessionKeys } from "./keys.js";

/**
 * Characters per chunk: a recall page touches one or two of them. Just under 16 KiB, so an
 * ASCII chunk with its Redis string header fits jemalloc's 16 KiB size class: at exactly 16,384
 * characters each chunk took a 20 KiB allocation (measured: 2.50 MB of Redis for 2.0 MB of text;
 * test/integration/media/document-storage.test.ts). Reading uses the offsets stored with each
 * original, so originals written with the old size read the same.
 */
const CHUNK_CHARS = 16_000;

export interface StoredOutputPage {
  text: string;
  total: number;
}

/** One stored original in the chat's index. */
interface IndexEntry {
  session: string;
  id: string;
  bytes: number;
  chunks: number;
}

export interface ToolOutputStoreOptions {
  /** UTF-8 bytes of originals one chat keeps; older ones are dropped first. @defaultValue 16 MB (STORED_ORIGINALS_MB) */
  quotaBytes?: number;
}

export class ToolOutputStore {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #quotaBytes: number;

  constructor(redis: Redis, prefix: string, options: ToolOutputStoreOptions = {}) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#quotaBytes = options.quotaBytes ?? 16 * 1024 * 1024;
  }

  #key(sessionKey: string, sessionId: string): string {
    return sessionKeys(this.#prefix, sessionKey).toolOutputs(sessionId);
  }

  /**
   * Stores `text` under `id`; writing the same id again (a retried turn) replaces it. Originals
   * past the chat's quota go, oldest first; one larger than the whole quota keeps its head.
   */
  async save(sessionKey: string, sessionId: string, id: string, text: string): Promise<void> {
    const kept = headWithin(text, this.#quotaBytes);
    const starts = chunkStarts(kept);
    const fields: string[] = [`${id}:starts`, JSON.stringify({ total: kept.length, starts })];
    starts.forEach((start, index) => fields.push(`${id}:${index}`, kept.slice(start, starts[index + 1] ?? kept.length)));
    const entry: IndexEntry = { session: sessionId, id, bytes: Buffer.byteLength(kept, "utf8"), chunks: starts.length };

    const indexKey = sessionKeys(this.#prefix, sessionKey).toolOutputsIndex;
    const raw = await this.#redis.lrange(indexKey, 0, -1);
    const listed = raw.map((line) => ({ line, entry: JSON.parse(line) as IndexEntry }));
    const transaction = this.#redis.multi();
    let total = entry.bytes;
    const keep: typeof listed = [];
    for (const item of listed) {
      // The same original written again replaces itself (its chunks are overwritten or dropped below).
      if (item.entry.session === sessionId && item.entry.id === id) transaction.lrem(indexKey, 1, item.line);
      else keep.push(item);
    }
    for (const item of keep) total += item.entry.bytes;
    for (const item of keep) {
      if (total <= this.#quotaBytes) break;
      total -= item.entry.bytes;
      transaction.hdel(this.#key(sessionKey, item.entry.session), ...fieldsOf(item.entry));
      transaction.lrem(indexKey, 1, item.line);
    }
    const previous = listed.find((item) => item.entry.session === sessionId && item.entry.id === id)?.entry;
    if (previous && previous.chunks > entry.chunks) transaction.hdel(this.#key(sessionKey, sessionId), ...fieldsOf(previous).slice(1 + entry.chunks));
    transaction.hset(this.#key(sessionKey, sessionId), ...fields);
    transaction.rpush(indexKey, JSON.stringify(entry));
    await transaction.exec();
  }

  /** UTF-8 bytes of originals the chat holds now (its index). */
  async storedBytes(sessionKey: string): Promise<number> {
    const raw = await this.#redis.lrange(sessionKeys(this.#prefix, sessionKey).toolOutputsIndex, 0, -1);
    return raw.reduce((sum, line) => sum + (JSON.parse(line) as IndexEntry).bytes, 0);
  }

  /** Characters [offset, offset + length) of the output stored under `id`. */
  async read(sessionKey: string, sessionId: string, id: string, offset: number, length: number): Promise<StoredOutputPage | undefined> {
    const key = this.#key(sessionKey, sessionId);
    const raw = await this.#redis.hget(key, `${id}:starts`);
    if (raw === null) return undefined;
    const { total, starts } = JSON.parse(raw) as { total: number; starts: number[] };
    const from = Math.min(Math.max(0, offset), total);
    const to = Math.min(total, from + Math.max(0, length));
    if (to <= from) return { text: "", total };
    const first = chunkAt(starts, from);
    const last = chunkAt(starts, to - 1);
    const indices = Array.from({ length: last - first + 1 }, (_, index) => `${id}:${first + index}`);
    const chunks = await this.#redis.hmget(key, ...indices);
    const joined = chunks.map((chunk) => chunk ?? "").join("");
    const base = starts[first] ?? 0;
    return { text: joined.slice(from - base, to - base), total };
  }

  /** An archived conversation's outputs live as long as its transcript (ARCHIVE_RETENTION_DAYS; 0 forever). */
  async expireArchived(sessionKey: string, sessionId: string, retentionMs: number): Promise<void> {
    if (retentionMs > 0) await this.#redis.pexpire(this.#key(sessionKey, sessionId), retentionMs);
  }
}

/** The hash fields of one stored original: its offsets, then its chunks. */
function fieldsOf(entry: IndexEntry): string[] {
  return [`${entry.id}:starts`, ...Array.from({ length: entry.chunks }, (_, index) => `${entry.id}:${index}`)];
}

/** The longest head of `text` within `maxBytes` of UTF-8, never half of a surrogate pair. */
function headWithin(text: string, maxBytes: number): string {
  // Three bytes a UTF-16 unit at most: shorter texts are within the limit without measuring.
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  let head = Buffer.from(text, "utf8").subarray(0, maxBytes).toString("utf8");
  // A character cut in the middle decodes as U+FFFD: drop it.
  if (head.endsWith("\uFFFD") && !text.startsWith(head)) head = head.slice(0, -1);
  return head;
}

/**
 * Chunk boundaries every CHUNK_CHARS, moved back by one where they would split a surrogate
 * pair: Redis stores UTF-8, and half a pair would come back as U+FFFD.
 */
function chunkStarts(text: string): number[] {
  const starts = [0];
  for (let at = CHUNK_CHARS; at < text.length; at += CHUNK_CHARS) {
    const code = text.charCodeAt(at - 1);
    const start = code >= 0xd800 && code <= 0xdbff ? at - 1 : at;
    if (start > starts[starts.length - 1]!) starts.push(start);
    at = start;
  }
  return starts;
}

function chunkAt(starts: readonly number[], position: number): number {
  let index = 0;
  while (index + 1 < starts.length && starts[index + 1]! <= position) index++;
  return index;
}
