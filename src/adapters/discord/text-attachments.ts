/**
 * Downloads one text attachment and decodes it, within a size and time budget. Self-contained
 * (global fetch, no discord.js) so it can move to src/media when that room is built.
 *
 * The size is checked three times, each before more bytes are read: Discord's `size` field
 * (no request at all), the response's content-length (before the body), and the bytes as
 * they stream in (a server that lies or sends no length is cut off at the limit).
 */

export interface TextDownloadLimits {
  /** Larger files are refused. */
  maxBytes: number;
  /** The whole download, headers and body, must finish within this. */
  timeoutMs: number;
}

export type TextDownload = { ok: true; text: string } | { ok: false; failure: "too-large" | "failed"; detail: string };

export async function downloadText(file: { url: string; size: number }, limits: TextDownloadLimits, fetchImpl: typeof fetch = fetch): Promise<TextDownload> {
  if (file.size > limits.maxBytes) return tooLarge(`${file.size} bytes announced`, limits);
  const signal = AbortSignal.timeout(limits.timeoutMs);
  try {
    const response = await fetchImpl(file.url, { signal });
    if (!response.ok || !response.body) {
      await response.body?.cancel().catch(() => undefined);
      return { ok: false, failure: "failed", detail: `HTTP ${response.status}` };
    }
    const declared = Number(response.headers.get("content-length") ?? Number.NaN);
    if (declared > limits.maxBytes) {
      await response.body.cancel().catch(() => undefined);
      return tooLarge(`content-length ${declared}`, limits);
    }
    const bytes = await readAtMost(response.body, limits.maxBytes);
    if (bytes === undefined) return tooLarge("body longer than announced", limits);
    const text = new TextDecoder("utf-8").decode(bytes);
    // A text/* label on a binary file: not something to hand the model.
    if (text.includes("\u0000")) return { ok: false, failure: "failed", detail: "binary content" };
    return { ok: true, text };
  } catch (error) {
    const detail = signal.aborted ? `no answer within ${limits.timeoutMs} ms` : error instanceof Error ? error.message : String(error);
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

const tooLarge = (detail: string, limits: TextDownloadLimits): TextDownload => ({ ok: false, failure: "too-large", detail: `${detail}, the limit is ${limits.maxBytes}` });
