import { describe, expect, it, vi } from "vitest";
import { discordCommands } from "../../../src/adapters/discord/commands.js";
import { COMMAND_MENU } from "../../../src/core/commands.js";
import { HUMAN_USER, IDS, OTHER_USER, type Payload } from "../../fakes/fake-discord.js";
import { reply, sleep, useAdapterHarness } from "./harness.js";

vi.setConfig({ testTimeout: 30_000 });
const eventually = (check: () => void): Promise<void> => vi.waitFor(check, { timeout: 5_000 });

/**
 * Slash commands from the command registry against the fake Discord: diff-synced global
 * commands, interactions deferred within 3 s, answered through the interaction (ephemeral where
 * the answer is private), and the 15-minute token.
 */
describe("DiscordAdapter: slash commands", () => {
  const h = useAdapterHarness();
  const commandRequests = () => h.fake.requests.filter((request) => request.path.startsWith(`/applications/${IDS.application}/commands`));
  const synced = () => vi.waitFor(() => expect(h.fake.applicationCommands.size).toBe(COMMAND_MENU.length), { timeout: 10_000 });

  it("registers the registry as global commands once, then changes only what differs", async () => {
    const adapter = await h.startAdapter();
    await synced();
    await eventually(() => expect(commandRequests().filter((request) => request.method === "POST")).toHaveLength(COMMAND_MENU.length));
    const persona = h.fake.applicationCommands.get("persona");
    // /persona: for group admins (Manage Server) and DMs; /export only in the bot's DM; /compress takes a text.
    expect(persona).toMatchObject({ default_member_permissions: "32", contexts: [0, 1] });
    expect(h.fake.applicationCommands.get("export")).toMatchObject({ contexts: [1] });
    expect(h.fake.applicationCommands.get("compress")?.options).toEqual([{ type: 3, name: "text", description: "What the summary should focus on", required: false }]);
    // The bot admins' /budget and /pair: in DMs, and in servers for Manage Server; named options, /pair approve a subcommand.
    expect(h.fake.applicationCommands.get("budget")).toMatchObject({ default_member_permissions: "32", contexts: [0, 1] });
    expect((h.fake.applicationCommands.get("budget")?.options as Payload[]).map((option) => [option.name, option.type, option.required, option.choices])).toEqual([
      ["chat", 3, true, undefined], ["period", 3, false, [{ name: "daily", value: "daily" }, { name: "monthly", value: "monthly" }]], ["amount", 3, false, undefined],
    ]);
    expect(h.fake.applicationCommands.get("pair")).toMatchObject({
      default_member_permissions: "32", contexts: [0, 1],
      options: [{ type: 1, name: "approve", options: [{ type: 3, name: "code", required: true }] }],
    });
    await adapter.stop();

    // Meanwhile: one description changed by hand, one stale command left by an older version.
    const status = h.fake.applicationCommands.get("status")!;
    h.fake.applicationCommands.set("status", { ...status, description: "old text" });
    h.fake.applicationCommands.set("oldcommand", { id: "900000000000000001", name: "oldcommand", description: "gone", type: 1, options: [] });
    const before = commandRequests().length;
    await h.startAdapter();
    await eventually(() => expect(h.fake.applicationCommands.has("oldcommand")).toBe(false));
    await eventually(() => expect(h.fake.applicationCommands.get("status")?.description).toBe("Model, context use and session age"));
    await sleep(200);
    expect(commandRequests().slice(before).map((request) => `${request.method} ${request.path.replace(/\d{10,}/g, ":id")}`)).toEqual([
      "GET /applications/:id/commands", "DELETE /applications/:id/commands/:id", "PATCH /applications/:id/commands/:id",
    ]);
  });

  it("stays within Discord's limits: the registry is at most 100 commands, each accepted by the fake's checks", () => {
    const commands = discordCommands();
    expect(commands.length).toBeLessThanOrEqual(100);
    expect(commands.map((command) => command.name)).toEqual(COMMAND_MENU.map((spec) => spec.name));
  });

  it("/status in a guild channel without a mention: deferred within 3 s, submitted as the typed command, answered by editing the deferred reply", async () => {
    const adapter = await h.startAdapter();
    await synced();
    const interactionId = h.fake.dispatchSlashCommand(IDS.textChannel, "status");
    await eventually(() => expect(h.ingress.submitted).toHaveLength(1));
    expect(h.ingress.submitted[0]).toMatchObject({
      platform: "discord", sessionKey: `dc:${IDS.textChannel}`, messageId: `ix:${interactionId}`, chatId: IDS.textChannel, userId: IDS.user, chatType: "group", text: "/status",
    });
    // Stored first, then acknowledged (deferred), within Discord's 3 s.
    await eventually(() => expect(h.fake.interactionCallbacks).toEqual([{ id: interactionId, type: 5, flags: 0, late: false }]));

    const sent: number[] = [];
    await adapter.send(reply("Model: test-model", { inReplyTo: [`ix:${interactionId}`], target: { platform: "discord", chatId: IDS.textChannel, replyToMessageId: `ix:${interactionId}` }, kind: "notice" }), {
      fromPart: 0, onPartSent: async (index) => void sent.push(index),
    });
    expect(sent).toEqual([0]);
    expect(h.fake.interactionResponses).toMatchObject([{ interactionId, original: true, ephemeral: false, content: "Model: test-model", deleted: false }]);
    // Not sent again as a channel message.
    expect(h.fake.sentMessages).toEqual([]);
  });

  it("/usage is private: deferred ephemeral, answered only to the person who asked; a text option arrives as the command's text", async () => {
    const adapter = await h.startAdapter();
    await synced();
    const usage = h.fake.dispatchSlashCommand(IDS.textChannel, "usage");
    const compress = h.fake.dispatchSlashCommand(IDS.textChannel, "compress", "  the budget talk ", OTHER_USER);
    await vi.waitFor(() => expect(h.ingress.submitted).toHaveLength(2), { timeout: 5_000 });
    expect(h.ingress.submitted.map((message) => [message.text, message.userId])).toEqual([["/usage", HUMAN_USER.id], ["/compress the budget talk", OTHER_USER.id]]);
    await eventually(() => expect(h.fake.interactionCallbacks.map((callback) => [callback.id, callback.type, callback.flags])).toEqual([[usage, 5, 64], [compress, 5, 0]]));
    await adapter.send(reply("Tokens in: 12k", { inReplyTo: [`ix:${usage}`], kind: "notice", private: true }), { fromPart: 0, onPartSent: async () => undefined });
    expect(h.fake.interactionResponses[0]).toMatchObject({ interactionId: usage, ephemeral: true, content: "Tokens in: 12k", userId: HUMAN_USER.id });
    // An ephemeral answer is no message of the channel.
    expect(h.fake.botMessages(IDS.textChannel).map((message) => message.content)).toEqual([""]);
  });

  it("/budget and /pair: their options arrive as the typed command's words, deferred ephemeral (budgets and pairing codes are private)", async () => {
    const adapter = await h.startAdapter();
    await synced();
    const budget = h.fake.dispatchSlashCommand(IDS.textChannel, "budget", { values: { chat: "here", period: "daily", amount: "$5" } });
    const look = h.fake.dispatchSlashCommand(IDS.dmChannel, "budget", { values: { chat: "user:dc:400000000000000002" } });
    const pair = h.fake.dispatchSlashCommand(IDS.dmChannel, "pair", { subcommand: "approve", values: { code: " K7Q2MX " } });
    await eventually(() => expect(h.ingress.submitted.map((message) => message.text)).toEqual(["/budget here daily $5", "/budget user:dc:400000000000000002", "/pair approve K7Q2MX"]));
    await eventually(() => expect(h.fake.interactionCallbacks.map((callback) => [callback.id, callback.type, callback.flags, callback.late])).toEqual([
      [budget, 5, 64, false], [look, 5, 64, false], [pair, 5, 64, false],
    ]));
    await adapter.send(reply("The daily budget of chat dc:1 is now $5.", { inReplyTo: [`ix:${budget}`], kind: "notice", private: true }), { fromPart: 0, onPartSent: async () => undefined });
    expect(h.fake.interactionResponses[0]).toMatchObject({ interactionId: budget, original: true, ephemeral: true, content: "The daily budget of chat dc:1 is now $5." });
    expect(h.fake.botMessages(IDS.textChannel)).toEqual([]);
    // Discord's client sends only what a command declares: a value outside the choices, or /pair without its code, never arrives.
    expect(() => h.fake.dispatchSlashCommand(IDS.textChannel, "budget", { values: { chat: "here", period: "weekly" } })).toThrow(/no choice/);
    expect(() => h.fake.dispatchSlashCommand(IDS.textChannel, "pair", { subcommand: "approve" })).toThrow(/needs code/);
  });

  it("a refusal to a public command goes privately: the public 'thinking…' is deleted and an ephemeral follow-up answers", async () => {
    const adapter = await h.startAdapter();
    await synced();
    const id = h.fake.dispatchSlashCommand(IDS.textChannel, "model", "gpt-big");
    await eventually(() => expect(h.fake.interactionCallbacks).toHaveLength(1));
    await adapter.send(reply("Only an admin can change the model of a group.", { inReplyTo: [`ix:${id}`], kind: "notice", private: true }), { fromPart: 0, onPartSent: async () => undefined });
    expect(h.fake.interactionResponses.map((response) => [response.original, response.deleted, response.ephemeral, response.content])).toEqual([
      [true, true, false, ""], [false, false, true, "Only an admin can change the model of a group."],
    ]);
    expect(h.fake.botMessages(IDS.textChannel)).toEqual([]);
  });

  it("a long answer: part 1 edits the deferred reply, the rest are follow-ups; a denied command is answered privately by the adapter", async () => {
    const adapter = await h.startAdapter();
    await synced();
    const id = h.fake.dispatchSlashCommand(IDS.textChannel, "context");
    await eventually(() => expect(h.fake.interactionCallbacks).toHaveLength(1));
    const long = Array.from({ length: 60 }, (_, index) => `line ${index} ${"x".repeat(50)}`).join("\n");
    const parts: number[] = [];
    await adapter.send(reply(long, { inReplyTo: [`ix:${id}`], kind: "notice" }), { fromPart: 0, onPartSent: async (index) => void parts.push(index) });
    expect(parts).toEqual([0, 1]);
    expect(h.fake.interactionResponses.map((response) => response.original)).toEqual([true, false]);

    h.ingress.script.push({ status: "denied", notice: "You are not paired yet." });
    const denied = h.fake.dispatchSlashCommand(IDS.textChannel, "status");
    await eventually(() => expect(h.fake.interactionResponses.filter((response) => response.interactionId === denied)).toHaveLength(2));
    expect(h.fake.interactionResponses.filter((response) => response.interactionId === denied).map((response) => [response.deleted, response.ephemeral, response.content]))
      .toEqual([[true, false, ""], [false, true, "You are not paired yet."]]);
  });

  it("after the token's 15 minutes the answer goes to the channel as a message instead", async () => {
    const adapter = await h.startAdapter();
    await synced();
    const id = h.fake.dispatchSlashCommand(IDS.textChannel, "compress");
    await eventually(() => expect(h.fake.interactionCallbacks).toHaveLength(1));
    h.fake.ageInteraction(id, 16 * 60_000);
    await adapter.send(reply("Compacted.", { inReplyTo: [`ix:${id}`], target: { platform: "discord", chatId: IDS.textChannel, replyToMessageId: `ix:${id}` }, kind: "notice" }), {
      fromPart: 0, onPartSent: async () => undefined,
    });
    const refused = h.fake.requestsTo("PATCH", /^\/webhooks\//);
    expect(refused.map((request) => request.status)).toEqual([401]);
    expect(h.fake.sentMessages.map((message) => [message.content, message.message_reference])).toEqual([["Compacted.", undefined]]);
  });

  it("a slash command in the bot's DM is a private chat's message", async () => {
    await h.startAdapter();
    await synced();
    h.fake.dispatchSlashCommand(IDS.dmChannel, "export");
    await eventually(() => expect(h.ingress.submitted).toHaveLength(1));
    expect(h.ingress.submitted[0]).toMatchObject({ sessionKey: `dc:dm:${IDS.user}`, chatType: "private", text: "/export" });
    expect(() => h.fake.dispatchSlashCommand(IDS.textChannel, "export")).toThrow(/not offered in guilds/);
  });
});
