/**
 * Bounded downloads: the size is checked before the body is read (the announced size, then
 * content-length) and while it streams (a server that lies or sends no length is cut off at the
 * limit), and the whole download has a deadline. Errors never carry the URL: a Telegram file URL
 * holds the bot token.
 */

export interface DownloadLimits {
  maxBytes: number;
  timeoutMs: number;
  signal?: AbortSignal;
}

export type Download =
  | { ok: true; bytes: Uint8Array; contentType: string | undefined }
  | { ok: false; failure: "too-large" | "failed"; detail: string; status?: number };

export async function download(url: string, limits: DownloadLimits, init: RequestInit = {}, fetchImpl: typeof fetch = fetch): Promise<Download> {
  const signal = limits.signal ? AbortSignal.any([limits.signal, AbortSignal.timeout(limits.timeoutMs)]) : AbortSignal.timeout(limits.timeoutMs);
  try {
    const response = await fetchImpl(url, { ...init, signal });
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      return { ok: false, failure: "failed", detail: `HTTP ${response.status}`, status: response.status };
    }
    const declared = Number(response.headers.get("content-length") ?? Number.NaN);
    if (declared > limits.maxBytes) {
      await response.body.cancel().catch(() => undefined);
      return tooLarge(`content-length ${declared}`, limits.maxBytes);
    }
    const bytes = await readAtMost(response.body, limits.maxBytes);
    if (bytes === undefined) return tooLarge("body longer than the limit", limits.maxBytes);
    return { ok: true, bytes, contentType: response.headers.get("content-type") ?? undefined };
  } catch (error) {
    const detail = signal.aborted && !limits.signal?.aborted ? `no answer within ${limits.timeoutMs} ms` : error instanceof Error ? error.name : "error";
    return { ok: false, failure: "failed", detail };
  }
}

/** The body, or undefined as soon as it passes `maxBytes` (the rest is never read). */
async function readAtMost(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<Uint8Array | undefined> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

const tooLarge = (detail: string, maxBytes: number): Download => ({ ok: false, failure: "too-large", detail: `${detail}, the limit is ${maxBytes}` });
