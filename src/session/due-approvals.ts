import type { Redis } from "ioredis";

/**
 * Pending tool approvals by when they expire (one sorted set for the deployment): the sweeper
 * finds an approval whose timeout job was lost here, and gives the job back.
 */
export class DueApprovals {
  constructor(private readonly redis: Redis, private readonly key: string) {}

  /**
   * Records approvals a turn is about to commit as pending, by when they expire (before the
   * commit: a turn that dies after committing leaves the record, and the sweeper the job).
   */
  async expect(sessionKey: string, approvals: ReadonlyArray<{ approvalId: string; dueAt: number }>): Promise<void> {
    if (approvals.length === 0) return;
    await this.redis.zadd(this.key, ...approvals.flatMap(({ approvalId, dueAt }) => [dueAt, member(sessionKey, approvalId)]));
  }

  /** Pending approvals due by `now` (at most `limit`), oldest first. */
  async due(now: number, limit = 100): Promise<Array<{ sessionKey: string; approvalId: string }>> {
    const members = await this.redis.zrangebyscore(this.key, "-inf", now, "LIMIT", 0, limit);
    return members.flatMap((entry) => {
      const cut = entry.lastIndexOf("\n");
      return cut > 0 ? [{ sessionKey: entry.slice(0, cut), approvalId: entry.slice(cut + 1) }] : [];
    });
  }

  /** The approval's timeout job exists again (or it was answered): no more for the sweeper to do. */
  async forget(sessionKey: string, approvalId: string): Promise<void> {
    await this.redis.zrem(this.key, member(sessionKey, approvalId));
  }
}

const member = (sessionKey: string, approvalId: string): string => `${sessionKey}\n${approvalId}`;
