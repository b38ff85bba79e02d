/**
 * The console chat when stdin and stdout are a terminal: it owns the screen. The prompt stays
 * on the last line; replies (Markdown rendered for the terminal), notices and one-line log
 * echoes are printed above it without disturbing what the person is typing. A bracketed paste
 * is one message, newlines included; Tab completes `/commands`.
 *
 * Built on node:readline (editing, history, completion). readline has no paste mode, so it
 * reads from `TerminalInput`, which passes typed keys through and hands each whole paste to
 * the line buffer with its newlines shown as ⏎ (turned back into newlines on Enter).
 */
import { EventEmitter } from "node:events";
import { clearScreenDown, createInterface, cursorTo, moveCursor, type Interface } from "node:readline";
import { StringDecoder } from "node:string_decoder";
import type { ConsoleIo } from "./console-io.js";
import { DISABLE_BRACKETED_PASTE, ENABLE_BRACKETED_PASTE, PasteSplitter, type InputPart } from "./paste.js";
import { renderForTerminal, stripControlCharacters, visibleWidth } from "./render.js";

/** Lines of a streaming answer shown live above the prompt (its tail). */
const PREVIEW_LINES = 6;

/** How a newline inside a pasted message is shown in the input line. */
export const NEWLINE_MARK = "⏎";

export interface TerminalChatOptions {
  input: NodeJS.ReadStream;
  output: NodeJS.WriteStream;
  userName: string;
  /** Slash commands Tab completes, without the slash. */
  commands: readonly string[];
  /** ANSI styles (off with NO_COLOR). */
  color: boolean;
  /** Dimmed lines shown once at the top. */
  banner?: readonly string[];
}

/** What readline needs of its input: a TTY-like emitter that we feed, so pastes can be intercepted. */
class TerminalInput extends EventEmitter {
  readonly isTTY = true;
  constructor(private readonly tty: NodeJS.ReadStream) {
    super();
  }
  get isRaw(): boolean {
    return this.tty.isRaw;
  }
  setRawMode(mode: boolean): this {
    this.tty.setRawMode(mode);
    return this;
  }
  resume(): this {
    this.tty.resume();
    return this;
  }
  pause(): this {
    this.tty.pause();
    return this;
  }
}

export class TerminalChat implements ConsoleIo {
  readonly #options: TerminalChatOptions;
  readonly #prompt: string;
  #lines?: Interface;
  #closed = false;
  #detach?: () => void;
  /** The live preview's lines, drawn between the chat and the prompt. */
  #preview: string[] = [];

  constructor(options: TerminalChatOptions) {
    this.#options = options;
    this.#prompt = `${this.#style("1", `${options.userName} ›`)} `;
  }

  start(handlers: { onMessage(text: string): void; onEnd(): void }): void {
    const { input: tty, output } = this.#options;
    const input = new TerminalInput(tty);
    const lines = createInterface({
      input: input as unknown as NodeJS.ReadableStream,
      output,
      terminal: true,
      prompt: this.#prompt,
      historySize: 200,
      completer: (line: string) => this.#complete(line),
    });
    this.#lines = lines;

    const splitter = new PasteSplitter();
    const decoder = new StringDecoder("utf8");
    let flushTimer: NodeJS.Timeout | undefined;
    const deliver = (parts: InputPart[]) => {
      for (const part of parts) {
        if (part.kind === "typed") input.emit("data", part.text);
        // rl.write inserts the text at the cursor in one edit; without newlines it submits nothing.
        else lines.write(stripControlCharacters(part.text).replace(/\n+$/, "").replace(/\n/g, NEWLINE_MARK));
      }
    };
    const onData = (chunk: Buffer | string) => {
      clearTimeout(flushTimer);
      deliver(splitter.push(typeof chunk === "string" ? chunk : decoder.write(chunk)));
      // A held ESC with nothing after it was the Escape key, not the start of a paste.
      if (splitter.holding) flushTimer = setTimeout(() => deliver(splitter.flush()), 50);
    };
    const onEnd = () => input.emit("end");
    tty.on("data", onData);
    tty.on("end", onEnd);
    const restore = () => output.write(DISABLE_BRACKETED_PASTE);
    process.once("exit", restore);
    this.#detach = () => {
      clearTimeout(flushTimer);
      tty.off("data", onData);
      tty.off("end", onEnd);
      process.off("exit", restore);
      restore();
    };
    output.write(ENABLE_BRACKETED_PASTE);

