/**
 * A bounded record of each session's turns, for the operator's console (its timeline plot): one
 * entry per commit that ran the model or compacted — context tokens, cached share, cost, and the
 * compactions it ran with what they folded. Written after the commit (not in its script: a
 * process that dies between the two loses one entry, never a turn), capped per session, and
 * removed with the session's keys (under its hash tag). Also a daily usage ledger (by chat, user
 * and model), kept `LEDGER_KEEP_DAYS`.
 */
import type { Redis } from "ioredis";
import type { InboundMessage } from "../core/channel.js";
import type { SessionState, SessionStats } from "./state.js";

/** Entries kept per session (the oldest go first): ~300 bytes each, ~150 KB per session at most. */
export const TURN_HISTORY_KEPT = 500;
/** Days a day's usage ledger is kept. */
export const LEDGER_KEEP_DAYS = 35;

/** One compaction, as the engine notes it in the session state (the last few; `seq` = the session's compaction count after it). */
export interface CompactionMark {
  seq: number;
  at: number;
  reason: string;
  status: string;
  tokensBefore: number;
  tokensAfter: number;
  summarizerModel: string | null;
  /** Messages it folded out of the live context, and their transcript ids. */
  folded: number;
  firstId?: string;
  lastId?: string;
}

/** Compaction marks kept in the state: more than one turn can run (hygiene, in-loop, /compress). */
export const COMPACTION_MARKS_KEPT = 8;

/** Adds a mark to the state's engine fields (the context engine calls this after each fold). */
export function noteCompaction(state: SessionState, mark: CompactionMark): void {
  const engine = state.engine as { compactionMarks?: CompactionMark[] };
  engine.compactionMarks = [...(engine.compactionMarks ?? []), mark].slice(-COMPACTION_MARKS_KEPT);
}

export interface TurnHistoryEntry {
  version: number;
  at: number;
  /** `turn`: a turn's commit; `idle`: an idle-time compaction's. */
  kind: "turn" | "idle";
  /** prompt_tokens of the turn's last step: the live context's size. */
  tokens: number;
  window: number;
  /** Where in-loop compaction starts, as the turn's last check computed it (fixed overhead with its own tools + COMPACTION_THRESHOLD of the window left). */
  threshold: number;
  /** This commit's main-model tokens (all its steps) and the summarizer's. */
  prompt: number;
  cached: number;
  completion: number;
  summarizerPrompt: number;
  summarizerCompletion: number;
  /** Priced at commit with the catalogue's prices of the chat's model. */
  usd: number;
  model: string;
  /** Who the turn answered (`telegram:42`), and the chat's name as the batch showed it. */
  user?: string;
  title?: string;
  compactions: CompactionMark[];
}

/** What the turn began from: its conversation and its running totals. */
export interface TurnStart {
  sessionId: string;
  stats: SessionStats;
}

/** What a commit hands the history recorder (the worker role prices it and writes the entry). */
export interface CommittedTurn {
  version: number;
  kind: "turn" | "idle";
  before: TurnStart;
  after: SessionState;
  /** The messages the turn answered (none for an idle compaction). */
  batch: readonly InboundMessage[];
}

export type TurnRecorder = (sessionKey: string, commit: CommittedTurn) => Promise<void>;

/**
 * The entry for a commit that moved `before` to `after`. A commit that started a new
 * conversation (`/new`, idle reset) counts the new one's totals only.
 */
export function turnHistoryEntry(
  before: TurnStart, after: SessionState,
  context: { version: number; at: number; kind: "turn" | "idle"; window: number; threshold: number; model: string; usd: (delta: { prompt: number; cached: number; completion: number; summarizerPrompt: number; summarizerCompletion: number }) => number; user?: string; title?: string },
): TurnHistoryEntry {
  const fresh = before.sessionId !== after.sessionId;
  const base = fresh ? undefined : before.stats;
  const delta = (field: keyof SessionStats) => Math.max(0, (after.stats[field] ?? 0) - (base?.[field] ?? 0));
  const tokens = {
    prompt: delta("promptTokens"), cached: delta("cachedTokens"), completion: delta("completionTokens"),
    summarizerPrompt: delta("summarizerPromptTokens"), summarizerCompletion: delta("summarizerCompletionTokens"),
  };
  const marks = (after.engine as { compactionMarks?: CompactionMark[] }).compactionMarks ?? [];
  const since = base?.compactions ?? 0;
  return {
    version: context.version, at: context.at, kind: context.kind,
    tokens: after.stats.lastPromptTokens, window: context.window, threshold: context.threshold,
    ...tokens,
    usd: context.usd(tokens),
    model: context.model,
    ...(context.user ? { user: context.user } : {}),
    ...(context.title ? { title: context.title } : {}),
    compactions: marks.filter((mark) => mark.seq > since && mark.seq <= after.stats.compactions),
  };
}

export const turnHistoryKey = (prefix: string, sessionKey: string) => `${prefix}:{${sessionKey}}:turn-history`;
/** Hash of one UTC day's usage: `chat|<sessionKey>|usd`, `user|<platform:id>|tokens`, `model|<name>|usd`… */
export const usageLedgerKey = (prefix: string, day: string) => `${prefix}:{usage}:d:${day}`;

/**
 * Appends the entry (capped) and books it in its day's ledger; one round trip. Two pipelines sent
 * together, one per slot (the session's, `{usage}`): a Cluster refuses a pipeline across slots.
 */
