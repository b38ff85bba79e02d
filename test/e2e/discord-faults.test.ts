import { afterEach, describe, expect, it } from "vitest";
import { DiscordE2E, closeExpectingOnlyAskerPinged, E2E_TIMEOUT, IDS, fixture, mention, sleep, until } from "../helpers/discord-pipeline.js";

/**
 * Discord saying no, end to end: the bot lost the right to post (50013) or to see the channel
 * (50001), or the thread was archived and locked (50083). The reply is dropped with one clear
 * log line, the typing indicator stops, and the bot keeps serving everyone else.
 */

describe("Discord refusals through the whole pipeline", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E;
  let gate: { release(): void } | undefined;

  afterEach(async () => {
    gate?.release();
    gate = undefined;
    await closeExpectingOnlyAskerPinged(e2e);
  });

  const undeliverable = (): string[] => e2e.logged("reply-undeliverable").map((line) => String((line.err as { message?: string } | undefined)?.message ?? ""));

  /** A DM answered after the fault: the gateway, the worker and delivery are all still up. */
  async function stillServing(): Promise<void> {
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "still there?" }));
    await until(() => expect(e2e.sent(IDS.dmChannel).map((body) => body.content)).toEqual(["echo: still there?"]));
  }

  it("in a channel where it may no longer post (50013): drops the reply with a log line, stops typing at once, keeps serving", async () => {
    // Typing as soon as the turn begins: the wait below is then well past the first post.
    e2e = await DiscordE2E.start({ TYPING_DELAY_MS: "0" });
    await e2e.startPipeline({ adapter: { typingIntervalMs: 100 } });
    e2e.fake.setPermissions(IDS.textChannel, { send: false });
    gate = e2e.llm.hold();

    e2e.fake.dispatchMessage(fixture("guild-mention"));
    await e2e.llm.waitForRequests(1, 45_000);
    // The first typing post may come after the model's request on a loaded machine (CI saw none
    // 700 ms after it): wait for it, then give a loop that kept going — every 100 ms — time to show.
    await until(() => expect(e2e.typingPosts(IDS.textChannel).length).toBeGreaterThan(0));
    await sleep(700);
    const typing = e2e.typingPosts(IDS.textChannel);
    expect(typing.map((request) => request.status)).toEqual([403]);
    gate.release();

    await until(() => expect(undeliverable()).toHaveLength(1));
    expect(undeliverable()[0]).toMatch(/403 code 50013/);
    expect(e2e.messagePosts().map((request) => request.status)).toEqual([403]);
    await stillServing();
  });

  it("when it lost access to the channel mid-turn (50001): drops the reply and keeps serving", async () => {
    e2e = await DiscordE2E.start();
    await e2e.startPipeline();
    gate = e2e.llm.hold();
    e2e.fake.dispatchMessage(fixture("guild-mention"));
    await e2e.llm.waitForRequests(1, 45_000);
    e2e.fake.setPermissions(IDS.textChannel, { view: false });
    gate.release();

    await until(() => expect(undeliverable()).toHaveLength(1));
    expect(undeliverable()[0]).toMatch(/403 code 50001/);
    await stillServing();
  });

  it("in a thread archived and locked mid-turn (50083): drops the reply; an archived but open thread is reopened by the reply", async () => {
    e2e = await DiscordE2E.start();
    await e2e.startPipeline();
    gate = e2e.llm.hold();
    e2e.fake.dispatchMessage(mention(IDS.thread, "600000000000000401", "summarize, please"));
    await e2e.llm.waitForRequests(1, 45_000);
    e2e.fake.archiveThread(IDS.thread, { locked: true });
    gate.release();
    gate = undefined;
    await until(() => expect(undeliverable()).toHaveLength(1));
    expect(undeliverable()[0]).toMatch(/400 code 50083/);

    const open = e2e.fake.createThread(IDS.textChannel, "quiet for a while");
    gate = e2e.llm.hold();
    e2e.fake.dispatchMessage({ channel_id: String(open.id), content: `<@${IDS.bot}> any news?` });
    await e2e.llm.waitForRequests(2, 45_000);
    e2e.fake.archiveThread(String(open.id));
    gate.release();
    const [answer] = await e2e.waitForSent(1, String(open.id));
    expect(answer?.content).toBe("echo: Ada L.: any news?");
    expect(undeliverable()).toHaveLength(1);
    await stillServing();
  });
});
