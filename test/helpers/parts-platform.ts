import type { ChannelAdapter, IngressPort, OutboundReply, SendOptions } from "../../src/adapters/channel-adapter.js";
import { inbound } from "./recording-adapter.js";

export interface PartHooks {
  /** Before a part goes out (a slow platform). */
  beforePart?(part: string): Promise<unknown>;
  /** After the platform accepted a part, before the delivery records it sent: where a test holds or faults a send. */
  afterPart?(part: string, step: { reply: OutboundReply; last: boolean }): Promise<unknown>;
}

/**
 * An in-process platform for delivery fault tests: a reply's paragraphs are its parts, sent
 * from the part the delivery resumes at; `accepted` records every part the platform took, in
 * order, repeats included.
 */
export class PartsPlatform implements ChannelAdapter {
  readonly platform = "console" as const;
  #ingress?: IngressPort;

  constructor(readonly accepted: string[] = [], public hooks: PartHooks = {}) {}

  async start(ingress: IngressPort): Promise<void> {
    this.#ingress = ingress;
  }

  submit(text: string, messageId: string) {
    return this.#ingress!.submit(inbound({ text, messageId }));
  }

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    const parts = reply.text.split("\n\n");
    for (let index = options.fromPart; index < parts.length; index++) {
      const part = parts[index]!;
      const last = index === parts.length - 1;
      await this.hooks.beforePart?.(part);
      this.accepted.push(part);
      await this.hooks.afterPart?.(part, { reply, last });
      await options.onPartSent(index, { last });
    }
  }

  async stop(): Promise<void> {}

  isConnected(): boolean {
    return true;
  }
}
