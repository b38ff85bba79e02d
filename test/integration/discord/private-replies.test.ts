/**
 * A reply for one person alone (the wrong presser of an approval button, /usage…) never becomes
 * a channel message (issue 30, Deliver 5): a press the ingress refuses is answered at once with
 * an ephemeral message; a private reply whose interaction can no longer carry it (the gateway
 * restarted, the token is too old, Discord answers 404) is dropped, while a public one still
 * goes to the channel.
 */
import { describe, expect, it, vi } from "vitest";
import type { DiscordAdapter } from "../../../src/adapters/discord/index.js";
import { COMMAND_MENU } from "../../../src/core/commands.js";
import { IDS, OTHER_USER } from "../../fakes/fake-discord.js";
import { reply, sleep, useAdapterHarness } from "./harness.js";

vi.setConfig({ testTimeout: 30_000 });
const eventually = (check: () => void): Promise<void> => vi.waitFor(check, { timeout: 5_000 });
const REFUSAL = "Only Ada L., who asked, or an admin can answer this request.";

describe("Discord: private replies stay private", () => {
  const h = useAdapterHarness();

  async function approvalRequest(adapter: DiscordAdapter): Promise<string> {
    await adapter.send(reply("Run write_file?", { actions: [{ id: "approve:1", label: "Approve" }, { id: "deny:1", label: "Deny", style: "danger" }] }), { fromPart: 0, onPartSent: async () => undefined });
    return String(h.fake.botMessages(IDS.textChannel).at(-1)?.id);
  }

  /** The wrong person presses Approve; the press is stored and acknowledged (the ingress could not tell). */
  async function wrongPress(adapter: DiscordAdapter): Promise<string> {
    const pressId = h.fake.dispatchButtonPress(IDS.textChannel, await approvalRequest(adapter), "approve:1", OTHER_USER);
    await eventually(() => expect(h.fake.interactionCallbacks).toEqual([{ id: pressId, type: 6, flags: 0, late: false }]));
    return pressId;
  }

  /** Sends the refusal for the press; → the parts reported sent. */
  async function sendRefusal(adapter: DiscordAdapter, pressId: string): Promise<Array<[number, boolean]>> {
    const parts: Array<[number, boolean]> = [];
    await adapter.send(reply(REFUSAL, { replyId: `refusal-${pressId}`, inReplyTo: [`ix:${pressId}`], kind: "notice", private: true }), { fromPart: 0, onPartSent: async (index, sent) => void parts.push([index, sent.last]) });
    return parts;
  }

  /** Only the approval request is in the channel, its buttons still there. */
  const onlyTheRequest = () => expect(h.fake.botMessages(IDS.textChannel).map((message) => [message.content, (message.components as unknown[]).length])).toEqual([["Run write_file?", 1]]);

  it("a press the ingress refuses is answered at once, ephemeral, to the presser alone; nothing else happens", async () => {
    const adapter = await h.startAdapter();
    const requestId = await approvalRequest(adapter);
    h.ingress.script.push({ status: "refused", notice: REFUSAL });
    const pressId = h.fake.dispatchButtonPress(IDS.textChannel, requestId, "approve:1", OTHER_USER);
    await eventually(() => expect(h.fake.interactionCallbacks).toEqual([{ id: pressId, type: 4, flags: 64, late: false }]));
    expect(h.fake.interactionResponses).toMatchObject([{ interactionId: pressId, ephemeral: true, userId: OTHER_USER.id, content: REFUSAL }]);
    await sleep(200);
    onlyTheRequest();
  });

  for (const turnedAway of [{ status: "denied", notice: "You are not on this bot's list; ask its admin." }, { status: "rate-limited", notice: "Slow down: try again in a minute." }] as const) {
    it(`a press turned away (${turnedAway.status}) is answered at once with its notice, ephemeral, to the presser alone`, async () => {
      const adapter = await h.startAdapter();
      const requestId = await approvalRequest(adapter);
      h.ingress.script.push(turnedAway);
      const pressId = h.fake.dispatchButtonPress(IDS.textChannel, requestId, "approve:1", OTHER_USER);
      await eventually(() => expect(h.fake.interactionCallbacks).toEqual([{ id: pressId, type: 4, flags: 64, late: false }]));
      expect(h.fake.interactionResponses).toMatchObject([{ interactionId: pressId, ephemeral: true, userId: OTHER_USER.id, content: turnedAway.notice }]);
      await sleep(200);
      onlyTheRequest();
    });
  }

  it("the gateway restarted between the press and the refusal: dropped, not posted to the channel", async () => {
    const pressId = await wrongPress(await h.startAdapter());
    const restarted = await h.startAdapter();
    expect(await sendRefusal(restarted, pressId)).toEqual([[0, true]]);
    onlyTheRequest();
    expect(h.fake.interactionResponses).toEqual([]);
  });

  it("the press's token expired (Discord answers 401): dropped, not posted to the channel", async () => {
    const adapter = await h.startAdapter();
    const pressId = await wrongPress(adapter);
    h.fake.ageInteraction(pressId, 16 * 60_000);
    expect(await sendRefusal(adapter, pressId)).toEqual([[0, true]]);
    expect(h.fake.requestsTo("POST", /^\/webhooks\//).map((request) => request.status)).toEqual([401]);
    onlyTheRequest();
    expect(h.fake.interactionResponses).toEqual([]);
  });

  it("Discord answers 404 on the interaction's webhook: a private reply is dropped, a public one goes to the channel", async () => {
    const adapter = await h.startAdapter();
    const pressId = await wrongPress(adapter);
    h.fake.forgetInteraction(pressId);
    expect(await sendRefusal(adapter, pressId)).toEqual([[0, true]]);
    expect(h.fake.requestsTo("POST", /^\/webhooks\//).map((request) => request.status)).toEqual([404]);
    onlyTheRequest();

    // The same for a private slash-command answer; a public one falls back to the channel.
    await vi.waitFor(() => expect(h.fake.applicationCommands.size).toBe(COMMAND_MENU.length), { timeout: 10_000 });
    const usage = h.fake.dispatchSlashCommand(IDS.textChannel, "usage");
    const status = h.fake.dispatchSlashCommand(IDS.textChannel, "status");
    await eventually(() => expect(h.fake.interactionCallbacks.filter((callback) => callback.type === 5)).toHaveLength(2));
    h.fake.forgetInteraction(usage);
    h.fake.forgetInteraction(status);
    await adapter.send(reply("Tokens in: 12k", { replyId: "u#1", inReplyTo: [`ix:${usage}`], kind: "notice", private: true }), { fromPart: 0, onPartSent: async () => undefined });
    await adapter.send(reply("Model: test-model", { replyId: "s#1", inReplyTo: [`ix:${status}`], kind: "notice" }), { fromPart: 0, onPartSent: async () => undefined });
    expect(h.fake.botMessages(IDS.textChannel).map((message) => message.content)).toEqual(["Run write_file?", "", "Model: test-model"]);
  });
});
