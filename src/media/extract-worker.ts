/**
 * The worker thread that turns one document's bytes into text (started by extract.ts, one per
 * file). Whatever a hostile file makes pdf.js do — inflate a stream to gigabytes, walk a huge
 * shared stream on every page, recurse through nested objects — happens here, where the
 * parent's memory watch, heap limit and deadline can end it without stalling the turn's loop.
 *
 * It imports nothing of ours: the same file runs compiled (dist) and as TypeScript under tsx.
 */
import { parentPort, workerData } from "node:worker_threads";

/** What the parent sends, once the worker said it is ready. */
export interface ExtractRequest {
  /** html: a web page's readable text (Readability over a linkedom DOM), for fetch_url. */
  type: "text" | "pdf" | "html";
  bytes: Uint8Array;
  /** html: the charset the server named; unset: a <meta charset>, else UTF-8. */
  charset?: string;
  /** html: the page's address, against which relative links are resolved. */
  url?: string;
  /** Pages read at most; later pages are left out and the text says so. */
  maxPages: number;
  /** Characters kept at most; extraction stops there and the text says so. */
  maxChars: number;
}

/** What it answers: `ready` once loaded (the parent's memory watch starts there), then one reply. */
export type ExtractReply =
  | { ready: true }
  | { ok: true; text: string; pages?: number; truncated?: string }
  | { ok: false; corrupt: boolean; detail: string };

/** C0/C1 controls other than tab, line and page breaks and ESC (ANSI colours in logs), and U+FFFD. */
const CONTROL = /[\u0000-\u0008\u000E-\u001A\u001C-\u001F\u007F-\u009F\uFFFD]/g;

class NotTextError extends Error {}

function decodeText(bytes: Uint8Array, maxChars: number): ExtractReply {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    // Not UTF-8: Latin-1 (windows-1252) never fails, and old Windows files are mostly that.
    text = new TextDecoder("latin1").decode(bytes);
  }
  if (text.includes("\u0000")) throw new NotTextError("binary content in a text file (NUL)");
  // Random or binary bytes decode as Latin-1 without complaint: about one character in eight
  // is then a control character, where real text (even logs) has next to none.
  const controls = text.match(CONTROL)?.length ?? 0;
  if (controls > 8 && controls > text.length / 100) throw new NotTextError(`binary-looking content (${controls} control characters)`);
  text = text.replace(/^\uFEFF/, "");
  if (text.length <= maxChars) return { ok: true, text };
  return { ok: true, text: cut(text, maxChars), truncated: `the file's first ${maxChars} characters of ${text.length}` };
}

/** Pages are separated by a blank line; text items by spaces or their own line breaks. */
async function extractPdf(request: ExtractRequest): Promise<ExtractReply> {
  const pdfjs = await import("pdfjs-dist/legacy/build/pdf.mjs");
  let document;
  try {
    document = await pdfjs.getDocument({ data: request.bytes, isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 }).promise;
  } catch (error) {
    return { ok: false, corrupt: true, detail: `not a readable PDF (${error instanceof Error ? error.name : "error"})` };
  }
  const pages: string[] = [];
  let chars = 0;
  let truncated: string | undefined;
  const last = Math.min(document.numPages, request.maxPages);
  for (let number = 1; number <= last; number++) {
    const page = await document.getPage(number);
    const content = await page.getTextContent();
    let text = "";
    for (const item of content.items) {
      if (!("str" in item)) continue;
      text += item.str + (item.hasEOL ? "\n" : item.str === "" ? "" : " ");
      if (chars + text.length > request.maxChars) break;
    }
    page.cleanup();
    text = text.replace(/[ \t]+\n/g, "\n").trim();
    if (text === "") continue;
    if (chars + text.length > request.maxChars) {
      pages.push(cut(text, Math.max(0, request.maxChars - chars)));
      truncated = `the first ${request.maxChars} characters, up to page ${number} of ${document.numPages}`;
      break;
    }
    pages.push(text);
    chars += text.length + 2;
  }
  if (truncated === undefined && document.numPages > last) truncated = `the first ${last} pages of ${document.numPages}`;
  return { ok: true, text: pages.join("\n\n"), pages: document.numPages, ...(truncated ? { truncated } : {}) };
}

