/**
 * Text out of a document: text-like files (plain text, Markdown, CSV, JSON, code, logs) are
 * decoded as UTF-8 (Latin-1 fallback; binary-looking bytes refused); PDFs go through pdf.js
 * (pdfjs-dist, Mozilla's maintained parser; its legacy build runs on Node 20 — see
 * docs/media.md for why not unpdf). Anything else is unsupported.
 *
 * Extraction runs in a worker thread (extract-worker.ts), one per file and one at a time per
 * process, with a heap limit, a watch on the process's resident memory, a deadline and the
 * turn's abort signal: a crafted file costs at most those, and the turn's event loop only
 * waits for a message (docs/media.md "Hostile files").
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import type { ExtractReply, ExtractRequest } from "./extract-worker.js";

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

/** The file is not what its name says (damaged PDF, binary "text"). */
export class CorruptFileError extends Error {
  override readonly name = "CorruptFileError";
}

/** The extraction hit a limit (memory, time) or failed inside the parser: the file is refused. */
export class ExtractionLimitError extends Error {
  override readonly name = "ExtractionLimitError";
  constructor(readonly limit: "memory" | "time" | "failed", message: string) {
    super(message);
  }
}

export interface ExtractLimits {
  /** Memory one extraction may add to the process: the worker's heap limit and the resident-memory watch (MB). */
  memoryMb: number;
  /** Deadline of one extraction, from the worker's start (ms). */
  timeoutMs: number;
  /** PDF pages read at most; the rest is left out and the text says so. */
  maxPages: number;
  /** Characters kept at most from one document (the model's view and the stored original together). */
  maxChars: number;
}

export interface ExtractedText {
  text: string;
  /** Set when a cap cut the text: what was kept, in words ("the first 200 pages of 950"). */
  truncated?: string;
}

/** How often the resident memory is checked while a worker runs (ms). */
const MEMORY_CHECK_MS = 20;

/**
 * The file's text; throws CorruptFileError when it is not what its name says, ExtractionLimitError
 * when it cost too much, and the signal's reason when the turn was stopped.
 */
export async function extractText(type: ExtractRequest["type"], bytes: Uint8Array, limits: ExtractLimits, signal?: AbortSignal, page?: { charset?: string; url?: string }): Promise<ExtractedText> {
  const release = await slot.acquire(signal);
  try {
    return await runWorker({ type, bytes: new Uint8Array(bytes), maxPages: limits.maxPages, maxChars: limits.maxChars, ...(page?.charset ? { charset: page.charset } : {}), ...(page?.url ? { url: page.url } : {}) }, limits, signal);
  } finally {
    release();
  }
}

function runWorker(request: ExtractRequest, limits: ExtractLimits, signal: AbortSignal | undefined): Promise<ExtractedText> {
  signal?.throwIfAborted();
  const worker = startWorker(request.type, limits);
  return new Promise<ExtractedText>((resolve, reject) => {
    let settled = false;
    let watch: NodeJS.Timeout | undefined;
    const finish = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      clearInterval(watch);
      signal?.removeEventListener("abort", onAbort);
      // Settled only once the thread is gone, so its memory is back before the next file starts.
      void worker.terminate().then(outcome, outcome);
    };
    const onAbort = () => finish(() => reject(signal?.reason));
    const overtime = (what: string) => () => finish(() => reject(new ExtractionLimitError("time", `${what} took longer than ${limits.timeoutMs} ms`)));
    // The thread's start (loading pdf.js) and the file's work each get the deadline.
    let deadline = setTimeout(overtime("starting the extraction"), limits.timeoutMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    worker.on("message", (reply: ExtractReply) => {
      if ("ready" in reply) {
        // The heap limit does not cover array buffers (pdf.js inflates streams into them): the
        // process's resident memory does, counted from here (the thread and pdf.js are loaded).
        clearTimeout(deadline);
        deadline = setTimeout(overtime("extraction"), limits.timeoutMs);
        const baseline = process.memoryUsage.rss();
        watch = setInterval(() => {
          const grown = process.memoryUsage.rss() - baseline;
          if (grown > limits.memoryMb * 1024 * 1024) finish(() => reject(new ExtractionLimitError("memory", `extraction used more than ${limits.memoryMb} MB (${Math.round(grown / 1024 / 1024)} MB)`)));
        }, MEMORY_CHECK_MS);
        worker.postMessage(request, [request.bytes.buffer as ArrayBuffer]);
      } else if (reply.ok) finish(() => resolve({ text: reply.text, ...(reply.truncated ? { truncated: reply.truncated } : {}) }));
      else if (reply.corrupt) finish(() => reject(new CorruptFileError(reply.detail)));
      else finish(() => reject(new ExtractionLimitError("failed", reply.detail)));
    });
    worker.once("error", (error: Error & { code?: string }) => {
      const memory = error.code === "ERR_WORKER_OUT_OF_MEMORY";
      finish(() => reject(new ExtractionLimitError(memory ? "memory" : "failed", memory ? `extraction ran out of its ${limits.memoryMb} MB heap` : `extraction failed (${error.name})`)));
    });
    worker.once("exit", (code) => finish(() => reject(new ExtractionLimitError("failed", `extraction ended without an answer (exit ${code})`))));
  });
}

const compiled = import.meta.url.endsWith(".js");

function startWorker(type: ExtractRequest["type"], limits: ExtractLimits): Worker {
  const options = {
    workerData: { type, fromSource: !compiled },
    resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb, maxYoungGenerationSizeMb: Math.min(32, Math.max(4, Math.floor(limits.memoryMb / 8))), stackSizeMb: 4 },
    execArgv: [],
    stdout: true,
    stderr: true,
  };
  // Built (dist) this module is JavaScript and so is the worker beside it; run from source
  // (tsx, vitest) the worker is TypeScript and gets tsx's loader first.
  const worker = compiled ? new Worker(new URL("./extract-worker.js", import.meta.url), options) : new Worker(sourceBoot(), { ...options, eval: true });
  // pdf.js's own console output is not ours to log (it may quote the file): read and dropped.
  worker.stdout.resume();
  worker.stderr.resume();
  return worker;
}

/**
 * Registers tsx's loader in the new thread for the TypeScript worker only: pdf.js is plain
 * JavaScript, and through tsx it loaded ten times slower (measured: 7 s against 0.5 s).
 */
function sourceBoot(): string {
  const worker = new URL("./extract-worker.ts", import.meta.url).href;
  return `import(${JSON.stringify(tsxApi())}).then(async (api) => { const unregister = api.register(); const worker = await import(${JSON.stringify(worker)}); await unregister(); worker.main(); });`;
}

/** tsx's ESM API (its `import` export: the CommonJS one cannot register hooks from an eval'd worker). */
function tsxApi(): string {
  const manifest = createRequire(import.meta.url).resolve("tsx/package.json");
  const exports = (JSON.parse(readFileSync(manifest, "utf8")) as { exports: Record<string, { import: { default: string } }> }).exports;
  return pathToFileURL(join(dirname(manifest), exports["./esm/api"]!.import.default)).href;
}

/** One extraction at a time per process: the memory watch then measures that one file. */
const slot = {
  busy: false,
  waiting: [] as Array<() => void>,
  async acquire(signal: AbortSignal | undefined): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.busy) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          this.waiting = this.waiting.filter((next) => next !== wake);
          reject(signal?.reason);
        };
        const wake = () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        };
        this.waiting.push(wake);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    }
    this.busy = true;
    return () => {
      const next = this.waiting.shift();
      if (next) next();
      else this.busy = false;
    };
  },
};
