/**
 * Downloads one text attachment and decodes it, within a size and time budget: Discord's `size`
 * field is checked before any request, then src/media's bounded download checks the response's
 * content-length and the bytes as they stream in (a server that lies or sends no length is cut
 * off at the limit).
 */
import { download } from "../../media/index.js";

export interface TextDownloadLimits {
  /** Larger files are refused. */
  maxBytes: number;
  /** The whole download, headers and body, must finish within this. */
  timeoutMs: number;
}

export type TextDownload = { ok: true; text: string } | { ok: false; failure: "too-large" | "failed"; detail: string };

export async function downloadText(file: { url: string; size: number }, limits: TextDownloadLimits, fetchImpl: typeof fetch = fetch): Promise<TextDownload> {
  if (file.size > limits.maxBytes) return { ok: false, failure: "too-large", detail: `${file.size} bytes announced, the limit is ${limits.maxBytes}` };
  const result = await download(file.url, limits, {}, fetchImpl);
  if (!result.ok) return { ok: false, failure: result.failure, detail: result.detail };
  const text = new TextDecoder("utf-8").decode(result.bytes);
  // A text/* label on a binary file: not something to hand the model.
  if (text.includes("\u0000")) return { ok: false, failure: "failed", detail: "binary content" };
  return { ok: true, text };
}
