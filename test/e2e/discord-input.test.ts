import { describe, expect, it } from "vitest";
import { imagePartsOf, lastUserText, withoutStamp } from "../fakes/fake-llm.js";
import { formatBytes } from "../../src/core/attachments.js";
import { makePng } from "../helpers/media-files.js";
import { gifvEmbed } from "../fakes/fake-discord-world.js";
import { DiscordE2E, E2E_TIMEOUT, pipelineForEachTest, IDS, fixture, sleep, until, userTexts } from "../helpers/discord-pipeline.js";

/**
 * What people send besides a line of text, end to end (real discord.js ↔ fake Discord, real
 * ingress / queue / worker on Redis, fake LLM): pastes Discord turns into message.txt, files,
 * role mentions, forwards. Replies and sessions: discord.test.ts.
 */

/** A 9,000-character paste: numbered lines, so a lost or repeated piece would show. */
const PASTE = `${Array.from({ length: 300 }, (_, i) => `line ${String(i).padStart(3, "0")}: ${"x".repeat(19)}`).join("\n")}!`;

describe("Discord through the whole pipeline: what people send", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E;
  pipelineForEachTest((started) => (e2e = started), { MAX_MESSAGE_CHARS: "16000" });

  it("answers a 9,000-character paste (Discord's message.txt, empty content) once, as one message, with all of it", async () => {
    expect(PASTE.length).toBe(9_000);
    e2e.llm.enqueue("Read all 300 lines; nothing failed.");
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "" }), { files: [{ name: "message.txt", content: PASTE }] });

    const [answer] = await e2e.waitForSent(1, IDS.dmChannel);
    expect(answer?.content).toBe("Read all 300 lines; nothing failed.");
    // One turn, one user message holding the whole paste, byte for byte.
    expect(e2e.llm.requests).toHaveLength(1);
    expect(userTexts(e2e.llm.requests[0])).toEqual([PASTE]);
    expect((await e2e.transcript(`dc:dm:${IDS.user}`)).filter((message) => message.role === "user").map((message) => withoutStamp(message.content ?? ""))).toEqual([PASTE]);
    // The CDN was asked once, and no notice went out.
    expect(e2e.fake.requestsTo("GET", /^\/cdn\/attachments\//)).toHaveLength(1);
    await sleep(300);
    expect(e2e.sent()).toHaveLength(1);
  });

  it("in a guild channel, answers a paste whose mention moved into message.txt, and leaves a paste for the team alone", async () => {
    e2e.llm.enqueue("Looking at it.");
    e2e.fake.dispatchMessage({ channel_id: IDS.textChannel, content: "" }, { files: [{ name: "message.txt", content: "just the nightly log, for the team\n".repeat(100) }] });
    e2e.fake.dispatchMessage({ channel_id: IDS.textChannel, content: "" }, { files: [{ name: "message.txt", content: `<@${IDS.bot}> why does this fail?\n${PASTE}` }] });

    const [answer] = await e2e.waitForSent(1, IDS.textChannel);
    expect(answer?.content).toBe("Looking at it.");
    expect(e2e.llm.requests).toHaveLength(1);
    expect(lastUserText(e2e.llm.requests[0]!)).toBe(`Ada L.: why does this fail?\n${PASTE}`);
  });

  it("reads a text file next to the typed words, shows a picture to the model as an image part, and says once what it could not open", async () => {
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "what's wrong in this script?" }), {
      files: [
        { name: "deploy.py", content: "import os\nos.system('rm -rf /tmp/build')\n" },
        { name: "screenshot.png", content: await makePng(320, 200) },
        { name: "broken.png", content: Buffer.from([0x89, 0x50, 0x4e, 0x47]) },
      ],
    });
    const sent = await e2e.waitForSent(2, IDS.dmChannel);
    const answer = sent.find((body) => String(body.content).startsWith("echo:"));
    const notice = sent.find((body) => !String(body.content).startsWith("echo:"));
    expect(answer?.content).toBe("echo: [image screenshot.png, 4 KB, 320×200]\n[image broken.png, 4 B, could not be opened]\nwhat's wrong in this script?\n\n[file deploy.py, its text:]\nimport os\nos.system('rm -rf /tmp/build')\n[end of deploy.py]".replace("4 KB", formatBytes((await makePng(320, 200)).length)!));
    expect(notice?.content).toBe("Sorry, I couldn't use your broken.png: it is not a picture format I can view (PNG, JPEG, WEBP or GIF), or it is damaged.");
    const images = imagePartsOf(e2e.llm.requests[0]!);
    expect(images).toHaveLength(1);
    expect(Buffer.from(images[0]!.url.split(",")[1]!, "base64").equals(await makePng(320, 200))).toBe(true);
    await sleep(300);
    expect(e2e.sent()).toHaveLength(2);
  });

  it("shows a Tenor GIF (a gifv embed, no attachment) to the model as its first frame, named after its link", async () => {
    const page = "https://tenor.com/view/cat-typing-gif-12002898";
    const frame = await makePng(498, 373);
    const proxy = e2e.fake.serveProxied("cat-typing-gif-12002898.png", frame);
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: page, embeds: [gifvEmbed(page, proxy)] }));
    const [answer] = await e2e.waitForSent(1, IDS.dmChannel);
    expect(answer?.content).toBe(`echo: [GIF (its first frame) cat-typing-gif-12002898, ${formatBytes(frame.length)}, 498×373]`);
    const images = imagePartsOf(e2e.llm.requests[0]!);
    expect(images).toHaveLength(1);
    expect(Buffer.from(images[0]!.url.split(",")[1]!, "base64").equals(frame)).toBe(true);
    expect(e2e.fake.requestsTo("GET", /^\/cdn\/external\//)).toHaveLength(1);
  });

  it("answers a DM of damaged pictures with one clear notice and keeps the model out of it", async () => {
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "" }), { files: [{ name: "cat.jpg", content: Buffer.alloc(2_000, 1) }, { name: "dog.png", content: Buffer.alloc(10, 2) }] });
    const [notice] = await e2e.waitForSent(1, IDS.dmChannel);
    expect(notice?.content).toBe("Sorry, I couldn't use some of what you sent:\n• cat.jpg: it is not a picture format I can view (PNG, JPEG, WEBP or GIF), or it is damaged\n• dog.png: it is not a picture format I can view (PNG, JPEG, WEBP or GIF), or it is damaged");
    await sleep(300);
    expect(e2e.sent()).toHaveLength(1);
    expect(e2e.llm.requests).toHaveLength(0);
  });

  it("transcribes a Discord voice message (an audio attachment) and answers what was said", async () => {
    e2e.llm.setTranscriber(() => "remind me what a monad is");
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "" }), { files: [{ name: "voice-message.ogg", content: Buffer.from("OggS voice"), contentType: "audio/ogg" }] });
    const [answer] = await e2e.waitForSent(1, IDS.dmChannel);
    expect(answer?.content).toMatch(/^echo: \[voice message voice-message\.ogg, 10 B, transcribed: the text below is what was said\]\nremind me what a monad is$/);
    expect(e2e.llm.transcriptions[0]?.bytes.toString()).toBe("OggS voice");
  });

  it("answers a mention of the bot's managed role (what autocomplete often inserts), with the role stripped", async () => {
    e2e.fake.dispatchMessage({ channel_id: IDS.textChannel, content: `<@&${IDS.botRole}> what does the deploy script do?` });
    // Another role is not the bot.
    e2e.fake.dispatchMessage({ channel_id: IDS.textChannel, content: `<@&${IDS.staffRole}> standup in 5` });

    const [answer] = await e2e.waitForSent(1, IDS.textChannel);
    expect(answer?.content).toBe("echo: Ada L.: what does the deploy script do?");
    // Discord parsed the role out of the content; no user mention at all.
    const sentByAda = e2e.fake.message(IDS.textChannel, String((answer?.message_reference as { message_id?: string }).message_id));
    expect(sentByAda).toMatchObject({ mentions: [], mention_roles: [IDS.botRole] });
    await sleep(300);
    expect(e2e.llm.requests).toHaveLength(1);
  });

  it("marks a forwarded message with the channel (and server) it came from", async () => {
    const original = e2e.fake.dispatchMessage({ channel_id: IDS.alwaysOnChannel, content: "the nightly backup failed at 02:13" });
    await e2e.waitForSent(1, IDS.alwaysOnChannel);

    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "" }), { forward: { channelId: IDS.alwaysOnChannel, messageId: String(original.id) } });
    await e2e.waitForSent(1, IDS.dmChannel);
    expect(lastUserText(e2e.llm.requests.at(-1)!)).toBe("[forwarded from #ask-the-bot (Fake Guild)]\nthe nightly backup failed at 02:13");
  });

  it("reads a message.txt in a forwarded message too", async () => {
    const original = e2e.fake.dispatchMessage({ channel_id: IDS.alwaysOnChannel, content: "" }, { files: [{ name: "message.txt", content: "a long incident report" }] });
    await e2e.waitForSent(1, IDS.alwaysOnChannel);
    e2e.fake.dispatchMessage(fixture("dm", { id: undefined, content: "" }), { forward: { channelId: IDS.alwaysOnChannel, messageId: String(original.id) } });
    await until(() => expect(e2e.sent(IDS.dmChannel)).toHaveLength(1));
    expect(lastUserText(e2e.llm.requests.at(-1)!)).toBe("[forwarded from #ask-the-bot (Fake Guild)]\na long incident report");
  });
});