export async function appendTurnHistory(redis: Redis, prefix: string, sessionKey: string, entry: TurnHistoryEntry): Promise<void> {
  const key = turnHistoryKey(prefix, sessionKey);
  const day = new Date(entry.at).toISOString().slice(0, 10);
  const ledger = usageLedgerKey(prefix, day);
  const tokens = entry.prompt + entry.completion + entry.summarizerPrompt + entry.summarizerCompletion;
  const history = redis.pipeline().rpush(key, JSON.stringify(entry)).ltrim(key, -TURN_HISTORY_KEPT, -1);
  const pipeline = redis.pipeline();
  const owners = [`chat|${sessionKey}`, `model|${entry.model}`, ...(entry.user ? [`user|${entry.user}`] : [])];
  for (const owner of owners) {
    if (entry.usd > 0) pipeline.hincrbyfloat(ledger, `${owner}|usd`, entry.usd);
    if (tokens > 0) pipeline.hincrby(ledger, `${owner}|tokens`, tokens);
  }
  const saved = entry.compactions.reduce((sum, mark) => sum + Math.max(0, mark.tokensBefore - mark.tokensAfter), 0);
  if (saved > 0) pipeline.hincrby(ledger, "saved|all|tokens", saved);
  if (entry.compactions.length > 0) pipeline.hincrby(ledger, "compactions|all|count", entry.compactions.length);
  pipeline.expire(ledger, LEDGER_KEEP_DAYS * 86_400);
  const results = (await Promise.all([history.exec(), pipeline.exec()])).flatMap((replies) => replies ?? []);
  const failed = results.find(([error]) => error);
  if (failed?.[0]) throw failed[0];
}

/** The session's entries, oldest first (at most `TURN_HISTORY_KEPT`). */
export async function readTurnHistory(redis: Redis, prefix: string, sessionKey: string): Promise<TurnHistoryEntry[]> {
  return (await redis.lrange(turnHistoryKey(prefix, sessionKey), 0, -1)).map((raw) => JSON.parse(raw) as TurnHistoryEntry);
}

/** The session's latest entry (the sessions list's context meter). */
export async function lastTurnOf(redis: Redis, prefix: string, sessionKey: string): Promise<TurnHistoryEntry | undefined> {
  const raw = await redis.lindex(turnHistoryKey(prefix, sessionKey), -1);
  return raw === null ? undefined : (JSON.parse(raw) as TurnHistoryEntry);
}

/** One day's ledger, parsed: owner kind → owner → { usd, tokens }. */
export async function readUsageLedger(redis: Redis, prefix: string, day: string): Promise<Map<string, Map<string, { usd: number; tokens: number }>>> {
  const raw = await redis.hgetall(usageLedgerKey(prefix, day));
  const out = new Map<string, Map<string, { usd: number; tokens: number }>>();
  for (const [field, value] of Object.entries(raw)) {
    const last = field.lastIndexOf("|");
    const first = field.indexOf("|");
    if (first < 0 || last <= first) continue;
    const kind = field.slice(0, first);
    const owner = field.slice(first + 1, last);
    const unit = field.slice(last + 1);
    const owners = out.get(kind) ?? new Map<string, { usd: number; tokens: number }>();
    out.set(kind, owners);
    const figures = owners.get(owner) ?? { usd: 0, tokens: 0 };
    owners.set(owner, figures);
    if (unit === "usd") figures.usd += Number(value);
    else figures.tokens += Number(value);
  }
  return out;
}

/** Data rights: removes owners (`user|telegram:42`, `chat|tg:42`) from every kept day's ledger. → fields removed. */
export async function forgetInUsageLedger(redis: Redis, prefix: string, owners: readonly string[], now: number): Promise<number> {
  if (owners.length === 0) return 0;
  const fields = owners.flatMap((owner) => [`${owner}|usd`, `${owner}|tokens`]);
  let removed = 0;
  for (let day = 0; day <= LEDGER_KEEP_DAYS; day++) {
    removed += await redis.hdel(usageLedgerKey(prefix, new Date(now - day * 86_400_000).toISOString().slice(0, 10)), ...fields);
  }
  return removed;
}

/** Rewrites one entry only if it is still the one read (a concurrent append or trim moves indices). */
const REPLACE_ENTRY = `if redis.call('LINDEX', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('LSET', KEYS[1], ARGV[1], ARGV[3]) return 1 end return 0`;

/**
 * Data rights: in every conversation's turn history (group chats keep theirs when a member is
 * deleted), entries that name `user` (`telegram:42`) lose that name. `keys` lists the
 * turn-history keys to look at (SCAN by the caller). → entries rewritten.
 */
export async function forgetInTurnHistory(redis: Redis, keys: readonly string[], user: string): Promise<number> {
  const needle = JSON.stringify(user);
  let rewritten = 0;
  for (const key of keys) {
    const entries = await redis.lrange(key, 0, -1);
    for (const [index, raw] of entries.entries()) {
      if (!raw.includes(needle)) continue;
      const entry = JSON.parse(raw) as TurnHistoryEntry;
      if (entry.user !== user) continue;
      const { user: _forgotten, ...rest } = entry;
      void _forgotten;
      rewritten += Number(await redis.eval(REPLACE_ENTRY, 1, key, String(index), raw, JSON.stringify(rest)));
    }
  }
  return rewritten;
}
