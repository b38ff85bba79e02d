import { Writable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ChannelCursors, InboundMessage, IngressPort, Platform, SubmitResult } from "../../../src/adapters/channel-adapter.js";
import { DiscordAdapter, type DiscordAdapterOptions } from "../../../src/adapters/discord/index.js";
import { createLogger } from "../../../src/logger.js";
import { FAKE_TOKEN, FakeDiscord, IDS, snowflakeAt, type Payload } from "../../fakes/fake-discord.js";

/**
 * The backfill's bounds and ordering against the fake Discord, with the real discord.js client
 * and a recording ingress whose cursors live in memory (the Redis ones have their own test).
 */

class MemoryCursors implements ChannelCursors {
  readonly values = new Map<string, string>();
  /** Set to hold `list()` (the backfill's first step) until released. */
  listGate: Promise<void> | undefined;

  async get(_platform: Platform, channelId: string): Promise<string | undefined> {
    return this.values.get(channelId);
  }

  async advance(_platform: Platform, channelId: string, messageId: string): Promise<void> {
    const current = this.values.get(channelId);
    if (current === undefined || BigInt(messageId) > BigInt(current)) this.values.set(channelId, messageId);
  }

  async forget(_platform: Platform, channelId: string): Promise<void> {
    this.values.delete(channelId);
  }

  async list(): Promise<Map<string, string>> {
    await this.listGate;
    return new Map(this.values);
  }
}

class RecordingIngress implements IngressPort {
  readonly submitted: InboundMessage[] = [];
  constructor(readonly cursors: MemoryCursors) {}
  async submit(message: InboundMessage): Promise<SubmitResult> {
    this.submitted.push(message);
    return { status: "accepted" };
  }
}

const HOUR = 3_600_000;
const ask = (channelId: string, text: string, id?: string): Payload & { channel_id: string } =>
  ({ channel_id: channelId, content: text, ...(id ? { id } : {}) });

