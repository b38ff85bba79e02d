/**
 * One send budget per bot on Discord (issue 30 item 3), through the real discord.js client and
 * the fake Discord, which enforces a global limit per second, 5 messages per 5 s per channel,
 * and a 120 s penalty for a bot that keeps sending through a 429. Many channels stream answers
 * at once — 20 under a global limit scaled down to 15/s (the budget to 12, a margin for a loaded
 * test machine), and 50 at Discord's own limits and the budget's defaults: every final arrives
 * alone, none is refused, nobody is penalized, the previews give way; a channel under a long
 * penalty holds up nobody else's final.
 */
import { afterEach, describe, expect, it } from "vitest";
import { lastUserText } from "../../fakes/fake-llm.js";
import { DEFAULT_GUILD, type FakeDiscord, type Payload } from "../../fakes/fake-discord.js";
import { DEFAULT_DISCORD_LIMITS } from "../../fakes/fake-discord-rest.js";
import { textChannel } from "../../fakes/fake-discord-world.js";
import { closeExpectingOnlyAskerPinged, DiscordE2E, IDS, mention, sleep, until } from "../../helpers/discord-pipeline.js";

const CHANNELS = 20;
/** The "50 busy chats", at Discord's own limits. */
const MANY = 50;
const manyChannelIds = Array.from({ length: MANY }, (_, index) => String(310_000_000_000_000_000n + BigInt(index)));
const channelIds = manyChannelIds.slice(0, CHANNELS);
const GUILD: Payload = { ...DEFAULT_GUILD, channels: [...(DEFAULT_GUILD.channels as Payload[]), ...manyChannelIds.map((id, index) => textChannel(id, `busy-${index}`))] };
const answerFor = (question: string) => `${question}: ${Array.from({ length: 30 }, (_, index) => `w${index}`).join(" ")}`;
const finalsIn = (e2e: DiscordE2E, channelId: string) => e2e.fake.botMessages(channelId).filter((message) => (Number(message.flags ?? 0) & 4096) === 0);

describe("discord: one send budget per bot", { timeout: 180_000 }, () => {
  let e2e: DiscordE2E | undefined;
  afterEach(async () => {
    await closeExpectingOnlyAskerPinged(e2e);
    e2e = undefined;
  });

  /** Every channel asks at once and streams; → the pipeline, once every final is in and the channels have settled. */
  async function streamAll(channels: string[], env: Record<string, string>, limits?: FakeDiscord["limits"]) {
    e2e = await DiscordE2E.start({
      DISCORD_STREAMING: "partial", ALLOWED_DISCORD_CHANNELS: channels.join(","), DISCORD_ALWAYS_ON_CHANNELS: channels.join(","),
      WORKER_CONCURRENCY: String(channels.length), TYPING_DELAY_MS: "0", ...env,
    }, { guilds: [GUILD] });
    if (limits) e2e.fake.limits = limits;
    const pipeline = await e2e.startPipeline();
    e2e.llm.setHandler((request) => ({ text: answerFor(lastUserText(request).replace(/^.*?:\s*/, "")), tokensPerSecond: 15 }));
    channels.forEach((channelId, index) => e2e!.fake.dispatchMessage(mention(channelId, String(620_000_000_000_000_000n + BigInt(index)), `q${index}`)));

    await until(() => {
      const missing = channels.filter((channelId) => finalsIn(e2e!, channelId).length === 0);
      expect(missing).toEqual([]);
    }, 150_000);
    await sleep(1_500);
    return pipeline;
  }

  /** Each channel holds its answer alone (no status beside it); no final was answered 429; nobody earned a penalty. */
  function expectFinalsAlone(run: DiscordE2E, channels: string[]) {
    channels.forEach((channelId, index) => {
      expect(run.fake.botMessages(channelId).map((message) => String(message.content))).toEqual([answerFor(`q${index}`)]);
    });
    const refusedFinals = run.fake.rateLimited().filter((request) => request.method === "POST" && (Number((request.body as Payload | undefined)?.flags ?? 0) & 4096) === 0 && /\/messages$/.test(request.path));
    expect(refusedFinals).toEqual([]);
    expect(run.fake.penalties).toEqual([]);
  }

  it(`${CHANNELS} channels streaming at once under a global limit: every final delivered, none refused, previews degrade`, async () => {
    const pipeline = await streamAll(channelIds, { DISCORD_REQUESTS_PER_SECOND: "12" }, { globalPerSecond: 15, abuseAfter: 3, penaltySeconds: 120 });
    expectFinalsAlone(e2e!, channelIds);
    // The previews gave way: with no 429 from Discord, every refusal the renderer met was the budget's.
    expect(pipeline.gateway.previews.stats.rateLimited).toBeGreaterThan(0);
  });

  it(`${MANY} channels streaming at once at Discord's own limits (50 requests/s, 5 per 5 s per channel): every final delivered alone, none refused, no penalty, previews degrade`, async () => {
    const pipeline = await streamAll(manyChannelIds, {}, DEFAULT_DISCORD_LIMITS);
    expectFinalsAlone(e2e!, manyChannelIds);
    expect(pipeline.gateway.previews.stats.rateLimited).toBeGreaterThan(0);
  });

  it("a channel under a 120 s penalty holds up no other channel's final, and is not sent to while it lasts", async () => {
    const [penalized, other] = [channelIds[0]!, channelIds[1]!];
    e2e = await DiscordE2E.start({
      DISCORD_STREAMING: "partial", ALLOWED_DISCORD_CHANNELS: `${penalized},${other}`, DISCORD_ALWAYS_ON_CHANNELS: `${penalized},${other}`, TYPING_DELAY_MS: "0",
    }, { guilds: [GUILD] });
    await e2e.startPipeline();
    e2e.llm.setHandler((request) => ({ text: answerFor(lastUserText(request).replace(/^.*?:\s*/, "")), tokensPerSecond: 20 }));
    e2e.fake.penalize(`messages:${penalized}`, 120);
    e2e.fake.dispatchMessage(mention(penalized, "630000000000000001", "first"));
    e2e.fake.dispatchMessage(mention(other, "630000000000000002", "second"));

    await until(() => expect(finalsIn(e2e!, other)).toHaveLength(1), 60_000);
    await sleep(2_000);
    expect(e2e.fake.botMessages(other).map((message) => String(message.content))).toEqual([answerFor("second")]);
    // The penalized channel was told once and then left alone: nothing of ours extended the penalty.
    const writes = e2e.fake.requests.filter((request) => request.path.startsWith(`/channels/${penalized}/messages`) && request.method !== "GET");
    expect(writes).toHaveLength(1);
    expect(writes[0]?.status).toBe(429);
    expect(e2e.fake.penalties).toEqual([{ scope: `messages:${penalized}`, at: expect.any(Number), seconds: 120 }]);
    expect(e2e.fake.botMessages(penalized)).toEqual([]);
  });
});
