import type { Redis } from "ioredis";
import type { ChatMessage } from "../core/messages.js";

/** Transcript entries read per round trip. */
export const SEARCH_PAGE_ENTRIES = 200;
/**
 * Most entries one search reads, newest first: a weeks-long transcript holds tens of thousands
 * of messages (several MB), and recall must not pull all of them into the worker on every call.
 * Older messages are reached with `before`.
 */
export const SEARCH_MAX_ENTRIES = 2_000;

/**
 * Most entries the searches of one turn read together: a model that keeps paging back cannot
 * make one turn read the whole history of a weeks-long session.
 */
export const SEARCH_TURN_BUDGET_ENTRIES = 10_000;

export interface TranscriptSearch {
  /** Matches, newest first. */
  messages: ChatMessage[];
  /** Entries read. */
  scanned: number;
  /**
   * Transcript position where an older search would continue (pass it as `before`);
   * undefined when the search reached the oldest message.
   */
  continueBefore: number | undefined;
}

/**
 * Transcript messages whose text contains every word of `query` (case-insensitive), newest
 * first, reading the list in pages from the end and stopping at `limit` matches or
 * `maxEntries` entries, whichever comes first.
 */
export async function searchTranscript(
  redis: Redis,
  transcriptKey: string,
  query: string,
  limit: number,
  options: { before?: number; maxEntries?: number } = {},
): Promise<TranscriptSearch> {
  const words = query.toLowerCase().split(/\s+/).filter((word) => word.length > 0);
  if (words.length === 0) return { messages: [], scanned: 0, continueBefore: undefined };
  // Positions from the start: the list only grows at the end while we read, so they stay put.
  let end = Math.min(options.before ?? Number.POSITIVE_INFINITY, await redis.llen(transcriptKey));
  const budget = options.maxEntries ?? SEARCH_MAX_ENTRIES;
  const found: ChatMessage[] = [];
  let scanned = 0;
  while (end > 0 && scanned < budget && found.length < limit) {
    const start = Math.max(0, end - Math.min(SEARCH_PAGE_ENTRIES, budget - scanned));
    const page = await redis.lrange(transcriptKey, start, end - 1);
    let position = end;
    for (let index = page.length - 1; index >= 0 && found.length < limit; index--) {
      position = start + index;
      scanned++;
      const message = JSON.parse(page[index] ?? "null") as ChatMessage | null;
      if (message && words.every((word) => searchableText(message).includes(word))) found.push(message);
    }
    end = found.length < limit ? start : position;
  }
  return { messages: found, scanned, continueBefore: end > 0 ? end : undefined };
}

function searchableText(message: ChatMessage): string {
  const calls = message.role === "assistant" ? JSON.stringify(message.tool_calls ?? []) : "";
  return `${message.content ?? ""} ${calls}`.toLowerCase();
}
