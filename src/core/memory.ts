/**
 * Memory shapes the session state carries (src/session stores them, src/memory fills them,
 * src/agent reads them): whose memory a conversation uses, its pins, the snapshot the requests
 * carry, and what the last compaction folded.
 */
import type { Platform } from "./channel.js";

/** A user's memory (read in their DMs) or a chat's (read only in that chat). */
export type MemoryOwner =
  | { scope: "user"; platform: Platform; userId: string }
  | { scope: "chat"; sessionKey: string };

/** A fact kept verbatim in every context of the conversation (`/pin`). */
export interface Pin {
  id: string;
  text: string;
  at: number;
}

/** What one compaction folded into the summary: for `/context`. */
export interface FoldRecord {
  at: number;
  /** Messages folded (dropped, when the summarizer failed) out of the live context. */
  count: number;
  /** `at` of the oldest and newest of them, when known. */
  from?: number;
  to?: number;
  /** Their transcript ids, oldest first (the originals `recall` reads). */
  firstId?: string;
  lastId?: string;
  reason: string;
}

/** The memory side of a session's state. */
export interface SessionMemory {
  owner?: MemoryOwner;
  /**
   * The memory snapshot the requests add to the system prompt. Taken at session start and
   * after each compaction only, so the prompt prefix stays byte-stable between compactions.
   */
  snapshot?: string;
  pins?: Pin[];
  nextPin?: number;
  /** The compaction notice the next answer carries (COMPACTION_NOTICE=brief). */
  notice?: string;
  lastFold?: FoldRecord;
}
