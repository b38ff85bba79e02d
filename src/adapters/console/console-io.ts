import { createInterface, type Interface } from "node:readline";
import type { Readable, Writable } from "node:stream";

/** How the console adapter meets the person: a piped stream, or a terminal it owns (terminal.ts). */
export interface ConsoleIo {
  /** Starts reading: each message once complete, then `onEnd` when input ends (EOF, Ctrl-D, Ctrl-C). */
  start(handlers: { onMessage(text: string): void; onEnd(): void }): void;
  /** One reply from the agent. */
  reply(text: string): void;
  /** A notice from the pipeline (rate limit, a message that could not be queued). */
  notice(text: string): void;
  /** A terminal only: shows a live preview (the answer as it streams) under the chat, replacing the last one. */
  preview?(text: string): void;
  /** Removes the live preview (the reply is printed next). */
  clearPreview?(): void;
  /** A turn started or finished for this console's session. */
  setBusy?(busy: boolean): void;
  /** Stops reading; safe to call twice. */
  close(): void;
}

/**
 * Today's plain console, for piped stdin or a terminal whose output is redirected: one line is
 * one message, each reply is written as is (piped) or after a `longhaul ›` label with a
 * prompt (interactive), so it can be scripted.
 */
export class PlainConsoleIo implements ConsoleIo {
  #lines?: Interface;
  #ended = false;

  constructor(private readonly options: { input: Readable; output: Writable; prompt: string; interactive: boolean }) {}

  start(handlers: { onMessage(text: string): void; onEnd(): void }): void {
    const lines = createInterface({ input: this.options.input, terminal: false });
    this.#lines = lines;
    this.#prompt();
    lines.on("line", (line) => {
      const text = line.trim();
      if (text === "") this.#prompt();
      else handlers.onMessage(text);
    });
    lines.on("close", () => {
      this.#ended = true;
      handlers.onEnd();
    });
  }

  reply(text: string): void {
    this.options.output.write(this.options.interactive ? `\nlonghaul › ${text}\n\n` : `${text}\n`);
    this.#prompt();
  }

  notice(text: string): void {
    this.options.output.write(`${text}\n`);
    this.#prompt();
  }

  close(): void {
    this.#lines?.close();
  }

  #prompt(): void {
    if (this.options.interactive && !this.#ended) this.options.output.write(this.options.prompt);
  }
}
