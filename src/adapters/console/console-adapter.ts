import { createInterface, type Interface } from "node:readline";
import type { Readable, Writable } from "node:stream";
import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions } from "../channel-adapter.js";
import { toInboundMessage } from "./to-inbound-message.js";

export interface ConsoleAdapterOptions {
  input: Readable;
  output: Writable;
  userName: string;
  /** An interactive terminal gets a prompt; piped input gets bare replies, one per answer. */
  interactive: boolean;
  /** Piped input ended and every line has been answered. */
  onDrained?: () => void;
}

/**
 * Chat in the terminal through the same ingress, queue and workers as the platforms. One line
 * is one message; replies go to stdout (logs go to stderr), so it can be scripted.
 */
export class ConsoleAdapter implements ChannelAdapter {
  readonly platform = "console" as const;
  readonly #options: ConsoleAdapterOptions;
  readonly #runId = Date.now().toString(36);
  readonly #outstanding = new Set<string>();
  #lines?: Interface;
  #sequence = 0;
  #inputEnded = false;
  #submitting: Promise<unknown> = Promise.resolve();
  /** The buttons of the last reply that had some: "y" presses the first, "n" the second. */
  #actions: { yes: string; no: string } | undefined;

  constructor(options: ConsoleAdapterOptions) {
    this.#options = options;
  }

  async start(ingress: IngressPort): Promise<void> {
    const lines = createInterface({ input: this.#options.input, terminal: false });
    this.#lines = lines;
    this.#prompt();
    lines.on("line", (line) => {
      const text = line.trim();
      if (text === "") return this.#prompt();
      const messageId = `${this.#runId}-${++this.#sequence}`;
      const base = toInboundMessage({ text, messageId, userName: this.#options.userName, now: Date.now() });
      const answer = this.#actions && /^(y|yes|n|no)$/i.test(text) ? (/^y/i.test(text) ? this.#actions.yes : this.#actions.no) : undefined;
      if (answer !== undefined) this.#actions = undefined;
      const message = answer === undefined ? base : { ...base, action: { id: answer } };
      this.#outstanding.add(messageId);
      // Lines are submitted one after another so the inbox keeps their order.
      this.#submitting = this.#submitting.then(async () => {
        const result = await ingress.submit(message);
        if (result.status !== "accepted") {
          this.#outstanding.delete(messageId);
          if ("notice" in result && result.notice) this.#write(result.notice);
          this.#checkDrained();
        }
      }).catch((error: unknown) => {
        this.#outstanding.delete(messageId);
        this.#write(`(could not queue that message: ${error instanceof Error ? error.message : String(error)})`);
        this.#checkDrained();
      });
    });
    lines.on("close", () => {
      this.#inputEnded = true;
      void this.#submitting.then(() => this.#checkDrained());
    });
  }

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    if (options.fromPart === 0) {
      const [yes, no] = reply.actions ?? [];
      if (yes && no) this.#actions = { yes: yes.id, no: no.id };
      const text = yes && no ? `${reply.text}\n(y = ${yes.label}, n = ${no.label})` : reply.text;
      this.#write(this.#options.interactive ? `\nlonghaul › ${text}\n` : text);
      await options.onPartSent(0);
    }
    for (const id of reply.inReplyTo) this.#outstanding.delete(id);
    this.#prompt();
    this.#checkDrained();
  }

  async stop(): Promise<void> {
    this.#lines?.close();
  }

  isConnected(): boolean {
    return !this.#inputEnded || this.#outstanding.size > 0;
  }

  #write(text: string): void {
    this.#options.output.write(`${text}\n`);
  }

  #prompt(): void {
    if (this.#options.interactive && !this.#inputEnded) this.#options.output.write(`${this.#options.userName} › `);
  }

  #checkDrained(): void {
    if (this.#inputEnded && this.#outstanding.size === 0) this.#options.onDrained?.();
  }
}