    lines.on("line", (line: string) => {
      // Leading spaces stay: a pasted code block keeps its indentation.
      const text = line.split(NEWLINE_MARK).join("\n").replace(/^\s*\n/, "").trimEnd();
      if (text.trim() !== "") handlers.onMessage(text);
      if (!this.#closed) lines.prompt();
    });
    lines.on("SIGINT", () => {
      // Ctrl-C clears what is typed; on an empty line it quits, as in a shell.
      if (lines.line.length === 0) return lines.close();
      lines.write(null, { ctrl: true, name: "e" });
      lines.write(null, { ctrl: true, name: "u" });
    });
    lines.on("close", () => {
      this.#closed = true;
      this.#detach?.();
      output.write("\n");
      handlers.onEnd();
    });
    for (const line of this.#options.banner ?? []) output.write(`${this.#style("2", line)}\n`);
    lines.prompt();
  }

  reply(text: string): void {
    const body = renderForTerminal(text, { color: this.#options.color, columns: this.#options.output.columns ?? 80 });
    const label = this.#style("1;35", "longhaul ›");
    this.#printAbove(body.includes("\n") ? `${label}\n${body}\n` : `${label} ${body}\n`);
  }

  notice(text: string): void {
    this.#printAbove(stripControlCharacters(text));
  }

  /** The answer as it streams: its last lines, dimmed, each cut to the terminal's width. */
  preview(text: string): void {
    const width = Math.max(20, (this.#options.output.columns ?? 80) - 1);
    const lines = text.split("\n").slice(-PREVIEW_LINES).map((line) => {
      const clean = stripControlCharacters(line);
      if (visibleWidth(clean) <= width) return clean;
      const graphemes = [...new Intl.Segmenter().segment(clean)].map((segment) => segment.segment);
      let cut = graphemes.length;
      while (cut > 0 && visibleWidth(graphemes.slice(0, cut).join("")) > width - 1) cut--;
      return `${graphemes.slice(0, cut).join("")}…`;
    });
    this.#redraw(undefined, lines);
  }

  clearPreview(): void {
    if (this.#preview.length > 0) this.#redraw(undefined, []);
  }

  /** A warning or error from the log, as one dimmed line that fits the terminal's width. */
  echoLog(summary: string, level: number): void {
    const width = Math.max(20, (this.#options.output.columns ?? 80) - 1);
    let line = `${level >= 50 ? "✖" : "⚠"} ${stripControlCharacters(summary).replace(/\s+/g, " ")}`;
    if (visibleWidth(line) > width) {
      const graphemes = [...new Intl.Segmenter().segment(line)].map((segment) => segment.segment);
      line = `${graphemes.slice(0, width - 1).join("")}…`;
    }
    this.#printAbove(this.#style("2", line));
  }

  setBusy(busy: boolean): void {
    if (!this.#lines || this.#closed) return;
    this.#lines.setPrompt(busy ? `${this.#style("2", "…")} ${this.#prompt}` : this.#prompt);
    this.#lines.prompt(true);
  }

  close(): void {
    if (this.#closed) return;
    this.#lines?.close();
  }

  #complete(line: string): [string[], string] {
    if (!/^\/\S*$/.test(line)) return [[], line];
    const hits = this.#options.commands.map((name) => `/${name}`).filter((command) => command.startsWith(line));
    // One match is completed with a space, ready for arguments (`/compress focus`).
    return [hits.length === 1 ? [`${hits[0]} `] : hits, line];
  }

  /** Writes text above the prompt line, then redraws the prompt with what was typed so far. */
  #printAbove(text: string): void {
    this.#redraw(text, this.#preview);
  }

  /**
   * Clears the live preview and the prompt, writes `text` (if any) for good, then the preview
   * `preview` and the prompt with what was typed so far.
   */
  #redraw(text: string | undefined, preview: string[]): void {
    const { output } = this.#options;
    const lines = this.#lines;
    if (!lines || this.#closed) {
      if (text !== undefined) output.write(`${text}\n`);
      return;
    }
    const { rows } = lines.getCursorPos();
    const up = rows + this.#preview.length;
    if (up > 0) moveCursor(output, 0, -up);
    cursorTo(output, 0);
    clearScreenDown(output);
    if (text !== undefined) output.write(`${text}\n`);
    for (const line of preview) output.write(`${this.#style("2", line)}\n`);
    this.#preview = preview;
    // readline moves up by the rows it drew last time before redrawing; we already cleared them.
    (lines as unknown as { prevRows: number }).prevRows = 0;
    lines.prompt(true);
  }

  #style(code: string, text: string): string {
    return this.#options.color ? `\x1b[${code}m${text}\x1b[0m` : text;
  }
}
