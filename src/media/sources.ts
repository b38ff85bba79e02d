/**
 * Fetches an attachment's bytes again from where it lives (docs/media.md): Telegram's getFile and
 * file route (bots can fetch files up to 20 MB), Discord's CDN (a URL refused as expired is
 * renewed by fetching the message again), or a plain URL. Plain fetch, no platform client, so a
 * worker on its own machine can do it with the tokens from its configuration. The token-bearing
 * URLs never leave this module: failures say what happened, not where.
 */
import type { Attachment } from "../core/attachments.js";
import { download, type Download, type DownloadLimits } from "./download.js";

export interface MediaSourceOptions {
  telegram?: { token: string; apiRoot: string };
  discord?: { token: string; apiRoot: string };
  fetchImpl?: typeof fetch;
}

/** Telegram refuses getFile for files over this; we refuse before asking. */
export const TELEGRAM_BOT_DOWNLOAD_LIMIT = 20 * 1024 * 1024;

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
        return fetchTelegram(telegram, source.fileId, { ...limits, maxBytes: Math.min(limits.maxBytes, TELEGRAM_BOT_DOWNLOAD_LIMIT) }, fetchImpl);
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

async function fetchTelegram(telegram: { token: string; apiRoot: string }, fileId: string, limits: DownloadLimits, fetchImpl: typeof fetch): Promise<Download> {
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
  return download(`${root}/file/bot${telegram.token}/${filePath}`, limits, {}, fetchImpl);
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
