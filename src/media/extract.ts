/**
 * Text out of a document: text-like files (plain text, Markdown, CSV, JSON, code, logs) are
 * decoded as UTF-8; PDFs go through pdf.js (pdfjs-dist, Mozilla's maintained parser; its legacy
 * build runs on Node 20 — see docs/media.md for why not unpdf). Anything else is unsupported.
 */

/** Extensions read as text, whatever type the platform guessed. */
const TEXT_EXTENSIONS = new Set([
  "txt", "text", "md", "markdown", "rst", "csv", "tsv", "json", "jsonl", "ndjson", "yaml", "yml", "toml", "ini", "cfg", "conf", "env", "xml", "html", "htm", "css", "scss",
  "log", "out", "err", "diff", "patch", "sql", "graphql", "proto",
  "ts", "tsx", "js", "jsx", "mjs", "cjs", "py", "rb", "go", "rs", "java", "kt", "kts", "scala", "c", "h", "cc", "cpp", "hpp", "cs", "swift", "m", "php", "pl", "lua", "r",
  "sh", "bash", "zsh", "fish", "ps1", "bat", "dockerfile", "makefile", "gradle", "tf", "vue", "svelte", "tex", "srt", "vtt",
]);
const TEXT_TYPES = /^(text\/|application\/(json|x-ndjson|xml|yaml|x-yaml|toml|javascript|typescript|x-sh|sql|x-python)\b)/i;

export type DocumentType = "text" | "pdf" | "unsupported";

export function documentType(name: string, mimeType: string | undefined): DocumentType {
  const lower = name.toLowerCase();
  const extension = lower.includes(".") ? lower.slice(lower.lastIndexOf(".") + 1) : lower;
  if (extension === "pdf" || mimeType?.toLowerCase() === "application/pdf") return "pdf";
  if (TEXT_EXTENSIONS.has(extension) || (mimeType !== undefined && TEXT_TYPES.test(mimeType))) return "text";
  return "unsupported";
}

export class CorruptFileError extends Error {
  override readonly name = "CorruptFileError";
}

/** The file's text; throws CorruptFileError when it is not what its name says. */
export async function extractText(type: Exclude<DocumentType, "unsupported">, bytes: Uint8Array): Promise<string> {
  if (type === "text") return decodeText(bytes);
  return extractPdfText(bytes);
}

function decodeText(bytes: Uint8Array): string {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    // Not UTF-8: Latin-1 never fails, and old Windows files are mostly that.
    text = new TextDecoder("latin1").decode(bytes);
  }
  if (text.includes("\u0000")) throw new CorruptFileError("binary content in a text file");
  return text.replace(/^\uFEFF/, "");
}

/** Pages are separated by a blank line; text items by spaces or their own line breaks. */
async function extractPdfText(bytes: Uint8Array): Promise<string> {
  const pdfjs = await import("pdfjs-dist/legacy/build/pdf.mjs");
  let document;
  try {
    // A copy: pdf.js transfers (detaches) the buffer it is given.
    document = await pdfjs.getDocument({ data: new Uint8Array(bytes), isEvalSupported: false, disableFontFace: true, useSystemFonts: false, verbosity: 0 }).promise;
  } catch (error) {
    throw new CorruptFileError(`not a readable PDF (${error instanceof Error ? error.name : "error"})`);
  }
  try {
    const pages: string[] = [];
    for (let number = 1; number <= document.numPages; number++) {
      const page = await document.getPage(number);
      const content = await page.getTextContent();
      let text = "";
      for (const item of content.items) {
        if (!("str" in item)) continue;
        text += item.str + (item.hasEOL ? "\n" : item.str === "" ? "" : " ");
      }
      pages.push(text.replace(/[ \t]+\n/g, "\n").trim());
      page.cleanup();
    }
    return pages.filter((page) => page !== "").join("\n\n");
  } finally {
    await document.destroy();
  }
}
