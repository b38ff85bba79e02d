/**
 * Long-term memory on Redis: one JSON document per owner (a user, a chat), changed by
 * compare-and-set so that two turns writing the same user's memory at once (two DMs can't, but
 * a DM and an admin's delete can) never lose an update. Every write checks the owner's cap.
 */
import type { Redis } from "ioredis";
import { sessionKeys } from "../session/keys.js";
import { runScript } from "../session/run-script.js";
import { ownerKey, type MemoryOwner } from "./owner.js";

export interface MemoryFact {
  /** `u<n>` in a user's memory, `c<n>` in a chat's: stable, never reused. */
  id: string;
  text: string;
  /** Unix ms of the last write. */
  at: number;
}

export interface MemoryDoc {
  facts: MemoryFact[];
  nextId: number;
  /** A user's memory: the chats (session keys) they allowed it in with `/memory share`. */
  sharedWith?: string[];
  /** A chat's memory: the users (`platform:id`) whose memory it may read. */
  sharedBy?: string[];
  /** A user's memory: their display name when they last wrote, for the group's snapshot. */
  name?: string;
}

export const emptyDoc = (): MemoryDoc => ({ facts: [], nextId: 1 });

/** Characters as people count them (code points, not UTF-16 units): what the caps measure. */
export const charCount = (text: string) => Array.from(text).length;

export const usedChars = (doc: MemoryDoc) => doc.facts.reduce((sum, fact) => sum + charCount(fact.text), 0);

/** One line per fact: the snapshot lists facts one a line. */
export function normaliseFact(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ").trim();
}

export type WriteResult =
  | { ok: true; doc: MemoryDoc; fact?: MemoryFact; removed?: MemoryFact[] }
  | { ok: false; reason: string; doc: MemoryDoc };

/** SET only if the value is still what was read (`''` = the key did not exist; writing `''` deletes it). */
export const COMPARE_AND_SET = `
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1`;

/** How long a tool call's write is remembered (as the schedule tool's creates: src/schedule/store.ts). */
const WRITE_RECORD_TTL_S = 7 * 24 * 3600;

export class MemoryStore {
  readonly #redis: Redis;
  readonly #prefix: string;

  constructor(redis: Redis, prefix: string) {
    this.#redis = redis;
    this.#prefix = prefix;
  }

  get prefix(): string {
    return this.#prefix;
  }

