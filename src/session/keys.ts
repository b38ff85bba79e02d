/**
 * Redis keys of one deployment (`prefix`). Everything a session owns sits under
 * `<prefix>:{<sessionKey>}:*`: the braces are a Redis Cluster hash tag, so every key one
 * session's Lua scripts touch lands in one slot, and one session can never read another's data
 * by construction. Deployment-wide keys (the sweeper's work list, access lists, channels) carry
 * no session tag and are never touched inside a per-session script.
 */
export interface SessionKeys {
  /** The session state without its live context (JSON). */
  state: string;
  /** List: the live context, one JSON message per entry (what the next LLM step sees). */
  live: string;
  version: string;
  transcript: string;
  /** Hash: message id → position in the transcript list (recall by id). */
  transcriptIndex: string;
  inbox: string;
  /** The batch the current turn claimed; it leaves only with that turn's commit. */
  pending: string;
  outbox: string;
  /** `<replyId>:<next part>` of the outbox head being delivered. */
  outboxProgress: string;
  /** `<replyId>:<failed attempts>` of the outbox head (dead-letters.ts). */
  outboxFailures: string;
  /** Hash: `<replyId>:<part>` → when that nonce-protected part went on the wire, marked at a gateway's exit (Outbox.markOnWire). */
  partsOnWire: string;
  /** List: items moved aside after failing for good (dead-letters.ts), newest last. */
  deadLetters: string;
  /** The turn lease: the token of the attempt allowed to commit. */
  lease: string;
  /** The token of the last attempt that committed (makes a re-sent commit idempotent). */
  lastCommit: string;
  /** The delivery lease: the token of the one delivery allowed to send and record parts. */
  deliveryLease: string;
  abort: string;
  /** Set while a move of this session (move-session.ts) waits for its running turn: no turn begins. */
  moving: string;
  /** Hash: preview id → where its live preview message is and who may edit it (previews.ts). */
  previews: string;
  /** The chat's long-term memory (src/memory): under the session's tag, so a move carries it. */
  memory: string;
  /**
   * What a memory tool call of a turn wrote (its idempotency key, src/core/call-key.ts → the
   * action and fact ids, never the fact's text): a re-run of the turn finds it (memory/tool.ts).
   */
  memoryWrite(callKey: string): string;
  /** Dedupe of one platform message id; kept in the session's slot (a message maps to one session). */
  seen(platform: string, messageId: string): string;
  /** Hash: full originals of capped tool outputs of one conversation (session id), by message id. */
  toolOutputs(sessionId: string): string;
  /** The chat's stored originals, oldest first, across its conversations (tool-outputs.ts: the quota). */
  toolOutputsIndex: string;
  archive(sessionId: string): string;
  archiveIndex(sessionId: string): string;
}

export function sessionKeys(prefix: string, sessionKey: string): SessionKeys {
  const base = `${prefix}:{${sessionKey}}`;
  return {
    state: `${base}:state`,
    live: `${base}:live`,
    version: `${base}:version`,
    transcript: `${base}:transcript`,
    transcriptIndex: `${base}:transcript-index`,
    inbox: `${base}:inbox`,
    pending: `${base}:pending`,
    outbox: `${base}:outbox`,
    outboxProgress: `${base}:outbox-progress`,
    outboxFailures: `${base}:outbox-failures`,
    partsOnWire: `${base}:parts-on-wire`,
    deadLetters: `${base}:dead-letters`,
    lease: `${base}:lease`,
    lastCommit: `${base}:last-commit`,
    deliveryLease: `${base}:delivery-lease`,
    abort: `${base}:abort`,
    moving: `${base}:moving`,
    previews: `${base}:previews`,
    memory: `${base}:memory`,
    memoryWrite: (callKey) => `${base}:memory-write:${callKey}`,
    seen: (platform, messageId) => `${base}:seen:${platform}:${messageId}`,
    toolOutputs: (sessionId) => `${base}:tool-outputs:${sessionId}`,
    toolOutputsIndex: `${base}:tool-outputs-index`,
    archive: (sessionId) => `${base}:archive:${sessionId}`,
    archiveIndex: (sessionId) => `${base}:archive:${sessionId}:index`,
  };
}