describe("Discord backfill: bounds and order", () => {
  let fake: FakeDiscord;
  let cursors: MemoryCursors;
  let ingress: RecordingIngress;
  let adapter: DiscordAdapter | undefined;
  const logLines: string[] = [];

  const start = async (options: Partial<DiscordAdapterOptions> = {}): Promise<DiscordAdapter> => {
    const destination = new Writable({ write(chunk, _encoding, done) { logLines.push(String(chunk)); done(); } });
    adapter = new DiscordAdapter({
      token: FAKE_TOKEN, apiRoot: fake.apiRoot, alwaysOnChannels: [IDS.alwaysOnChannel], backfillChannels: [IDS.textChannel],
      logger: createLogger({ level: "debug", destination }), ...options,
    });
    await adapter.start(ingress);
    return adapter;
  };
  const backfillReports = (): Array<Record<string, unknown>> =>
    logLines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((line) => String(line.msg).startsWith("discord backfill"));

  beforeEach(async () => {
    fake = await FakeDiscord.start();
    cursors = new MemoryCursors();
    ingress = new RecordingIngress(cursors);
    logLines.length = 0;
  });

  afterEach(async () => {
    await adapter?.stop();
    adapter = undefined;
    await fake.close();
  });

  it("on the first run of a deployment answers nothing from the past, and starts a cursor for every channel, quiet ones too", async () => {
    fake.seedHistory(ask(IDS.alwaysOnChannel, "an old question"));
    const before = Date.now();
    await start();
    await vi.waitFor(() => expect(backfillReports()).toHaveLength(1));
    expect(ingress.submitted).toEqual([]);
    expect([...cursors.values.keys()].sort()).toEqual([IDS.textChannel, IDS.alwaysOnChannel, IDS.thread].sort());
    // The quiet text channel starts at "now": anything posted later counts as new.
    expect(Number((BigInt(cursors.values.get(IDS.textChannel) ?? "0") >> 22n) + 1_420_070_400_000n)).toBeGreaterThanOrEqual(before - 1_000);
  });

  it("takes at most the newest 100 messages of a channel, oldest first, and says so", async () => {
    cursors.values.set(IDS.alwaysOnChannel, snowflakeAt(Date.now() - HOUR));
    const ids = Array.from({ length: 150 }, (_, i) => fake.seedHistory(ask(IDS.alwaysOnChannel, `message ${i}`)).id as string);
    await start();
    await vi.waitFor(() => expect(ingress.submitted).toHaveLength(100));
    expect(ingress.submitted.map((message) => message.messageId)).toEqual(ids.slice(50));
    expect(ingress.submitted[0]?.text).toBe("message 50");
    await vi.waitFor(() => expect(backfillReports()[0]).toMatchObject({ msg: "discord backfill hit its bound; only the newest messages were caught up", truncated: [IDS.alwaysOnChannel] }));
    // Cursor past the last one: a second backfill would find nothing.
    await vi.waitFor(() => expect(cursors.values.get(IDS.alwaysOnChannel)).toBe(ids.at(-1)));
  });

  it("leaves messages older than the age bound, and DMs quiet for longer than the DM window", async () => {
    const now = Date.now();
    cursors.values.set(IDS.alwaysOnChannel, snowflakeAt(now - 10 * HOUR));
    cursors.values.set(IDS.dmChannel, snowflakeAt(now - 8 * 24 * HOUR));
    fake.seedHistory(ask(IDS.alwaysOnChannel, "seven hours ago", snowflakeAt(now - 7 * HOUR)));
    fake.seedHistory(ask(IDS.alwaysOnChannel, "five hours ago", snowflakeAt(now - 5 * HOUR)));
    fake.seedHistory({ channel_id: IDS.dmChannel, content: "a DM after a week of silence" });
    await start();
    await vi.waitFor(() => expect(backfillReports()).toHaveLength(1));
    await vi.waitFor(() => expect(ingress.submitted.map((message) => message.text)).toEqual(["five hours ago"]));
    // The DM channel was not even looked at.
    expect(fake.requestsTo("GET", new RegExp(`^/channels/${IDS.dmChannel}`))).toEqual([]);
  });

  it("catches up a DM active within the window, fetching the channel the client does not know yet", async () => {
    cursors.values.set(IDS.dmChannel, snowflakeAt(Date.now() - 24 * HOUR));
    fake.seedHistory({ channel_id: IDS.dmChannel, content: "are you back?" });
    await start();
    await vi.waitFor(() => expect(ingress.submitted).toMatchObject([{ text: "are you back?", sessionKey: `dc:dm:${IDS.user}`, chatType: "private" }]));
    expect(fake.requestsTo("GET", new RegExp(`^/channels/${IDS.dmChannel}$`))).toHaveLength(1);
  });

  it("keeps a channel in order: live messages that arrive during the backfill wait behind the older ones", async () => {
    cursors.values.set(IDS.alwaysOnChannel, snowflakeAt(Date.now() - HOUR));
    fake.seedHistory(ask(IDS.alwaysOnChannel, "older 1"));
    fake.seedHistory(ask(IDS.alwaysOnChannel, "older 2"));
    let release = (): void => {};
    cursors.listGate = new Promise((resolve) => { release = resolve; });
    await start();
    fake.dispatchMessage(ask(IDS.alwaysOnChannel, "live, during the backfill"));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(ingress.submitted).toEqual([]);
    release();
    await vi.waitFor(() => expect(ingress.submitted.map((message) => message.text)).toEqual(["older 1", "older 2", "live, during the backfill"]));
  });

  it("does not hold live messages for ever behind a backfill that hangs", async () => {
    cursors.values.set(IDS.alwaysOnChannel, snowflakeAt(Date.now() - HOUR));
    cursors.listGate = new Promise(() => undefined);
    await start({ backfillHoldMs: 300 });
    fake.dispatchMessage(ask(IDS.alwaysOnChannel, "live"));
    await vi.waitFor(() => expect(ingress.submitted.map((message) => message.text)).toEqual(["live"]));
    // The hung backfill must not block shutdown either.
    cursors.listGate = undefined;
  });
});