  key(owner: MemoryOwner): string {
    return ownerKey(this.#prefix, owner);
  }

  async read(owner: MemoryOwner): Promise<MemoryDoc> {
    return parseDoc(await this.#redis.get(this.key(owner)));
  }

  /**
   * Applies `change` to the owner's document atomically: read, change, compare-and-set, again
   * if someone wrote meanwhile. `change` returns the result; a failed result writes nothing.
   */
  async update(owner: MemoryOwner, change: (doc: MemoryDoc) => WriteResult): Promise<WriteResult> {
    const key = this.key(owner);
    for (let attempt = 0; attempt < 20; attempt++) {
      const raw = (await this.#redis.get(key)) ?? "";
      const result = change(parseDoc(raw));
      if (!result.ok) return result;
      const next = isEmpty(result.doc) ? "" : JSON.stringify(result.doc);
      if (next === raw) return result;
      if ((await runScript(this.#redis, COMPARE_AND_SET, 1, key, raw, next)) === 1) return result;
    }
    throw new Error(`memory of ${key} kept changing; try again`);
  }

  /**
   * What the memory tool call under `callKey` wrote in `sessionKey` (`<action> <fact ids>`), if a
   * run of its turn did: a re-run answers from it instead of writing again (memory/tool.ts).
   */
  async writtenBy(sessionKey: string, callKey: string): Promise<string | null> {
    return this.#redis.get(sessionKeys(this.#prefix, sessionKey).memoryWrite(callKey));
  }

  /** Records a tool call's write (the first record stays; kept longer than any turn's retries and hand-backs). */
  async recordWrite(sessionKey: string, callKey: string, written: string): Promise<void> {
    await this.#redis.set(sessionKeys(this.#prefix, sessionKey).memoryWrite(callKey), written, "EX", WRITE_RECORD_TTL_S, "NX");
  }

  /**
   * Drops a session's stored memory snapshot (it may quote memory whose consent just ended or
   * a fact just removed): the session's next turn takes a new one (MemoryService.prepareTurn).
   * A turn of that session running at this moment commits the state it loaded; its snapshot is
   * retaken at its next compaction or /new.
   */
  async dropSnapshot(sessionKey: string): Promise<void> {
    const stateKey = sessionKeys(this.#prefix, sessionKey).state;
    for (let attempt = 0; attempt < 20; attempt++) {
      const raw = await this.#redis.get(stateKey);
      if (raw === null) return;
      const state = JSON.parse(raw) as { memory?: { snapshot?: string } };
      if (state.memory?.snapshot === undefined) return;
      delete state.memory.snapshot;
      if ((await runScript(this.#redis, COMPARE_AND_SET, 1, stateKey, raw, JSON.stringify(state))) === 1) return;
    }
  }

  /** Deletes the owner's memory outright (`delete-user`). */
  async drop(owner: MemoryOwner): Promise<void> {
    await this.#redis.del(this.key(owner));
  }
}

function parseDoc(raw: string | null): MemoryDoc {
  if (raw === null || raw === "") return emptyDoc();
  const parsed = JSON.parse(raw) as Partial<MemoryDoc>;
  return { ...parsed, facts: parsed.facts ?? [], nextId: parsed.nextId ?? 1 };
}

const isEmpty = (doc: MemoryDoc) => doc.facts.length === 0 && !doc.sharedWith?.length && !doc.sharedBy?.length;

// ---- pure changes -------------------------------------------------------------------------

export interface Caps {
  /** Characters of one owner's facts, all together. */
  maxChars: number;
}

export function addFact(doc: MemoryDoc, idPrefix: string, rawText: string, caps: Caps, now: number): WriteResult {
  const text = normaliseFact(rawText);
  if (text === "") return { ok: false, reason: "the fact is empty", doc };
  const duplicate = doc.facts.find((fact) => fact.text.toLowerCase() === text.toLowerCase());
  if (duplicate) return { ok: true, doc, fact: duplicate };
  const used = usedChars(doc);
  if (used + charCount(text) > caps.maxChars) {
    return { ok: false, reason: `memory is full (${used} of ${caps.maxChars} characters used; this fact needs ${charCount(text)}): replace or remove older facts first`, doc };
  }
  const fact = { id: `${idPrefix}${doc.nextId}`, text, at: now };
  return { ok: true, doc: { ...doc, facts: [...doc.facts, fact], nextId: doc.nextId + 1 }, fact };
}

export function replaceFact(doc: MemoryDoc, id: string, rawText: string, caps: Caps, now: number): WriteResult {
  const text = normaliseFact(rawText);
  const old = doc.facts.find((fact) => fact.id === id);
  if (!old) return { ok: false, reason: `there is no fact ${id}`, doc };
  if (text === "") return { ok: false, reason: "the new text is empty (use remove)", doc };
  const used = usedChars(doc) - charCount(old.text);
  if (used + charCount(text) > caps.maxChars) {
    return { ok: false, reason: `memory would be over its cap (${used + charCount(text)} of ${caps.maxChars} characters); shorten it or remove other facts`, doc };
  }
  const fact = { id, text, at: now };
  return { ok: true, doc: { ...doc, facts: doc.facts.map((entry) => (entry.id === id ? fact : entry)) }, fact, removed: [old] };
}

export function removeFacts(doc: MemoryDoc, match: (fact: MemoryFact) => boolean): WriteResult {
  const removed = doc.facts.filter(match);
  return { ok: true, doc: { ...doc, facts: doc.facts.filter((fact) => !match(fact)) }, removed };
}

/** Facts named by id, or else every fact containing `text` (case-insensitive). */
export function matcher(idOrText: string): (fact: MemoryFact) => boolean {
  const wanted = idOrText.trim();
  const needle = wanted.toLowerCase();
  return (fact) => fact.id === wanted || (needle !== "" && fact.text.toLowerCase().includes(needle));
}

/** Words of a fact as compared for copies: letters and digits, lower case, short words dropped (numbers kept). */
function factWords(text: string): string[] {
  return (text.normalize("NFKC").toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((word) => word.length >= 3 || /^\p{N}+$/u.test(word));
}

/** Share of a shared fact's words that make a chat fact its copy. */
export const COPY_WORD_SHARE = 0.6;

/**
 * Whether `text` copies `original` (a fact someone shared with a group, issue 29): one holds the
 * other's words in order, or `text` holds most of the original's words (at least two, and
 * COPY_WORD_SHARE of them) in any order — "Zoe is on sick leave until Friday" and "Note: Zoe on
 * sick leave, back Friday" are copies; "Zoe likes trains" of "Zoe is on sick leave" is not.
 */
export function copiesFact(text: string, original: string): boolean {
  const words = factWords(text);
  const source = factWords(original);
  if (words.length === 0 || source.length === 0) return false;
  const joined = ` ${words.join(" ")} `;
  const sourceJoined = ` ${source.join(" ")} `;
  if (joined.includes(sourceJoined) || (words.length >= 2 && sourceJoined.includes(joined))) return true;
  const present = new Set(words);
  const distinct = [...new Set(source)];
  const held = distinct.filter((word) => present.has(word)).length;
  return held >= 2 && held / distinct.length >= COPY_WORD_SHARE;
}
