/**
 * Full originals of capped tool outputs, stored once beside the transcript (never in it): one
 * hash per conversation (`sessionId`), fields `<messageId>:<n>` holding chunks of the text and
 * `<messageId>:starts` their offsets, so `recall` reads one page without loading 10 MB.
 */
import type { Redis } from "ioredis";
import { sessionKeys } from "./keys.js";

/** Characters per chunk: a recall page touches one or two of them. */
const CHUNK_CHARS = 16_384;

export interface StoredOutputPage {
  text: string;
  total: number;
}

export class ToolOutputStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  #key(sessionKey: string, sessionId: string): string {
    return sessionKeys(this.#prefix, sessionKey).toolOutputs(sessionId);
  }

  /** Stores `text` under `id`; writing the same id again (a retried turn) replaces it. */
  async save(sessionKey: string, sessionId: string, id: string, text: string): Promise<void> {
    const starts = chunkStarts(text);
    const fields: string[] = [`${id}:starts`, JSON.stringify({ total: text.length, starts })];
    starts.forEach((start, index) => fields.push(`${id}:${index}`, text.slice(start, starts[index + 1] ?? text.length)));
    await this.#redis.hset(this.#key(sessionKey, sessionId), ...fields);
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
