/**
 * Renders the live previews workers publish (docs/streaming.md) on the gateway that has the
 * platform's adapter. Per chat, at most one preview write per `minIntervalMs`: updates that
 * arrive meanwhile replace each other (the latest wins), they are never queued; a rate-limit
 * answer pushes the chat's next preview write back by the time asked. The final answer never
 * passes through here (delivery sends it), so nothing here can delay or change it; the durable
 * record (PreviewRecords) keeps an interim edit from landing over it.
 */
import { randomUUID } from "node:crypto";
import type { PreviewPort } from "../adapters/channel-adapter.js";
import type { Platform, PreviewUpdate } from "../core/channel.js";
import { PermanentError, RetryableError } from "../errors.js";
import type { Logger } from "../logger.js";
import type { PreviewRecords } from "../session/previews.js";

/** Longest a preview request may take; the final waits at most this long for one in flight. */
export const PREVIEW_REQUEST_MS = 5_000;
/** A preview with no update for this long is forgotten here (its record stays in Redis). */
const IDLE_FORGET_MS = 10 * 60_000;

interface Live {
  update: PreviewUpdate;
  shown?: string;
  timer?: NodeJS.Timeout;
  busy: boolean;
  done: boolean;
  lastSeen: number;
}

export interface PreviewStats {
  /** Preview messages created and edits made that the platform accepted. */
  writes: number;
  /** Updates replaced by a newer one before they were shown. */
  skipped: number;
  rateLimited: number;
}

export class PreviewRenderer {
  readonly #owner = `gw-${randomUUID().slice(0, 8)}`;
  readonly #live = new Map<string, Live>();
  /** platform:chat → earliest time of the next preview write. */
  readonly #nextAt = new Map<string, number>();
  readonly #abort = new AbortController();
  readonly stats: PreviewStats = { writes: 0, skipped: 0, rateLimited: 0 };

  constructor(private readonly options: {
    records: PreviewRecords;
    ports: ReadonlyMap<Platform, PreviewPort>;
    logger: Logger;
    now?: () => number;
  }) {}

  #now(): number {
    return this.options.now?.() ?? Date.now();
  }

  /** A preview update from a worker (pub/sub). Never throws. */
  accept(update: PreviewUpdate): void {
    if (this.#abort.signal.aborted || !this.options.ports.has(update.target.platform)) return;
    const existing = this.#live.get(update.previewId);
    if (existing?.done) return;
    // The update waiting here was never shown: the newer one replaces it.
    if (existing && existing.update.text !== existing.shown && existing.update.text !== update.text) this.stats.skipped++;
    const live = existing ?? { update, busy: false, done: false, lastSeen: 0 };
    live.update = update;
    live.lastSeen = this.#now();
    this.#live.set(update.previewId, live);
    this.#schedule(live);
    this.#forgetIdle();
  }

  #chat(update: PreviewUpdate): string {
    return `${update.target.platform}:${update.target.chatId}`;
  }

  #schedule(live: Live): void {
    if (live.busy || live.timer || live.done || live.update.text === live.shown) return;
    const wait = Math.max(0, (this.#nextAt.get(this.#chat(live.update)) ?? 0) - this.#now());
    live.timer = setTimeout(() => {
      live.timer = undefined;
      void this.#render(live);
    }, wait);
  }

  async #render(live: Live): Promise<void> {
    const { update } = live;
    const port = this.options.ports.get(update.target.platform);
    if (!port || live.done || this.#abort.signal.aborted) return;
    // Another preview of the same chat may have written meanwhile: wait for the chat's turn.
    const chat = this.#chat(update);
    if ((this.#nextAt.get(chat) ?? 0) > this.#now()) return this.#schedule(live);
    live.busy = true;
    const text = update.text;
    const { records } = this.options;
    const log = this.options.logger;
    this.#nextAt.set(chat, this.#now() + port.minIntervalMs(update.target));
    try {
      const claim = await records.claim(update.sessionKey, update.previewId, this.#owner, PREVIEW_REQUEST_MS);
      if (claim.status === "closed") {
        live.done = true;
        return;
      }
      if (claim.status === "busy") return;
      const signal = AbortSignal.any([this.#abort.signal, AbortSignal.timeout(PREVIEW_REQUEST_MS)]);
      try {
        if (claim.status === "create") {
          const messageId = await port.create(update.target, text, signal, update.previewId);
          this.stats.writes++;
          live.shown = text;
          if (!(await records.opened(update.sessionKey, update.previewId, this.#owner, messageId))) {
            // The final came first (it found no preview and sent itself): this one must go.
            live.done = true;
            await port.remove(update.target, messageId).catch((error: unknown) => log.debug({ err: error }, "preview-remove-failed"));
          }
          return;
        }
        await port.edit(update.target, claim.messageId, text, signal);
        this.stats.writes++;
        live.shown = text;
      } finally {
        await records.release(update.sessionKey, update.previewId, this.#owner).catch((error: unknown) => log.debug({ err: error }, "preview-release-failed"));
      }
    } catch (error) {
      if (error instanceof RetryableError && error.retryAfterMs !== undefined) {
        // Flood control: previews of this chat wait; the final is not ours to hold.
        this.stats.rateLimited++;
        this.#nextAt.set(chat, this.#now() + error.retryAfterMs);
        log.info({ chat, retryAfterMs: error.retryAfterMs }, "preview-rate-limited");
      } else if (error instanceof PermanentError) {
        live.done = true;
        log.info({ previewId: update.previewId, err: error }, "preview-refused");
      } else {
        log.debug({ previewId: update.previewId, err: error }, "preview-write-failed");
      }
    } finally {
      // The gap counts from when the write was answered, so the platform sees writes at least
      // the interval apart however long they took on the way.
      this.#nextAt.set(chat, Math.max(this.#nextAt.get(chat) ?? 0, this.#now() + port.minIntervalMs(update.target)));
      live.busy = false;
      if (!live.done) this.#schedule(live);
    }
  }

  #forgetIdle(): void {
    const now = this.#now();
    for (const [id, live] of this.#live) {
      if (!live.busy && !live.timer && now - live.lastSeen > IDLE_FORGET_MS) this.#live.delete(id);
    }
    for (const [chat, at] of this.#nextAt) if (at < now - IDLE_FORGET_MS) this.#nextAt.delete(chat);
  }

  /** A final took the preview over: nothing more is rendered for it here. */
  finished(previewId: string): void {
    const live = this.#live.get(previewId);
    if (!live) return;
    live.done = true;
    clearTimeout(live.timer);
    this.#live.delete(previewId);
  }

  close(): void {
    this.#abort.abort();
    for (const live of this.#live.values()) clearTimeout(live.timer);
    this.#live.clear();
  }
}
