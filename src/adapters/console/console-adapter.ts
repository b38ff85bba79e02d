import { mkdir, writeFile } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import type { ChannelAdapter, IngressPort, OutboundReply, PreviewPort, ReplyDocument, SendOptions, TurnActivity } from "../channel-adapter.js";
import type { ConsoleIo } from "./console-io.js";
import { toInboundMessage } from "./to-inbound-message.js";

export interface ConsoleAdapterOptions {
  /** A plain stream (piped stdin, scripts) or a terminal the chat owns (`TerminalChat`). */
  io: ConsoleIo;
  userName: string;
  /** Input ended and every message has been answered (piped stdin runs to completion). */
  onDrained?: () => void;
  /** Input ended and the person does not wait for answers (Ctrl-D or Ctrl-C in a terminal). */
  onQuit?: () => void;
  /** Where the files of a reply (`/export`) are written. @defaultValue "./data/exports" */
  exportDir?: string;
}

/**
 * Chat in the terminal through the same ingress, queue and workers as the platforms. Messages
 * come from the `ConsoleIo`; replies go back to it.
 */
export class ConsoleAdapter implements ChannelAdapter {
  readonly platform = "console" as const;
  readonly #options: ConsoleAdapterOptions;
  readonly #runId = Date.now().toString(36);
  readonly #outstanding = new Set<string>();
  #sequence = 0;
  #inputEnded = false;
  #submitting: Promise<unknown> = Promise.resolve();

  /** In a terminal: the answer as it streams, shown live under the chat (STREAMING). */
  readonly previews: PreviewPort | undefined;

  constructor(options: ConsoleAdapterOptions) {
    this.#options = options;
    const { io } = options;
    this.previews = io.preview
      ? {
        // A terminal has no flood limits: the worker's own pace (~4 updates/s) shows through.
        minIntervalMs: () => 50,
        create: async (_target, text) => {
          io.preview?.(text);
          return "terminal";
        },
        edit: async (_target, _messageId, text) => io.preview?.(text),
        remove: async () => io.clearPreview?.(),
      }
      : undefined;
  }

  /** The buttons of the last reply that had some: "y" presses the first, "n" the second. */
  #actions: { yes: string; no: string } | undefined;

  async start(ingress: IngressPort): Promise<void> {
    const { io } = this.#options;
    io.start({
      onMessage: (text) => {
        const messageId = `${this.#runId}-${++this.#sequence}`;
        const base = toInboundMessage({ text, messageId, userName: this.#options.userName, now: Date.now() });
        const answer = this.#actions && /^(y|yes|n|no)$/i.test(text.trim()) ? (/^y/i.test(text.trim()) ? this.#actions.yes : this.#actions.no) : undefined;
        if (answer !== undefined) this.#actions = undefined;
        const message = answer === undefined ? base : { ...base, action: { id: answer } };
        this.#outstanding.add(messageId);
        // Messages are submitted one after another so the inbox keeps their order.
        this.#submitting = this.#submitting.then(async () => {
          const result = await ingress.submit(message);
          if (result.status !== "accepted") {
            this.#outstanding.delete(messageId);
            if ("notice" in result && result.notice) io.notice(result.notice);
            this.#checkDrained();
          }
        }).catch((error: unknown) => {
          this.#outstanding.delete(messageId);
          io.notice(`(could not queue that message: ${error instanceof Error ? error.message : String(error)})`);
          this.#checkDrained();
        });
      },
      onEnd: () => {
        this.#inputEnded = true;
        if (this.#options.onQuit) return this.#options.onQuit();
        void this.#submitting.then(() => this.#checkDrained());
      },
    });
  }

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    // The reply replaces the live preview: the preview goes, the reply is printed whole.
    if (options.preview) this.#options.io.clearPreview?.();
    const documents = reply.documents ?? [];
    if (options.fromPart === 0) {
      const [yes, no] = reply.actions ?? [];
      if (yes && no) this.#actions = { yes: yes.id, no: no.id };
      this.#options.io.reply(yes && no ? `${reply.text}\n(y = ${yes.label}, n = ${no.label})` : reply.text);
      await options.onPartSent(0, { last: documents.length === 0 });
    }
    // Files (`/export`): written to the export directory, one part each after the text.
    for (const [index, document] of documents.entries()) {
      if (index + 1 < options.fromPart) continue;
      const path = await writeDocument(this.#options.exportDir ?? DEFAULT_EXPORT_DIR, document);
      this.#options.io.reply(`📎 ${document.filename} saved to ${path}`);
      await options.onPartSent(index + 1, { last: index === documents.length - 1 });
    }
    for (const id of reply.inReplyTo) this.#outstanding.delete(id);
    this.#checkDrained();
  }

  onActivity(activity: TurnActivity): void {
    this.#options.io.setBusy?.(activity.type === "turn-started");
  }

  async stop(): Promise<void> {
    this.#options.io.close();
  }

  isConnected(): boolean {
    return !this.#inputEnded || this.#outstanding.size > 0;
  }

  #checkDrained(): void {
    if (this.#inputEnded && this.#outstanding.size === 0) this.#options.onDrained?.();
  }
}

export const DEFAULT_EXPORT_DIR = "./data/exports";

/** Writes a reply's file (its own name only, never a path); → the absolute path. */
async function writeDocument(directory: string, document: ReplyDocument): Promise<string> {
  await mkdir(directory, { recursive: true });
  const path = resolve(join(directory, basename(document.filename)));
  await writeFile(path, Buffer.from(document.base64, "base64"));
  return path;
}
