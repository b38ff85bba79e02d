import type {
  ChannelAdapter, InboundMessage, IngressPort, OutboundReply, Platform, SendOptions, TurnActivity,
} from "../../src/adapters/channel-adapter.js";

export interface SentReply {
  reply: OutboundReply;
  at: number;
}

/**
 * An in-process adapter for pipeline tests: `submit` plays the platform, `sent` records what
 * the gateway delivered. It is an adapter like any other; the ingress, queue, workers and
 * delivery around it are the real ones.
 */
export class RecordingAdapter implements ChannelAdapter {
  readonly platform: Platform;
  readonly sent: SentReply[] = [];
  readonly activity: TurnActivity[] = [];
  #ingress?: IngressPort;
  #waiters: Array<() => void> = [];

  constructor(platform: Platform = "console") {
    this.platform = platform;
  }

  async start(ingress: IngressPort): Promise<void> {
    this.#ingress = ingress;
  }

  submit(message: InboundMessage) {
    if (!this.#ingress) throw new Error("adapter not started");
    return this.#ingress.submit(message);
  }

  async send(reply: OutboundReply, options: SendOptions): Promise<void> {
    if (options.fromPart === 0) {
      this.sent.push({ reply, at: Date.now() });
      await options.onPartSent(0, { last: true });
    }
    for (const wake of this.#waiters.splice(0)) wake();
  }

  onActivity(activity: TurnActivity): void {
    this.activity.push(activity);
  }

  async stop(): Promise<void> {}

  isConnected(): boolean {
    return true;
  }

  /** Resolves once `predicate` holds over the replies sent so far. */
  async waitFor(predicate: (sent: readonly SentReply[]) => boolean, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate(this.sent)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; ${this.sent.length} replies so far: ${JSON.stringify(this.sent.map((entry) => entry.reply.text.slice(0, 80)))}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** Submits `message`; → the text of the first reply sent after it. */
  async ask(message: InboundMessage, timeoutMs?: number): Promise<string> {
    const before = this.sent.length;
    await this.submit(message);
    await this.waitFor((sent) => sent.length > before, timeoutMs);
    return this.sent[before]!.reply.text;
  }

  /** Message ids that some sent reply answers. */
  answeredIds(): string[] {
    return this.sent.flatMap((entry) => entry.reply.inReplyTo);
  }
}

let counter = 0;

/** A normalised inbound message for tests. */
export function inbound(overrides: Partial<InboundMessage> & { text: string }): InboundMessage {
  const platform = overrides.platform ?? "console";
  const chatId = overrides.chatId ?? "chat-1";
  return {
    platform,
    sessionKey: overrides.sessionKey ?? `${platform === "telegram" ? "tg" : platform === "discord" ? "dc" : "console"}:${chatId}`,
    messageId: overrides.messageId ?? `msg-${Date.now().toString(36)}-${++counter}`,
    chatId,
    userId: overrides.userId ?? "user-1",
    userName: overrides.userName ?? "Ada",
    chatType: overrides.chatType ?? "private",
    sentAt: overrides.sentAt ?? Date.now(),
    ...overrides,
  };
}