export const globalKeys = (prefix: string) => ({
  /** Sessions with inbox, pending or outbox entries: the sweeper's work list. */
  workSet: `${prefix}:work`,
  /**
   * Sorted set: pending approvals (`<sessionKey>\n<approvalId>`) by when they expire, written
   * before the commit that asks: the sweeper adds the timeout job of any that is due, in case
   * the one added after the commit was lost.
   */
  approvalsDue: `${prefix}:approvals-due`,
  approvedUsers: (platform: string) => `${prefix}:access:${platform}:users`,
  /**
   * Pairing requests share one hash tag: a request is written as a code and its user in one
   * MULTI, and listed with one MGET, which a Redis Cluster allows only within a slot. (Before the
   * tag they were `<prefix>:pairing:…`; requests pending at the upgrade expire within the hour.)
   */
  pairingCode: (code: string) => `${prefix}:{pairing}:code:${code}`,
  pairingUser: (platform: string, userId: string) => `${prefix}:{pairing}:user:${platform}:${userId}`,
  rate: (platform: string, userId: string, minute: number) => `${prefix}:rate:${platform}:${userId}:${minute}`,
  /** Hash: new chat id → the id it had before (a Telegram group upgraded to a supergroup). */
  chatMigrations: (platform: string) => `${prefix}:access:${platform}:migrated-chats`,
  channelCursors: (platform: string) => `${prefix}:cursors:${platform}`,
  activityChannel: `${prefix}:activity`,
  controlChannel: `${prefix}:control`,
  /** Live previews of running turns (lossy): workers publish, gateways render (docs/streaming.md). */
  previewChannel: `${prefix}:preview`,
  /**
   * Budget counters of one account (`chat:<sessionKey>`, `user:tg:<id>`) in one period (`d:2026-12-01`,
   * `m:2026-12`). One hash tag for all of them: a reservation checks a user's and a chat's
   * counters in one script.
   */
  budget: (account: string, period: string) => `${prefix}:{budget}:${account}:${period}`,
  /** Hash: limits an admin set with /budget for one account (`daily.usd` → "5", or "off"). */
  budgetLimits: (account: string) => `${prefix}:{budget}:limits:${account}`,
  /** Every write of a `budgetLimits` hash publishes its account here (workers' limits caches forget it). */
  budgetLimitsChannel: `${prefix}:budget-limits`,
  /**
   * The send budget of one bot (src/gateway/send-budget.ts): its token buckets (`b:<name>`) and
   * penalties (`p:<chat>`, `p:*` for the whole bot) share the bot's hash tag, so one script
   * checks a chat's and the bot's buckets together, on a Redis Cluster too.
   */
  sendBudget: (platform: string, bot: string, name: string) => `${prefix}:{send:${platform}:${bot}}:${name}`,
  /** Says this Redis (under this prefix) is longhaul's: src/doctor/redis.ts. */
  marker: `${prefix}:longhaul`,
  /** Which key layout this deployment's data is in (absent: wave 1, `2`: hash-tagged). */
  layout: `${prefix}:layout`,
  /** Held while one process migrates the layout. */
  migrationLock: `${prefix}:layout-migration`,
  /** Until when (unix ms) wave-1 dedupe keys may still exist and must be consulted. */
  legacySeenUntil: `${prefix}:legacy-seen-until`,
});

/**
 * Scheduled items (src/schedule). One `{sched}` hash tag: the create script checks the chat's
 * and the user's caps in one step, so under Redis Cluster these keys must share a slot; they are
 * few and written rarely (≤ SCHEDULE_MAX_ITEMS per chat), unlike session state.
 */
