/**
 * When the adapter catches up (backfill.ts does the fetching): after every READY, one backfill
 * at a time, with live messages held behind it (at most `holdMs`) so older messages reach the
 * ingress first.
 */
import type { Client } from "discord.js";
import { errorMessage } from "../../errors.js";
import type { Logger } from "../../logger.js";
import type { ChannelCursors } from "../channel-adapter.js";
import { DEFAULT_BACKFILL_LIMITS, runBackfill, type BackfillLimits } from "./backfill.js";
import type { Intake } from "./intake.js";

export interface CatchUpOptions {
  client: Client;
  logger: Logger;
  /** Allowed and always-on channels (their threads too); DMs are caught up regardless. */
  channelIds: ReadonlySet<string>;
  limits?: Partial<BackfillLimits>;
  /** Live messages wait at most this long behind a backfill. */
  holdMs: number;
  intake(): Intake | undefined;
  cursors(): ChannelCursors | undefined;
  stopped(): boolean;
}

export class CatchUp {
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly options: CatchUpOptions) {}

  /** The channels caught up (their cursors are kept; DMs' too). */
  get channelIds(): ReadonlySet<string> {
    return this.options.channelIds;
  }

  /** Settles once the backfills started so far are over. */
  get settled(): Promise<void> {
    return this.running;
  }

  /** One backfill at a time; live messages wait behind it (at most holdMs) to keep order. */
  start(shardId: number): void {
    const intake = this.options.intake();
    const run = this.running.then(() => this.backfill(shardId));
    this.running = run;
    if (!intake) return;
    const { holdMs, logger } = this.options;
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        logger.warn({ shardId, holdMs }, "discord backfill still running; live messages no longer wait for it");
        resolve();
      }, holdMs);
      timer.unref();
    });
    void intake.hold(Promise.race([run, limit]).finally(() => clearTimeout(timer)));
  }

  private async backfill(shardId: number): Promise<void> {
    const intake = this.options.intake();
    const cursors = this.options.cursors();
    const { logger } = this.options;
    if (!intake || !cursors || this.options.stopped()) return;
    try {
      const report = await runBackfill({
        client: this.options.client,
        cursors,
        channelIds: this.options.channelIds,
        enqueue: (message) => intake.enqueue(message),
        stopped: () => this.options.stopped(),
        logger,
        limits: { ...DEFAULT_BACKFILL_LIMITS, ...this.options.limits },
      });
      const log = report.truncated.length > 0 ? logger.warn.bind(logger) : logger.info.bind(logger);
      log({ shardId, ...report }, report.truncated.length > 0 ? "discord backfill hit its bound; only the newest messages were caught up" : "discord backfill done");
    } catch (error) {
      logger.warn({ shardId, error: errorMessage(error) }, "discord backfill failed");
    }
  }
}
