/**
 * The shared shape of the stall tests: several sessions chat while turns are in flight, a
 * fault is applied between messages, and in the end every message must be in its session's
 * transcript exactly once, answered exactly once, with no reply delivered twice.
 */
import { lastUserText, withoutStamp, type FakeLlm, type RecordedRequest } from "../fakes/fake-llm.js";
import { createRedis } from "../../src/queue/index.js";
import { SessionStore } from "../../src/session/store.js";
import { audit, seededRandom, type Audit, type Submitted } from "./audit.js";
import { inbound, type RecordingAdapter } from "./recording-adapter.js";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The user texts after the last assistant message: what this turn answers. */
export const newUserTexts = (request: RecordedRequest): string[] => {
  const messages = request.body.messages;
  const lastAssistant = messages.findLastIndex((message) => message.role === "assistant");
  return messages.slice(lastAssistant + 1).filter((message) => message.role === "user").map((message) => withoutStamp(String(message.content)));
};

/** A model that takes a while (seeded), and answers with the texts it was asked about. */
export function slowModel(llm: FakeLlm, seed: number, latency: { min: number; max: number }): void {
  const random = seededRandom(seed);
  llm.setHandler((request) => ({
    text: `ok ${newUserTexts(request).join(" | ") || lastUserText(request)}`,
    delayMs: Math.round(latency.min + random() * (latency.max - latency.min)),
  }));
}

export interface StallRun {
  submitted: Submitted[];
  /**
   * Submits one message (not awaited by the schedule: a submit hangs while Redis is frozen);
   * `suffix` is appended to its unique text (a test-hook marker).
   */
  send(session: number, suffix?: string): Promise<void>;
  /** Every submit so far has resolved. */
  settled(): Promise<void>;
  /** Waits until every submitted message is answered (or the timeout), then a little longer for late duplicates. */
  drain(timeoutMs: number): Promise<void>;
  audit(redisUrl: string, prefix: string): Promise<Audit>;
}

export function stallRun(adapter: RecordingAdapter, label: string): StallRun {
  const submitted: Submitted[] = [];
  const inFlight: Array<Promise<unknown>> = [];
  let counter = 0;
  return {
    submitted,
    send(session, suffix = "") {
      const id = `${label}-s${session}-m${++counter}`;
      const text = `${id}${suffix}`;
      const message = inbound({ chatId: `${label}-s${session}`, messageId: id, text });
      const submit = adapter.submit(message).then((result) => {
        if (result.status !== "accepted") throw new Error(`${text}: ${result.status}`);
        submitted.push({ sessionKey: message.sessionKey, messageId: id, text });
      });
      inFlight.push(submit);
      return submit;
    },
    async settled() {
      await Promise.all(inFlight);
    },
    async drain(timeoutMs) {
      await Promise.all(inFlight);
      const expected = () => new Set(submitted.map((message) => message.messageId));
      await adapter.waitFor(() => [...expected()].every((id) => adapter.answeredIds().includes(id)), timeoutMs).catch(() => undefined);
      // Long enough for a stalled duplicate to show up if one were coming.
      await sleep(3_000);
    },
    async audit(redisUrl, prefix) {
      const redis = createRedis(redisUrl);
      try {
        const store = new SessionStore(redis, prefix);
        const transcripts = new Map<string, string[]>();
        for (const sessionKey of new Set(submitted.map((message) => message.sessionKey))) {
          const messages = await store.readTranscript(sessionKey);
          transcripts.set(sessionKey, messages.filter((message) => message.role === "user").map((message) => withoutStamp(String(message.content))));
        }
        return audit({
          submitted,
          transcripts,
          answers: adapter.sent.map((entry) => entry.reply.inReplyTo),
          deliveredIds: adapter.sent.map((entry) => entry.reply.replyId),
        });
      } finally {
        redis.disconnect();
      }
    },
  };
}