/** Elements whose text is not the page's (scripts, styles, embedded objects). */
const SKIPPED = new Set(["SCRIPT", "STYLE", "NOSCRIPT", "TEMPLATE", "SVG", "IFRAME", "OBJECT", "EMBED", "CANVAS", "HEAD", "BUTTON", "SELECT", "INPUT", "TEXTAREA"]);
/** Elements that start a new line of text. */
const BLOCKS = new Set(["P", "DIV", "SECTION", "ARTICLE", "HEADER", "FOOTER", "MAIN", "ASIDE", "NAV", "BLOCKQUOTE", "TABLE", "THEAD", "TBODY", "TFOOT", "UL", "OL", "DL", "DT", "DD", "FIGURE", "FIGCAPTION", "FORM", "HR", "ADDRESS", "DETAILS", "SUMMARY", "CAPTION"]);
/** Deeper nesting than this is not walked (a crafted page of a million nested divs). */
const MAX_DEPTH = 200;

interface DomNode {
  nodeType: number;
  nodeName: string;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
  getAttribute?(name: string): string | null;
}

/**
 * A web page's readable text: Mozilla Readability picks the article (as Firefox's Reader View
 * does); a page it finds no article in is read whole, without scripts, styles and forms. The
 * text keeps headings (`#`), list items (`-`), table cells (`|`), code blocks and links
 * (`[text](url)`, absolute http(s) only).
 */
async function extractHtml(request: ExtractRequest): Promise<ExtractReply> {
  const [{ parseHTML }, { Readability }] = await Promise.all([import("linkedom"), import("@mozilla/readability")]);
  const html = decodeHtml(request.bytes, request.charset);
  const { document } = parseHTML(html);
  const title = (document.title ?? "").replace(/\s+/g, " ").trim();
  let article: { content?: string | null; title?: string | null } | null = null;
  try {
    // Readability changes the document it reads: the whole page stays in `html` for the fallback.
    article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], { charThreshold: 200 }).parse();
  } catch {
    article = null;
  }
  const root = article?.content ? parseHTML(`<!doctype html><html><body>${article.content}</body></html>`).document.body : parseHTML(html).document.body;
  const parts: string[] = [];
  walk(root as unknown as DomNode, parts, request.url, 0);
  let text = tidy(parts.join(""));
  const heading = (article?.title ?? "").replace(/\s+/g, " ").trim() || title;
  if (heading && !text.startsWith(`# ${heading}`)) text = `# ${heading}\n\n${text}`;
  if (text.length <= request.maxChars) return { ok: true, text };
  return { ok: true, text: cut(text, request.maxChars), truncated: `the page's first ${request.maxChars} characters of ${text.length}` };
}

function walk(node: DomNode, out: string[], base: string | undefined, depth: number): void {
  if (depth > MAX_DEPTH) return;
  const children = node.childNodes;
  for (let index = 0; index < children.length; index++) {
    const child = children[index]!;
    if (child.nodeType === 3) {
      out.push((child.textContent ?? "").replace(/\s+/g, " "));
      continue;
    }
    if (child.nodeType !== 1) continue;
    const tag = child.nodeName.toUpperCase();
    if (SKIPPED.has(tag)) continue;
    if (tag === "BR") out.push("\n");
    else if (/^H[1-6]$/.test(tag)) {
      out.push(`\n\n${"#".repeat(Number(tag[1]))} `);
      walk(child, out, base, depth + 1);
      out.push("\n\n");
    } else if (tag === "LI") {
      out.push("\n- ");
      walk(child, out, base, depth + 1);
      out.push("\n");
    } else if (tag === "PRE") {
      out.push(`\n\n\`\`\`\n${(child.textContent ?? "").replace(/\n+$/, "")}\n\`\`\`\n\n`);
    } else if (tag === "TR") {
      out.push("\n| ");
      walk(child, out, base, depth + 1);
      out.push("\n");
    } else if (tag === "TD" || tag === "TH") {
      walk(child, out, base, depth + 1);
      out.push(" | ");
    } else if (tag === "A") {
      const start = out.length;
      walk(child, out, base, depth + 1);
      const label = out.slice(start).join("").trim();
      const href = link(child.getAttribute?.("href") ?? null, base);
      if (label !== "" && href !== undefined && href !== label) {
        out.length = start;
        out.push(`[${label}](${href})`);
      }
    } else if (BLOCKS.has(tag)) {
      out.push("\n\n");
      walk(child, out, base, depth + 1);
      out.push("\n\n");
    } else walk(child, out, base, depth + 1);
  }
}

