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
/** A preview request must end this long before its claim's hold does (the claim's own round trip, clock steps). */
const CLAIM_MARGIN_MS = 250;
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
    /** How long a claim holds the record (and bounds the request it covers). @defaultValue PREVIEW_REQUEST_MS */
    requestMs?: number;
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
    const holdMs = this.options.requestMs ?? PREVIEW_REQUEST_MS;
    // Taken before the claim is sent: the record's hold starts later, so this errs early.
    const claimedAt = this.#now();
    try {
      const claim = await records.claim(update.sessionKey, update.previewId, this.#owner, holdMs);
      if (claim.status === "closed") {
        live.done = true;
        return;
      }
      if (claim.status === "busy") return;
      // The request must be over before the claim's hold is: past it, the final may take the
      // preview. A gateway that stalled since the claim (event loop blocked, process stopped)
      // finds no time left and writes nothing (issue 28 item 5).
      const leftMs = holdMs - (this.#now() - claimedAt) - CLAIM_MARGIN_MS;
      if (leftMs <= 0) {
        log.info({ previewId: update.previewId, chat, overMs: -leftMs }, "preview-claim-expired; write skipped");
        await records.release(update.sessionKey, update.previewId, this.#owner).catch((error: unknown) => log.debug({ err: error }, "preview-release-failed"));
        return;
      }
      const signal = AbortSignal.any([this.#abort.signal, AbortSignal.timeout(leftMs)]);
      if (claim.status === "create") {
        let messageId: string;
        try {
          const late = { signal: this.#abort.signal, arrived: (made: string) => void this.#arrived(update, text, made, port) };
          messageId = await port.create(update.target, text, signal, update.previewId, late);
        } catch (error) {
          // An answer lost after the request went out (timeout, reset, 5xx): the message may
          // exist. The record keeps that, so the next create or the final can find it, and so
          // can the answer if it still comes (`#arrived`).
          const refused = error instanceof PermanentError || (error instanceof RetryableError && error.retryAfterMs !== undefined);
          if (refused) await records.release(update.sessionKey, update.previewId, this.#owner).catch((releaseError: unknown) => log.debug({ err: releaseError }, "preview-release-failed"));
          else {
            log.info({ previewId: update.previewId, chat, err: error }, "preview-create-outcome-unknown");
            await records.lost(update.sessionKey, update.previewId, this.#owner).catch((lostError: unknown) => log.debug({ err: lostError }, "preview-lost-not-recorded"));
          }
          throw error;
        }
        this.stats.writes++;
        live.shown = text;
        if (!(await records.opened(update.sessionKey, update.previewId, this.#owner, messageId))) {
          // The final came first (it found no preview and sent itself): this one must go.
          live.done = true;
          await port.remove(update.target, messageId).catch((error: unknown) => log.debug({ err: error }, "preview-remove-failed"));
        }
        return;
      }
      try {
        await port.edit(update.target, claim.messageId, text, signal);
        this.stats.writes++;
        live.shown = text;
      } finally {
        await this.#afterEdit(update, claim.messageId, port);
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

  /**
   * A create recorded `lost` was answered late after all (Telegram, where nothing else can find
   * that message): the message becomes the preview if nothing took its place meanwhile, else —
   * another create's message, or the final, is there — it is deleted, so no status stays
   * beside the final (issue 28 item 5). Unsure (the record could not be asked): deleted too; a
   * preview that loses its message is shown again by the next create, and the final replaces
   * whatever it finds.
   */
  async #arrived(update: PreviewUpdate, text: string, messageId: string, port: PreviewPort): Promise<void> {
    const log = this.options.logger;
    const where = { previewId: update.previewId, chatId: update.target.chatId, messageId };
    let kept = false;
    try {
      kept = await this.options.records.arrived(update.sessionKey, update.previewId, this.#owner, messageId);
    } catch (error) {
      log.warn({ ...where, err: error }, "preview-late-create-not-recorded; deleting it");
    }
    log.info({ ...where, kept }, "preview-create-answered-late");
    if (!kept) {
      await port.remove(update.target, messageId).catch((error: unknown) => log.warn({ ...where, err: error }, "preview-late-create-not-removed"));
      return;
    }
    this.stats.writes++;
    const live = this.#live.get(update.previewId);
    if (live && !live.done) {
      live.shown = text;
      this.#schedule(live);
    }
  }

  /**
   * The edit is over (answered or failed: it may have landed either way). If the final took the
   * preview meanwhile, the edit may now show over it: put back what the final left (deleted, or
   * its text), or, when the final has not said yet, leave a mark that makes it do so itself.
   */
  async #afterEdit(update: PreviewUpdate, messageId: string, port: PreviewPort): Promise<void> {
    const log = this.options.logger;
    try {
      const edited = await this.options.records.edited(update.sessionKey, update.previewId, this.#owner);
      if (edited.status === "ok") return;
      const live = this.#live.get(update.previewId);
      if (live) live.done = true;
      log.warn({ previewId: update.previewId, chatId: update.target.chatId, putBack: edited.status === "reassert" }, "preview-edit-landed-after-final");
      if (edited.status !== "reassert") return;
      if (edited.shown === "") await port.remove(update.target, messageId);
      else await port.edit(update.target, messageId, edited.shown, AbortSignal.timeout(this.options.requestMs ?? PREVIEW_REQUEST_MS));
    } catch (error) {
      log.warn({ previewId: update.previewId, chatId: update.target.chatId, err: error }, "preview-final-not-put-back");
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
