import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { COMMAND_MENU } from "../../src/core/commands.js";
import { OTHER_USER, type Payload, type RecordedRequest } from "../fakes/fake-discord.js";
import { writeConfigFile } from "../helpers/config-file.js";
import { DiscordE2E, E2E_TIMEOUT, IDS, fixture, mention, sleep, until } from "../helpers/discord-pipeline.js";

/**
 * Slash commands through the whole pipeline: the adapter registers the registry, a command
 * runs in the worker on the same code path as a typed one, and its answer comes back through
 * the interaction (ephemeral where the registry says the answer is private).
 */
describe("Discord slash commands end to end", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E;

  beforeEach(async () => {
    e2e = await DiscordE2E.start();
    await e2e.startPipeline();
    await until(() => {
      if (e2e.fake.applicationCommands.size !== COMMAND_MENU.length) throw new Error("commands not registered yet");
    });
  });
  afterEach(() => e2e.close());

  it("/status, /usage and /new work in a guild channel without a mention; /usage only for the asker", async () => {
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000801", "hello"));
    await e2e.waitForSent(1, IDS.textChannel);

    const status = e2e.fake.dispatchSlashCommand(IDS.textChannel, "status");
    const statusAnswer = await until(() => {
      const found = e2e.fake.interactionResponses.find((response) => response.interactionId === status && response.content !== "");
      if (!found) throw new Error("no answer yet");
      return found;
    });
    expect(statusAnswer).toMatchObject({ original: true, ephemeral: false, content: expect.stringMatching(/^Model: .*\nContext: /) });

    const usage = e2e.fake.dispatchSlashCommand(IDS.textChannel, "usage");
    const usageAnswer = await until(() => {
      const found = e2e.fake.interactionResponses.find((response) => response.interactionId === usage && response.content !== "");
      if (!found) throw new Error("no answer yet");
      return found;
    });
    expect(usageAnswer).toMatchObject({ ephemeral: true, userId: IDS.user, content: expect.stringMatching(/^Tokens in: /) });

    const fresh = e2e.fake.dispatchSlashCommand(IDS.textChannel, "new");
    await until(() => {
      if (!e2e.fake.interactionResponses.some((response) => response.interactionId === fresh && response.content === "Started a new conversation. The previous one is archived.")) throw new Error("no answer yet");
    });
    // A refusal (a chat-wide setting changed by someone who is not an admin) goes to the asker alone.
    const zone = e2e.fake.dispatchSlashCommand(IDS.textChannel, "timezone", "Europe/Berlin");
    const refusal = await until(() => {
      const found = e2e.fake.interactionResponses.find((response) => response.interactionId === zone && response.content !== "");
      if (!found) throw new Error("no answer yet");
      return found;
    });
    expect(refusal).toMatchObject({ ephemeral: true, content: "Only an admin can change the time zone of a group." });
    // Every command was acknowledged within Discord's 3 s; no answer went to the channel as a message.
    expect(e2e.fake.interactionCallbacks.map((callback) => [callback.type, callback.flags, callback.late])).toEqual([[5, 0, false], [5, 64, false], [5, 0, false], [5, 0, false]]);
    expect(e2e.sent(IDS.textChannel)).toHaveLength(1);
  });
});

