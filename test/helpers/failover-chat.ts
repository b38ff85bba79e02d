/**
 * A chat under a Redis failover, played as a platform plays it: every message is offered until
 * the ingress acknowledges it (each attempt with a deadline, as Telegram re-offers an
 * unconfirmed update and Discord's intake retries), while a fault strikes mid-traffic. Then the
 * checker (audit.ts) compares what was acknowledged with what the transcripts hold and what was
 * answered: lost, doubled, answered twice.
 */
import { expect } from "vitest";
import type { InboundMessage, SubmitResult } from "../../src/core/channel.js";
import type { Redis } from "../../src/queue/index.js";
import { SessionStore } from "../../src/session/store.js";
import { withoutStamp } from "../fakes/fake-llm.js";
import { audit, type Submitted } from "./audit.js";
import { inbound, type RecordingAdapter } from "./recording-adapter.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class FailoverChat {
  /** Ids whose submit resolved (accepted or duplicate): what a platform counts as delivered. */
  readonly acknowledged = new Set<string>();
  readonly offered: Submitted[] = [];
  readonly failures: unknown[] = [];
  readonly #adapter: RecordingAdapter;
  readonly #chats: readonly string[];
  readonly #prefix: string;

  constructor(adapter: RecordingAdapter, chats: readonly string[], prefix: string) {
    this.#adapter = adapter;
    this.#chats = chats;
    this.#prefix = prefix;
  }

  message(index: number): InboundMessage {
    return inbound({ chatId: this.#chats[index % this.#chats.length]!, messageId: `f-${index}`, text: `m${index}` });
  }

  /** Offers `message` until it is acknowledged. */
  async deliver(message: InboundMessage): Promise<void> {
    this.offered.push({ sessionKey: message.sessionKey, messageId: message.messageId, text: message.text });
    // Generous: the failover itself takes seconds, and these files share two loaded CPUs.
    const giveUpAt = Date.now() + 150_000;
    while (Date.now() < giveUpAt) {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error("submit attempt timed out")), 10_000);
      });
      try {
        const result: SubmitResult = await Promise.race([this.#adapter.submit(message), deadline]);
        if (result.status === "accepted" || result.status === "duplicate") {
          this.acknowledged.add(message.messageId);
          return;
        }
        throw new Error(`unexpected ${result.status}`);
      } catch (error) {
        this.failures.push(error);
        await sleep(500);
      } finally {
        clearTimeout(timer);
      }
    }
    throw new Error(`${message.messageId} was never acknowledged (last: ${String(this.failures[this.failures.length - 1])})`);
  }

  /** Sends messages first…first+13, the fault striking after the sixth while turns are in flight. */
  async through(first: number, fault: () => Promise<void>): Promise<void> {
    const sends: Array<Promise<void>> = [];
    let next = first;
    for (; next < first + 6; next++) {
      sends.push(this.deliver(this.message(next)));
      await sleep(80);
    }
    const faulted = fault();
    for (; next < first + 14; next++) {
      sends.push(this.deliver(this.message(next)));
      await sleep(150);
    }
    await faulted;
    await Promise.all(sends);
  }

  /** Every acknowledged message in its transcript once and answered once; no reply sent twice. */
  async expectClean(redis: Redis): Promise<void> {
    const ids = this.offered.map((message) => message.messageId);
    expect([...this.acknowledged].sort()).toEqual([...ids].sort());
    const answered = () => new Set(this.#adapter.answeredIds());
    await this.#adapter.waitFor(() => ids.every((id) => answered().has(id)), 90_000);
    const store = new SessionStore(redis, this.#prefix);
    const transcripts = new Map<string, string[]>();
    for (const sessionKey of new Set(this.offered.map((message) => message.sessionKey))) {
      const messages = await store.readTranscript(sessionKey);
      transcripts.set(sessionKey, messages.filter((message) => message.role === "user").map((message) => withoutStamp(String(message.content))));
    }
    const result = audit({
      submitted: this.offered,
      transcripts,
      answers: this.#adapter.sent.map((entry) => entry.reply.inReplyTo),
      deliveredIds: this.#adapter.sent.map((entry) => entry.reply.replyId),
    });
    expect(result).toEqual({ lost: [], doubled: [], unanswered: [], answeredTwice: [], duplicateReplies: [] });
  }
}
