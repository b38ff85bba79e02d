import { readFileSync } from "node:fs";
import { afterEach, beforeEach, expect, vi } from "vitest";
import type { InboundMessage, IngressPort, OutboundReply, SubmitResult } from "../../../src/adapters/channel-adapter.js";
import { DiscordAdapter, type DiscordAdapterOptions } from "../../../src/adapters/discord/index.js";
import { silentLogger } from "../../../src/logger.js";
import { FAKE_TOKEN, FakeDiscord, IDS, type FakeDiscordOptions, type Payload } from "../../fakes/fake-discord.js";

/**
 * The real discord.js client against the fake Discord over HTTP and WebSocket, with a
 * recording ingress that answers as scripted (the pipeline e2e swaps in the real one).
 */

export const fixture = (name: string): Payload & { channel_id: string } =>
  JSON.parse(readFileSync(new URL(`../../fixtures/discord/${name}.json`, import.meta.url), "utf8")) as Payload & { channel_id: string };

export class RecordingIngress implements IngressPort {
  readonly submitted: InboundMessage[] = [];
  /** Answers for the next submits, in order; `accepted` once they run out. */
  readonly script: Array<SubmitResult | Error | (() => Promise<SubmitResult>)> = [];

  async submit(message: InboundMessage): Promise<SubmitResult> {
    this.submitted.push(message);
    const next = this.script.shift();
    if (next instanceof Error) throw next;
    if (typeof next === "function") return next();
    return next ?? { status: "accepted" };
  }
}

export const reply = (text: string, overrides: Partial<OutboundReply> = {}): OutboundReply => ({
  replyId: `dc:${IDS.textChannel}#1`,
  sessionKey: `dc:${IDS.textChannel}`,
  target: { platform: "discord", chatId: IDS.textChannel, replyToMessageId: "600000000000000001" },
  text,
  inReplyTo: ["600000000000000001"],
  kind: "answer",
  ...overrides,
});

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export { settled } from "../../helpers/settled.js";

export interface AdapterHarness {
  readonly fake: FakeDiscord;
  readonly ingress: RecordingIngress;
  /** Adapters a test started besides the one from startAdapter; stopped after it. */
  readonly extraAdapters: DiscordAdapter[];
  startAdapter(options?: Partial<DiscordAdapterOptions>): Promise<DiscordAdapter>;
  /** A fresh fake with other options (the adapter must be started after). */
  restartFake(options: FakeDiscordOptions): Promise<FakeDiscord>;
  /**
   * Dispatches `message`, then a mentioned marker message, and waits for the marker: anything
   * the adapter would have submitted for `message` has been submitted by then (same channel).
   */
  dispatchThenBarrier(message: Payload & { channel_id: string }): Promise<InboundMessage[]>;
}

/** A fake Discord and a recording ingress per test (registers beforeEach/afterEach). */
export function useAdapterHarness(): AdapterHarness {
  let fake: FakeDiscord | undefined;
  let ingress = new RecordingIngress();
  let running: DiscordAdapter | undefined;
  const extraAdapters: DiscordAdapter[] = [];
  let markers = 0;
  const current = (): FakeDiscord => {
    if (!fake) throw new Error("the fake Discord is not running");
    return fake;
  };

  beforeEach(async () => {
    fake = await FakeDiscord.start();
    ingress = new RecordingIngress();
  });

  afterEach(async () => {
    await running?.stop();
    running = undefined;
    for (const extra of extraAdapters.splice(0)) await extra.stop();
    await fake?.close();
  });

  return {
    get fake() {
      return current();
    },
    get ingress() {
      return ingress;
    },
    extraAdapters,
    async startAdapter(options = {}) {
      const started = new DiscordAdapter({
        token: FAKE_TOKEN, apiRoot: current().apiRoot, alwaysOnChannels: [IDS.alwaysOnChannel], maxMessageChars: 16_000,
        logger: silentLogger, typingIntervalMs: 100, submitRetryDelaysMs: [10, 10], ...options,
      });
      running = started;
      await started.start(ingress);
      return started;
    },
    async restartFake(options) {
      await fake?.close();
      fake = await FakeDiscord.start(options);
      return fake;
    },
    async dispatchThenBarrier(message) {
      current().dispatchMessage(message);
      markers += 1;
      const marker = current().dispatchMessage({ ...fixture("guild-mention"), id: String(699_999_999_999_999_000n + BigInt(markers)), channel_id: message.channel_id, content: `<@${IDS.bot}> marker` });
      await vi.waitFor(() => expect(ingress.submitted.some((m) => m.messageId === marker.id)).toBe(true));
      return ingress.submitted.filter((m) => !m.messageId.startsWith("699999999999999"));
    },
  };
}