describe("Discord: the bot admins' /budget and /pair as slash commands", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E;
  afterEach(() => e2e.close());

  /** The first non-empty answer shown for an interaction. */
  const answerTo = (interactionId: string) => until(() => {
    const found = e2e.fake.interactionResponses.find((response) => response.interactionId === interactionId && response.content !== "");
    if (!found) throw new Error("no answer yet");
    return found;
  });

  it("an admin approves a stranger's pairing code and reads a budget, privately; anyone else is refused privately", async () => {
    // Bob (IDS.otherUser) is an admin; Ada (IDS.user) is a stranger who must pair first.
    e2e = await DiscordE2E.start({ ALLOWED_DISCORD_USERS: IDS.otherUser, ADMIN_DISCORD_USERS: IDS.otherUser });
    await e2e.startPipeline();
    await until(() => expect(e2e.fake.applicationCommands.size).toBe(COMMAND_MENU.length));
    e2e.fake.dispatchMessage(fixture("dm", { id: "600000000000000811", content: "hello?" }));
    const [notice] = await e2e.waitForSent(1, IDS.dmChannel);
    const code = /pairing code is ([A-Z0-9]{8})/.exec(String(notice?.content))?.[1] ?? "";
    expect(code).not.toBe("");

    const pair = e2e.fake.dispatchSlashCommand(IDS.textChannel, "pair", { subcommand: "approve", values: { code } }, OTHER_USER);
    expect(await answerTo(pair)).toMatchObject({ ephemeral: true, userId: IDS.otherUser, content: `Approved Ada L. (discord user ${IDS.user}). They can talk to me now.` });
    const budget = e2e.fake.dispatchSlashCommand(IDS.textChannel, "budget", { values: { chat: "here" } }, OTHER_USER);
    expect(await answerTo(budget)).toMatchObject({ ephemeral: true, userId: IDS.otherUser, content: expect.stringMatching(new RegExp(`^Budget of chat dc:${IDS.textChannel}:`)) });

    // Ada, now paired, is no admin: refused, to her alone.
    const refused = e2e.fake.dispatchSlashCommand(IDS.textChannel, "budget", { values: { chat: "here", period: "daily", amount: "off" } });
    expect(await answerTo(refused)).toMatchObject({ ephemeral: true, userId: IDS.user, content: "Only an admin can see or change budgets; /usage shows yours." });
    expect(e2e.fake.interactionCallbacks.map((callback) => [callback.type, callback.flags, callback.late])).toEqual([[5, 64, false], [5, 64, false], [5, 64, false]]);
    expect(e2e.sent(IDS.textChannel)).toEqual([]);
  });
});

describe("Discord: a slash command's follow-up whose answer is lost", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E;
  afterEach(() => e2e.close());

  /** A persona long enough that showing it (`/persona`) takes two messages: the deferred reply, then a follow-up. */
  const LONG = `${"alpha ".repeat(300)}${"omega ".repeat(300)}`.trim();
  const LAST_LINE = "Set one with /persona";

  it.each([
    ["its answer never came (discord.js's 15 s timeout, then its retry)", 20_000, undefined],
    ["a 502 came after it acted (discord.js retries a 5xx)", 0, 502],
  ])("is not posted again when Discord acted and %s; the chat goes on", { timeout: 120_000 }, async (_name, holdMs, answeredWith) => {
    e2e = await DiscordE2E.start({ LONGHAUL_CONFIG_FILE: writeConfigFile(`personas:\n  long: "${LONG}"\n`) });
    await e2e.startPipeline();
    await until(() => expect(e2e.fake.applicationCommands.size).toBe(COMMAND_MENU.length));
    const shown = (id: string) => e2e.fake.interactionResponses.filter((response) => response.interactionId === id && response.content !== "");
    const chosen = e2e.fake.dispatchSlashCommand(IDS.dmChannel, "persona", "long");
    await until(() => expect(shown(chosen).map((response) => response.content)).toEqual(["Persona set: long."]));

    // The follow-up reaches Discord, which posts it; the answer is lost or a 5xx.
    const followUp = (request: RecordedRequest) => request.method === "POST" && request.path.startsWith("/webhooks/") && String((request.body as Payload | undefined)?.content ?? "").includes(LAST_LINE);
    e2e.fake.holdAnswer(followUp, holdMs, answeredWith);
    const asked = e2e.fake.dispatchSlashCommand(IDS.dmChannel, "persona");
    await until(() => expect(e2e.fake.requests.some(followUp)).toBe(true));
    // The session's next answer comes after it.
    const status = e2e.fake.dispatchSlashCommand(IDS.dmChannel, "status");
    await until(() => expect(shown(status)).toHaveLength(1), 90_000);
    expect(shown(status)[0]?.content).toMatch(/^Model: /);
    await sleep(1_000);
    expect(shown(asked).map((response) => response.content.includes(LAST_LINE))).toEqual([false, true]);
    expect(e2e.fake.botMessages(IDS.dmChannel).filter((message) => String(message.content).includes(LAST_LINE))).toHaveLength(1);
    // Counted as a part whose outcome is unknown (longhaul_reply_parts_unconfirmed_total).
    expect(e2e.pipelines[0]!.logs.lines.join("")).toMatch(/"part":1,.*"msg":"reply-part-unconfirmed"/);
  });
});