function link(href: string | null, base: string | undefined): string | undefined {
  if (!href || href.startsWith("#")) return undefined;
  try {
    const url = new URL(href, base);
    return url.protocol === "http:" || url.protocol === "https:" ? url.href : undefined;
  } catch {
    return undefined;
  }
}

/** Spaces trimmed at line ends, at most one blank line in a row; code blocks as they were. */
function tidy(text: string): string {
  return text
    .split(/(\n```\n[\s\S]*?\n```\n)/)
    .map((piece, index) => (index % 2 === 1 ? piece : piece.replace(/[ \t]+/g, " ").replace(/ *\n */g, "\n")))
    .join("")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

/** The server's charset, else the page's own <meta charset> (in its first 2 KB), else UTF-8. */
function decodeHtml(bytes: Uint8Array, charset: string | undefined): string {
  const head = new TextDecoder("latin1").decode(bytes.subarray(0, 2048));
  const declared = charset ?? /<meta[^>]+charset=["']?([A-Za-z0-9_-]+)/i.exec(head)?.[1];
  try {
    return new TextDecoder(declared ?? "utf-8").decode(bytes);
  } catch {
    // An unknown label: UTF-8 with replacement characters reads better than nothing.
    return new TextDecoder("utf-8").decode(bytes);
  }
}

/** At most `max` UTF-16 units, never half of a surrogate pair. */
function cut(text: string, max: number): string {
  let end = max;
  const last = text.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return text.slice(0, end);
}

async function run(request: ExtractRequest): Promise<ExtractReply> {
  try {
    if (request.type === "html") return await extractHtml(request);
    return request.type === "text" ? decodeText(request.bytes, request.maxChars) : await extractPdf(request);
  } catch (error) {
    if (error instanceof NotTextError) return { ok: false, corrupt: true, detail: error.message };
    // A stack overflow (deeply nested objects) or anything pdf.js threw mid-way.
    return { ok: false, corrupt: error instanceof RangeError, detail: error instanceof Error ? `${error.name}: ${error.message.slice(0, 200)}` : "error" };
  }
}

/**
 * pdf.js and its parser half are loaded before `ready`, so their fixed cost is not counted
 * against the file. In Node pdf.js runs its "worker" in the same thread, taking the parser from
 * `globalThis.pdfjsWorker` when it is there instead of importing it on the first document.
 */
async function load(type: ExtractRequest["type"]): Promise<void> {
  if (type === "html") {
    await Promise.all([import("linkedom"), import("@mozilla/readability")]);
    return;
  }
  if (type !== "pdf") return;
  // No type declarations ship for the parser half; only its presence matters here.
  const parserModule = "pdfjs-dist/legacy/build/pdf.worker.mjs";
  const [, parser] = await Promise.all([import("pdfjs-dist/legacy/build/pdf.mjs"), import(parserModule) as Promise<unknown>]);
  (globalThis as { pdfjsWorker?: unknown }).pdfjsWorker = parser;
}

/** Loads what the file type needs, says `ready`, extracts the one file it is sent and answers. */
export function main(): void {
  const port = parentPort;
  if (!port) return;
  void load((workerData as { type: ExtractRequest["type"] }).type).then(() => {
    port.once("message", (request: ExtractRequest) => void run(request).then((reply) => port.postMessage(reply)));
    port.postMessage({ ready: true });
  });
}

// Run from source, the starter calls main() itself once tsx's loader is out of the way.
if (!(workerData as { fromSource?: boolean } | undefined)?.fromSource) main();
