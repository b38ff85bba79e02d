/**
 * One send budget per bot on Discord (issue 30 item 3), through the real discord.js client and
 * the fake Discord, which enforces a global limit per second (here 15, scaled down from Discord's
 * 50 so that a few channels reach it; the budget to 12, a margin for a loaded test machine), 5 messages per 5 s per
 * channel, and a 120 s penalty for a bot that keeps sending through a 429. Many channels stream
 * answers at once: every final arrives, none is refused, the previews give way; a channel under
 * a long penalty holds up nobody else's final.
 */
import { afterEach, describe, expect, it } from "vitest";
import { lastUserText } from "../../fakes/fake-llm.js";
import { DEFAULT_GUILD, type Payload } from "../../fakes/fake-discord.js";
import { textChannel } from "../../fakes/fake-discord-world.js";
import { closeExpectingOnlyAskerPinged, DiscordE2E, IDS, mention, sleep, until } from "../../helpers/discord-pipeline.js";

const CHANNELS = 20;
const channelIds = Array.from({ length: CHANNELS }, (_, index) => String(310_000_000_000_000_000n + BigInt(index)));
const GUILD: Payload = { ...DEFAULT_GUILD, channels: [...(DEFAULT_GUILD.channels as Payload[]), ...channelIds.map((id, index) => textChannel(id, `busy-${index}`))] };
const answerFor = (question: string) => `${question}: ${Array.from({ length: 30 }, (_, index) => `w${index}`).join(" ")}`;
const finalsIn = (e2e: DiscordE2E, channelId: string) => e2e.fake.botMessages(channelId).filter((message) => (Number(message.flags ?? 0) & 4096) === 0);

describe("discord: one send budget per bot", { timeout: 180_000 }, () => {
  let e2e: DiscordE2E | undefined;
  afterEach(async () => {
    await closeExpectingOnlyAskerPinged(e2e);
    e2e = undefined;
  });

  it(`${CHANNELS} channels streaming at once under a global limit: every final delivered, none refused, previews degrade`, async () => {
    e2e = await DiscordE2E.start({
      DISCORD_STREAMING: "partial", ALLOWED_DISCORD_CHANNELS: channelIds.join(","), DISCORD_ALWAYS_ON_CHANNELS: channelIds.join(","),
      WORKER_CONCURRENCY: String(CHANNELS), TYPING_DELAY_MS: "0", DISCORD_REQUESTS_PER_SECOND: "12",
    }, { guilds: [GUILD] });
    e2e.fake.limits = { globalPerSecond: 15, abuseAfter: 3, penaltySeconds: 120 };
    const pipeline = await e2e.startPipeline();
    e2e.llm.setHandler((request) => ({ text: answerFor(lastUserText(request).replace(/^.*?:\s*/, "")), tokensPerSecond: 15 }));
    channelIds.forEach((channelId, index) => e2e!.fake.dispatchMessage(mention(channelId, String(620_000_000_000_000_000n + BigInt(index)), `q${index}`)));

    await until(() => {
      const missing = channelIds.filter((channelId) => finalsIn(e2e!, channelId).length === 0);
      expect(missing).toEqual([]);
    }, 150_000);
    await sleep(1_500);
    channelIds.forEach((channelId, index) => {
      expect(e2e!.fake.botMessages(channelId).map((message) => String(message.content))).toEqual([answerFor(`q${index}`)]);
    });
    // No request was answered 429 for a final, and nobody earned a penalty.
    const refusedFinals = e2e.fake.rateLimited().filter((request) => request.method === "POST" && (Number((request.body as Payload | undefined)?.flags ?? 0) & 4096) === 0 && /\/messages$/.test(request.path));
    expect(refusedFinals).toEqual([]);
    expect(e2e.fake.penalties).toEqual([]);
    // The previews gave way: with no 429 from Discord, every refusal the renderer met was the budget's.
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
