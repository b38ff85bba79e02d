/**
 * Fetches an attachment's bytes again from where it lives (docs/media.md): Telegram's getFile and
 * file route (bots can fetch files up to 20 MB), Discord's CDN (a URL refused as expired is
 * renewed by fetching the message again), or a plain URL. Plain fetch, no platform client, so a
 * worker on its own machine can do it with the tokens from its configuration. The token-bearing
 * URLs never leave this module: failures say what happened, not where.
 */
import { readFile, stat } from "node:fs/promises";
import { isAbsolute } from "node:path";
import type { Attachment } from "../core/attachments.js";
import { download, type Download, type DownloadLimits } from "./download.js";

export interface MediaSourceOptions {
  /** `local`: the Bot API server runs with --local (TELEGRAM_LOCAL_BOT_API). */
  telegram?: TelegramSource;
  discord?: { token: string; apiRoot: string };
  fetchImpl?: typeof fetch;
}

/** Telegram refuses getFile for files over this; we refuse before asking. */
export const TELEGRAM_BOT_DOWNLOAD_LIMIT = 20 * 1024 * 1024;
/** A self-hosted Bot API server in --local mode lets bots have files up to 2,000 MB. */
export const TELEGRAM_LOCAL_DOWNLOAD_LIMIT = 2000 * 1024 * 1024;

interface TelegramSource {
  token: string;
  apiRoot: string;
  local?: boolean;
}

export type MediaFetcher = (attachment: Attachment, limits: DownloadLimits) => Promise<Download>;

export function createMediaFetcher(options: MediaSourceOptions): MediaFetcher {
  const fetchImpl = options.fetchImpl ?? fetch;
  return async (attachment, limits) => {
    if (attachment.size !== undefined && attachment.size > limits.maxBytes) {
      return { ok: false, failure: "too-large", detail: `${attachment.size} bytes announced, the limit is ${limits.maxBytes}` };
    }
    const source = attachment.source;
    switch (source.platform) {
      case "telegram": {
        const telegram = options.telegram;
        if (!telegram) return { ok: false, failure: "failed", detail: "no Telegram token configured in this worker" };
        const ceiling = telegram.local === true ? TELEGRAM_LOCAL_DOWNLOAD_LIMIT : TELEGRAM_BOT_DOWNLOAD_LIMIT;
        return fetchTelegram(telegram, source.fileId, { ...limits, maxBytes: Math.min(limits.maxBytes, ceiling) }, fetchImpl);
      }
      case "discord": {
        const first = await download(source.url, limits, {}, fetchImpl);
        if (first.ok || (first.status !== 403 && first.status !== 404) || !options.discord) return first;
        const fresh = await freshDiscordUrl(options.discord, source, limits, fetchImpl);
        return fresh === undefined ? first : download(fresh, limits, {}, fetchImpl);
      }
      case "url":
        return download(source.url, limits, {}, fetchImpl);
    }
  };
}

async function fetchTelegram(telegram: TelegramSource, fileId: string, limits: DownloadLimits, fetchImpl: typeof fetch): Promise<Download> {
  const root = telegram.apiRoot.replace(/\/+$/, "");
  const signal = limits.signal ? AbortSignal.any([limits.signal, AbortSignal.timeout(limits.timeoutMs)]) : AbortSignal.timeout(limits.timeoutMs);
  let filePath: string;
  try {
    const response = await fetchImpl(`${root}/bot${telegram.token}/getFile`, {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ file_id: fileId }), signal,
    });
    const body = (await response.json()) as { ok?: boolean; result?: { file_path?: string; file_size?: number }; description?: string };
    if (!body.ok || typeof body.result?.file_path !== "string") {
      const description = String(body.description ?? `HTTP ${response.status}`);
      return { ok: false, failure: /too big/i.test(description) ? "too-large" : "failed", detail: `getFile: ${description}`, status: response.status };
    }
    if (body.result.file_size !== undefined && body.result.file_size > limits.maxBytes) {
      return { ok: false, failure: "too-large", detail: `getFile: ${body.result.file_size} bytes, the limit is ${limits.maxBytes}` };
    }
    filePath = body.result.file_path;
  } catch (error) {
    return { ok: false, failure: "failed", detail: `getFile: ${error instanceof Error ? error.name : "error"}` };
  }
  if (isAbsolute(filePath)) {
    // A --local server answers with the file's path on its own disk and serves no file route:
    // the file is read there (the server's working directory mounted at the same path).
    if (telegram.local !== true) return { ok: false, failure: "failed", detail: "getFile gave a path on the Bot API server's disk: it runs with --local; set TELEGRAM_LOCAL_BOT_API=on and mount its directory here" };
    return readLocalFile(filePath, limits);
  }
  return download(`${root}/file/bot${telegram.token}/${filePath}`, limits, {}, fetchImpl);
}

/** A file on the local Bot API server's disk, within the limits. */
async function readLocalFile(path: string, limits: DownloadLimits): Promise<Download> {
  try {
    const { size } = await stat(path);
    if (size > limits.maxBytes) return { ok: false, failure: "too-large", detail: `${size} bytes on disk, the limit is ${limits.maxBytes}` };
    const signal = limits.signal ? AbortSignal.any([limits.signal, AbortSignal.timeout(limits.timeoutMs)]) : AbortSignal.timeout(limits.timeoutMs);
    return { ok: true, bytes: new Uint8Array(await readFile(path, { signal })), contentType: undefined };
  } catch (error) {
    // The path names the token's directory on the server: only the error's kind is told.
    const code = (error as { code?: unknown }).code;
    return { ok: false, failure: "failed", detail: `local Bot API file not readable (${typeof code === "string" ? code : error instanceof Error ? error.name : "error"})` };
  }
}

/** The attachment's current CDN URL, read off the message (Discord signs URLs for about a day). */
async function freshDiscordUrl(
  discord: { token: string; apiRoot: string },
  source: Extract<Attachment["source"], { platform: "discord" }>,
  limits: DownloadLimits,
  fetchImpl: typeof fetch,
): Promise<string | undefined> {
  try {
    const root = discord.apiRoot.replace(/\/+$/, "");
    const response = await fetchImpl(`${root}/v10/channels/${source.channelId}/messages/${source.messageId}`, {
      headers: { authorization: `Bot ${discord.token}` },
      signal: AbortSignal.timeout(limits.timeoutMs),
    });
    if (!response.ok) return undefined;
    const message = (await response.json()) as { attachments?: Array<{ id: string; url: string }> };
    return message.attachments?.find((attachment) => attachment.id === source.attachmentId)?.url;
  } catch {
    return undefined;
  }
}
