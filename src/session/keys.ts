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
  channelCursors: (platform: string) => `${prefix}:cursors:${platform}`,
  activityChannel: `${prefix}:activity`,
  controlChannel: `${prefix}:control`,
});
