import { afterEach, describe, expect, it } from "vitest";
import { snowflakeAt } from "../fakes/fake-discord.js";
import { DiscordE2E, closeExpectingOnlyAskerPinged, IDS, fixture, sleep, until } from "../helpers/discord-pipeline.js";

/**
 * Messages posted while the gateway could not hear them (a deploy, an outage) are answered
 * once it is back: replayed by Discord when the session resumes, fetched from the channel
 * history (backfill) when Discord starts a new session. Real discord.js ↔ fake Discord, real
 * ingress / queue / worker on Redis, fake LLM (echo).
 */

/** `@bot text` from Ada in a channel; Discord picks the id. */
const ask = (channelId: string, text: string) => fixture("guild-mention", { id: undefined, channel_id: channelId, content: `<@${IDS.bot}> ${text}` });

const contents = (e2e: DiscordE2E, channelId?: string): string[] => e2e.sent(channelId).map((body) => String(body.content));

/** Waits until `count` replies went out and nothing more follows for a while. */
async function settledReplies(e2e: DiscordE2E, count: number): Promise<string[]> {
  await until(() => expect(e2e.sent().length).toBeGreaterThanOrEqual(count));
  await sleep(500);
  return contents(e2e);
}

/**
 * A running pipeline answers "first"; then the gateway drops and stays unreachable while
 * `postMeanwhile` runs (the fake stores what is posted), and comes back.
 */
async function answerThenCutOff(e2e: DiscordE2E, options: { resumable: boolean }, postMeanwhile: () => void): Promise<void> {
  await e2e.startPipeline();
  e2e.fake.dispatchMessage(ask(IDS.textChannel, "first"));
  await e2e.waitForSent(1);
  e2e.fake.setGatewayReachable(false);
  e2e.fake.disconnectGateway(options);
  await until(() => expect(e2e.fake.connectedSessions).toBe(0));
  postMeanwhile();
  e2e.fake.setGatewayReachable(true);
}

describe("Discord: nothing posted during a disconnect is lost or answered twice", { timeout: 120_000 }, () => {
  let e2e: DiscordE2E;

  afterEach(async () => {
    await closeExpectingOnlyAskerPinged(e2e);
  });

  it("after a gateway restart, answers once what was posted while it was down: channels, threads old and new, DMs; within the age bound", async () => {
    e2e = await DiscordE2E.start();
    const first = await e2e.startPipeline();
    e2e.fake.dispatchMessage(ask(IDS.textChannel, "before the deploy"));
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "hi before the deploy" }));
    await e2e.waitForSent(2);

    // The deploy: the gateway process stops (its session ends), people keep writing.
    await first.close();
    e2e.pipelines.splice(e2e.pipelines.indexOf(first), 1);
    // The fake sees the socket's close a moment after close() returns.
    await until(() => expect(e2e.fake.connectedSessions).toBe(0));
    const down = Date.now();
    e2e.fake.dispatchMessage(ask(IDS.textChannel, "asked while you were down"));
    e2e.fake.dispatchMessage(fixture("guild-no-mention", { id: undefined }));
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "and a DM while you were down" }));
    e2e.fake.dispatchMessage(ask(IDS.thread, "in the old thread"));
    const fresh = e2e.fake.createThread(IDS.textChannel, "opened during the deploy");
    e2e.fake.dispatchMessage({ channel_id: String(fresh.id), content: `<@${IDS.bot}> in the new thread` });
    // Too old to answer now (past the 6-hour bound): left alone.
    e2e.fake.seedHistory({ ...ask(IDS.alwaysOnChannel, "a question from this morning"), id: snowflakeAt(down - 7 * 3_600_000) });

    await e2e.startPipeline();
    const replies = await settledReplies(e2e, 6);
    expect(replies.sort()).toEqual([
      "echo: Ada (ops): asked while you were down",
      "echo: Ada (ops): before the deploy",
      "echo: Ada (ops): in the old thread",
      "echo: Ada L.: in the new thread",
      "echo: and a DM while you were down",
      "echo: hi before the deploy",
    ]);
    expect(contents(e2e, String(fresh.id))).toEqual(["echo: Ada L.: in the new thread"]);
    expect(contents(e2e, IDS.thread)).toEqual(["echo: Ada (ops): in the old thread"]);
    expect(e2e.llm.requests).toHaveLength(6);

    // Another restart with nothing new: nothing is answered again.
    const second = e2e.pipelines.at(-1)!;
    await second.close();
    e2e.pipelines.splice(e2e.pipelines.indexOf(second), 1);
    await e2e.startPipeline();
    await until(() => expect(e2e.logged("discord backfill done")).toHaveLength(1));
    await sleep(500);
    expect(e2e.sent()).toHaveLength(6);
    expect(e2e.llm.requests).toHaveLength(6);
  });

  it("when Discord cannot resume the session, identifies anew and catches up from the history, answering each message once", async () => {
    // A long outage: the connection drops, the gateway is unreachable, the session expires.
    e2e = await DiscordE2E.start();
    await answerThenCutOff(e2e, { resumable: false }, () => {
      e2e.fake.dispatchMessage(ask(IDS.textChannel, "second, while the gateway was away"));
      e2e.fake.dispatchMessage(fixture("always-on", { id: undefined, content: "third, in the always-on channel" }));
    });

    await settledReplies(e2e, 3);
    expect(e2e.fake.resumes.length).toBeGreaterThanOrEqual(1);
    expect(e2e.fake.identifies).toHaveLength(2);
    expect(contents(e2e).sort()).toEqual([
      "echo: Ada (ops): first",
      "echo: Ada (ops): second, while the gateway was away",
      "echo: Ada L.: third, in the always-on channel",
    ]);
    expect(e2e.llm.requests).toHaveLength(3);
  });

  it("after a short disconnect Discord resumes the session and replays what was missed; each message is answered once", async () => {
    e2e = await DiscordE2E.start();
    await answerThenCutOff(e2e, { resumable: true }, () => {
      e2e.fake.dispatchMessage(ask(IDS.textChannel, "second, during the blip"));
      e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "third, during the blip" }));
    });

    await settledReplies(e2e, 3);
    // Resumed, not identified again: the replay did it, no backfill needed.
    expect(e2e.fake.identifies).toHaveLength(1);
    expect(e2e.fake.resumes).toHaveLength(1);
    expect(contents(e2e).sort()).toEqual(["echo: Ada (ops): first", "echo: Ada (ops): second, during the blip", "echo: third, during the blip"]);
    expect(e2e.llm.requests).toHaveLength(3);
  });
});

