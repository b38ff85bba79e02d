/**
 * Access before anything else on Discord (issue 29): a stranger's DM and a mention in a channel
 * that is not served are checked before their text files are downloaded or a replied-to message
 * fetched (real discord.js ↔ fake Discord, real ingress on Redis). The stranger gets the pairing
 * code, the channel nothing.
 */
import { afterEach, describe, expect, it } from "vitest";
import { CLOSED_CHANNEL, DiscordE2E, E2E_TIMEOUT, IDS, fixture, mention, sleep, until } from "../helpers/discord-pipeline.js";

const FILE = { name: "notes.txt", content: "a file nobody served should ever download\n".repeat(50) };

describe("Discord: access is checked before any download or fetch", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E | undefined;
  afterEach(async () => {
    await e2e?.close();
    e2e = undefined;
  });

  const cdnReads = (run: DiscordE2E) => run.fake.requestsTo("GET", /^\/cdn\//);
  const messageReads = (run: DiscordE2E) => run.fake.requestsTo("GET", /^\/channels\/\d+\/messages\/\d+$/);

  it("a stranger's DM with a text file and a reply: the pairing code, no download, no fetch", async () => {
    // Ada (IDS.user) is not on the allowlist here.
    e2e = await DiscordE2E.start({ ALLOWED_DISCORD_USERS: IDS.otherUser });
    await e2e.startPipeline();
    const earlier = e2e.fake.seedHistory(fixture("dm", { id: "600000000000000401", content: "an earlier message" }));
    e2e.fake.dispatchMessage(fixture("dm", { id: "600000000000000402", content: "read this please" }), { files: [FILE], replyTo: String(earlier.id) });
    const [notice] = await e2e.waitForSent(1, IDS.dmChannel);
    expect(String(notice?.content)).toMatch(/pairing code is [A-Z0-9]{8}/);
    await sleep(300);
    expect(cdnReads(e2e)).toEqual([]);
    expect(messageReads(e2e)).toEqual([]);
    expect(e2e.llm.requests).toHaveLength(0);
  });

  it("a mention with a text file in a channel not served: silence, no download; the same in a served channel is read", async () => {
    e2e = await DiscordE2E.start();
    await e2e.startPipeline();
    e2e.fake.dispatchMessage(mention(CLOSED_CHANNEL, "600000000000000411", "read this"), { files: [FILE] });
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000412", "read this"), { files: [FILE] });
    await e2e.waitForSent(1, IDS.textChannel);
    await until(() => expect(e2e!.logged("message-denied")).toHaveLength(1));
    await sleep(300);
    // One download: the served channel's file.
    expect(cdnReads(e2e).map((request) => request.path)).toEqual([expect.stringContaining(`/cdn/attachments/${IDS.textChannel}/`)]);
    expect(e2e.sent(CLOSED_CHANNEL)).toEqual([]);
  });
});