export const scheduleKeys = (prefix: string) => ({
  item: (itemId: string) => `${prefix}:{sched}:item:${itemId}`,
  byChat: (platform: string, chatId: string) => `${prefix}:{sched}:chat:${platform}:${chatId}`,
  byUser: (platform: string, userId: string) => `${prefix}:{sched}:user:${platform}:${userId}`,
  all: `${prefix}:{sched}:items`,
  /** The item a tool call created (idempotency key of the turn that made it → item id): a re-run turn finds it. */
  created: (idempotencyKey: string) => `${prefix}:{sched}:created:${idempotencyKey}`,
  /** The answer of a tool call's edit/pause/resume/cancel (idempotency key → its text): a re-run turn gets it again. */
  done: (idempotencyKey: string) => `${prefix}:{sched}:done:${idempotencyKey}`,
  sequence: `${prefix}:{sched}:sequence`,
});

/** The current key layout; `migrateLayout` brings older data to it. */
export const KEY_LAYOUT = 2;

/**
 * Wave-1 keys (`<prefix>:s:<sessionKey>:<suffix>`, `<prefix>:archive:<sessionKey>:<id>`,
 * `<prefix>:seen:<platform>:<chatId>:<messageId>`), read only by the migration and by the
 * dedupe check while old dedupe keys can still be alive.
 */
export const legacyKeys = {
  suffixes: ["state", "version", "transcript", "transcript-index", "inbox", "pending", "outbox", "outbox-progress", "lease", "abort"] as const,
  session: (prefix: string, sessionKey: string, suffix: string) => `${prefix}:s:${sessionKey}:${suffix}`,
  sessionPattern: (prefix: string) => `${prefix}:s:*`,
  archivePattern: (prefix: string) => `${prefix}:archive:*`,
  seenPattern: (prefix: string) => `${prefix}:seen:*`,
  seen: (prefix: string, platform: string, chatId: string, messageId: string) => `${prefix}:seen:${platform}:${chatId}:${messageId}`,

  /** `<prefix>:s:<sessionKey>:<suffix>` → its parts, or undefined for another key. */
  parseSession(prefix: string, key: string): { sessionKey: string; suffix: string } | undefined {
    const head = `${prefix}:s:`;
    if (!key.startsWith(head)) return undefined;
    const rest = key.slice(head.length);
    // Longest suffix first: "transcript-index" before "transcript", "outbox-progress" before "outbox".
    const suffix = [...legacyKeys.suffixes].sort((a, b) => b.length - a.length).find((candidate) => rest.endsWith(`:${candidate}`));
    if (!suffix) return undefined;
    const sessionKey = rest.slice(0, rest.length - suffix.length - 1);
    return sessionKey === "" ? undefined : { sessionKey, suffix };
  },

  /**
   * `<prefix>:s:<sessionKey>:tool-outputs:<sessionId>` → its parts. Stored originals of capped
   * tool outputs came after wave 1, but a deployment may have run a build with them before the
   * hash-tagged layout; session ids hold no colon.
   */
  parseToolOutputs(prefix: string, key: string): { sessionKey: string; sessionId: string } | undefined {
    const head = `${prefix}:s:`;
    const marker = ":tool-outputs:";
    const at = key.lastIndexOf(marker);
    if (!key.startsWith(head) || at <= head.length) return undefined;
    const sessionId = key.slice(at + marker.length);
    return sessionId === "" || sessionId.includes(":") ? undefined : { sessionKey: key.slice(head.length, at), sessionId };
  },

  /** `<prefix>:archive:<sessionKey>:<sessionId>[:index]` → its parts (session ids hold no colon). */
  parseArchive(prefix: string, key: string): { sessionKey: string; sessionId: string; index: boolean } | undefined {
    const head = `${prefix}:archive:`;
    if (!key.startsWith(head)) return undefined;
    let rest = key.slice(head.length);
    const index = rest.endsWith(":index");
    if (index) rest = rest.slice(0, -":index".length);
    const cut = rest.lastIndexOf(":");
    if (cut <= 0) return undefined;
    return { sessionKey: rest.slice(0, cut), sessionId: rest.slice(cut + 1), index };
  },
};
