/**
 * Redis keys of one deployment (`prefix`). Everything a session owns sits under
 * `<prefix>:s:<sessionKey>:*`, so one session can never read another's data by construction.
 */
export interface SessionKeys {
  state: string;
  version: string;
  transcript: string;
  /** Hash: message id → position in the transcript list (recall by id). */
  transcriptIndex: string;
  inbox: string;
  pending: string;
  outbox: string;
  outboxProgress: string;
  lease: string;
  abort: string;
  /** Hash: full originals of capped tool outputs of one conversation (session id), by message id. */
  toolOutputs(sessionId: string): string;
  archive(sessionId: string): string;
  archiveIndex(sessionId: string): string;
}

export function sessionKeys(prefix: string, sessionKey: string): SessionKeys {
  const base = `${prefix}:s:${sessionKey}`;
  return {
    state: `${base}:state`,
    version: `${base}:version`,
    transcript: `${base}:transcript`,
    transcriptIndex: `${base}:transcript-index`,
    inbox: `${base}:inbox`,
    pending: `${base}:pending`,
    outbox: `${base}:outbox`,
    outboxProgress: `${base}:outbox-progress`,
    lease: `${base}:lease`,
    abort: `${base}:abort`,
    toolOutputs: (sessionId) => `${base}:tool-outputs:${sessionId}`,
    archive: (sessionId) => `${prefix}:archive:${sessionKey}:${sessionId}`,
    archiveIndex: (sessionId) => `${prefix}:archive:${sessionKey}:${sessionId}:index`,
  };
}

export const globalKeys = (prefix: string) => ({
  /** Sessions with inbox, pending or outbox entries: the sweeper's work list. */
  workSet: `${prefix}:work`,
  seen: (platform: string, chatId: string, messageId: string) => `${prefix}:seen:${platform}:${chatId}:${messageId}`,
  approvedUsers: (platform: string) => `${prefix}:access:${platform}:users`,
  pairingCode: (code: string) => `${prefix}:pairing:code:${code}`,
  pairingUser: (platform: string, userId: string) => `${prefix}:pairing:user:${platform}:${userId}`,
  rate: (platform: string, userId: string, minute: number) => `${prefix}:rate:${platform}:${userId}:${minute}`,
  /** Hash: new chat id → the id it had before (a Telegram group upgraded to a supergroup). */
  chatMigrations: (platform: string) => `${prefix}:access:${platform}:migrated-chats`,
  channelCursors: (platform: string) => `${prefix}:cursors:${platform}`,
  activityChannel: `${prefix}:activity`,
  controlChannel: `${prefix}:control`,
  /** Says this Redis (under this prefix) is longhaul's: src/doctor/redis.ts. */
  marker: `${prefix}:longhaul`,
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
  sequence: `${prefix}:{sched}:sequence`,
});
