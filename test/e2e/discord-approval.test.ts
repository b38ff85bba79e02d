/**
 * Tool approval on Discord end to end: the request goes out with buttons (message components),
 * a press arrives as INTERACTION_CREATE through the real discord.js adapter, is acknowledged
 * within Discord's 3 s (deferred update), goes through the ingress, and the request message is
 * edited to the outcome with its buttons removed.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { textOf } from "../fakes/fake-llm.js";
import type { Payload } from "../fakes/fake-discord.js";
import { HUMAN_USER, OTHER_USER } from "../fakes/fake-discord.js";
import { DiscordE2E, E2E_TIMEOUT, IDS, mention, sleep, until } from "../helpers/discord-pipeline.js";
import { FILESYSTEM, assertCallsAnswered, writeConfigFile } from "../helpers/mcp.js";
import { createRedis } from "../../src/queue/index.js";
import { SessionStore } from "../../src/session/store.js";

describe("Discord: tool approval with buttons", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E;
  let root: string;

  beforeEach(async () => {
    root = mkdtempSync(join(tmpdir(), "lh-dc-approval-"));
    const file = writeConfigFile({ mcp: { servers: { files: { command: process.execPath, args: [FILESYSTEM, root], approval: "always" } } } });
    e2e = await DiscordE2E.start({ LONGHAUL_CONFIG_FILE: file });
    await e2e.startPipeline();
  });
  afterEach(() => e2e.close());

  /** Ada's message `messageId` asks for a write; returns what was sent, its buttons and the message, still waiting for a press. */
  async function waitingRequest(messageId: string) {
    e2e.llm.setHandler(() => ({ toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "no.txt"), content: "x" } }] }));
    e2e.fake.dispatchMessage(mention(IDS.textChannel, messageId, "save a note"));
    const [request] = await e2e.waitForSent(1, IDS.textChannel);
    const buttons = ((request?.components as Payload[])[0]!.components as Payload[]);
    const created = e2e.fake.botMessages(IDS.textChannel)[0]!;
    return { request, buttons, created };
  }

  it("asks with buttons, acknowledges the press in time, edits the request to the outcome, and answers", async () => {
    e2e.llm.setHandler((request) => request.body.messages.at(-1)?.role === "tool"
      ? { text: `result: ${textOf(request.body.messages.at(-1)?.content)}` }
      : { toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "dc.txt"), content: "from discord" } }] });
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000701", "save a note"));
    const [request] = await e2e.waitForSent(1, IDS.textChannel);
    const row = (request?.components as Payload[])[0]!;
    const buttons = row.components as Payload[];
    expect(buttons.map((button) => [button.label, button.style])).toEqual([["Approve", 1], ["Deny", 4]]);
    const created = e2e.fake.botMessages(IDS.textChannel)[0]!;

    e2e.fake.dispatchButtonPress(IDS.textChannel, String(created.id), String(buttons[0]!.custom_id));
    const sent = await e2e.waitForSent(2, IDS.textChannel);
    expect(sent[1]?.content).toBe(`result: Successfully wrote to ${join(root, "dc.txt")}`);
    expect(readFileSync(join(root, "dc.txt"), "utf8")).toBe("from discord");

    expect(e2e.fake.interactionCallbacks).toEqual([{ id: expect.any(String), type: 6, flags: 0, late: false }]);
    const edits = await until(() => {
      const found = e2e.fake.requestsTo("PATCH", new RegExp(`^/channels/${IDS.textChannel}/messages/${String(created.id)}$`));
      if (found.length === 0) throw new Error("no edit yet");
      return found;
    });
    expect(edits[0]?.status).toBe(200);
    expect(edits[0]?.body).toMatchObject({ content: "✅ Approved by Ada L.: ran `files__write_file`.", components: [] });
    for (const llmRequest of e2e.llm.requests) assertCallsAnswered(llmRequest);
  });

  it("a press on a request answered before /new keeps its outcome: the presser alone is told, the new conversation never sees it", async () => {
    e2e.llm.setHandler((request) => request.body.messages.at(-1)?.role === "tool"
      ? { text: "wrote it" }
      : { toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "old.txt"), content: "before /new" } }] });
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000731", "save a note"));
    const [request] = await e2e.waitForSent(1, IDS.textChannel);
    const approve = String(((request?.components as Payload[])[0]!.components as Payload[])[0]!.custom_id);
    const created = e2e.fake.botMessages(IDS.textChannel)[0]!;
    const shownBefore = structuredClone(created);
    const editsOfRequest = () => e2e.fake.requestsTo("PATCH", new RegExp(`^/channels/${IDS.textChannel}/messages/${String(created.id)}$`));
    e2e.fake.dispatchButtonPress(IDS.textChannel, String(created.id), approve);
    await e2e.waitForSent(2, IDS.textChannel);
    await until(() => expect(editsOfRequest()).toHaveLength(1));
    const outcome = "✅ Approved by Ada L.: ran `files__write_file`.";
    expect(editsOfRequest()[0]?.body).toMatchObject({ content: outcome, components: [] });

    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000732", "/new"));
    const afterNew = await e2e.waitForSent(3, IDS.textChannel);
    expect(afterNew[2]?.content).toBe("Started a new conversation. The previous one is archived.");
    const llmRequests = e2e.llm.requests.length;

    // A press on the old request (a client that still shows its buttons).
    const pressId = e2e.fake.dispatchButtonPress(IDS.textChannel, String(created.id), approve, HUMAN_USER, shownBefore);
    const [answer] = await until(() => {
      const found = e2e.fake.interactionResponses.filter((response) => response.interactionId === pressId);
      if (found.length === 0) throw new Error("no answer yet");
      return found;
    });
    expect(answer).toMatchObject({ ephemeral: true, userId: IDS.user, content: "This request was already answered." });
    await sleep(300);
    // The request still shows who approved it; nothing else went to the channel; no model ran.
    expect(editsOfRequest()).toHaveLength(1);
    expect(e2e.fake.botMessages(IDS.textChannel).find((message) => message.id === created.id)?.content).toBe(outcome);
    expect(e2e.sent(IDS.textChannel)).toHaveLength(3);
    expect(e2e.llm.requests).toHaveLength(llmRequests);

    e2e.llm.setHandler(() => ({ text: "fresh" }));
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000733", "hello again"));
    await e2e.waitForSent(4, IDS.textChannel);
    expect(JSON.stringify(e2e.llm.requests.at(-1)?.body.messages)).not.toContain("write_file");
  });

  it("answers the wrong presser privately (an ephemeral follow-up), not in the channel; the request keeps waiting", async () => {
    const { buttons, created } = await waitingRequest("600000000000000711");

    const pressId = e2e.fake.dispatchButtonPress(IDS.textChannel, String(created.id), String(buttons[0]!.custom_id), OTHER_USER);
    const [answer] = await until(() => {
      const found = e2e.fake.interactionResponses.filter((response) => response.interactionId === pressId);
      if (found.length === 0) throw new Error("no answer yet");
      return found;
    });
    expect(answer).toMatchObject({ ephemeral: true, userId: OTHER_USER.id, content: expect.stringMatching(/^Only Ada.*, who asked, or an admin can answer this request\.$/) });
    await sleep(300);
    // Nothing public: the channel holds only the request, still with its buttons.
    expect(e2e.fake.botMessages(IDS.textChannel).map((message) => (message.components as Payload[]).length)).toEqual([1]);
  });

  it("the wrong presser is answered privately even when the gateway restarts before any worker sees the press", async () => {
    const { request, buttons, created } = await waitingRequest("600000000000000721");
    await e2e.pipelines[0]!.close();

    // A gateway without a worker takes the press, then restarts; the worker comes back after.
    const gatewayOnly = await e2e.startPipeline({ worker: false });
    const pressId = e2e.fake.dispatchButtonPress(IDS.textChannel, String(created.id), String(buttons[0]!.custom_id), OTHER_USER);
    await until(() => expect(e2e.fake.interactionCallbacks.filter((callback) => callback.id === pressId)).toHaveLength(1));
    await gatewayOnly.close();
    await e2e.startPipeline();
    const redis = createRedis(e2e.config.REDIS_URL ?? "");
    try {
      // The worker has nothing left of this chat to run or deliver (a stored press would be run and answered).
      const store = new SessionStore(redis, e2e.config.REDIS_PREFIX);
      await until(async () => expect(await store.sessionWork(`dc:${IDS.textChannel}`)).toMatchObject({ inbox: 0, pending: 0, outbox: 0, turnRunning: false, deliveryRunning: false }));
    } finally {
      redis.disconnect();
    }
    await sleep(300);

    expect(e2e.fake.interactionCallbacks.filter((callback) => callback.id === pressId)).toEqual([{ id: pressId, type: 4, flags: 64, late: false }]);
    expect(e2e.fake.interactionResponses.filter((response) => response.interactionId === pressId)).toMatchObject([
      { ephemeral: true, userId: OTHER_USER.id, content: expect.stringMatching(/^Only Ada.*, who asked, or an admin can answer this request\.$/) },
    ]);
    expect(e2e.fake.botMessages(IDS.textChannel).map((message) => [message.content, (message.components as Payload[]).length])).toEqual([[request?.content, 1]]);
  });
});
