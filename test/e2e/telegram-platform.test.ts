/**
 * Telegram as people use it (issue #12), end to end: the real grammY adapter ↔ the strict fake
 * Bot API over HTTP, the real ingress, queue and worker on Redis, and the fake LLM, which
 * records what the model was shown.
 */
import { request as httpRequest } from "node:http";
import { describe, expect, it } from "vitest";
import { textOf as contentText, lastUserText } from "../fakes/fake-llm.js";
import {
  ADA, DM, GRACE, mentionOf, sleep, textOf, waitUntil, useTelegramE2e,
} from "../helpers/telegram-pipeline.js";

const startE2e = useTelegramE2e();

const OLD_GROUP = { id: -4001, type: "group" as const, title: "Compiler nerds" };
const NEW_GROUP_ID = -1004001;

describe("telegram end to end: the way people use it", () => {
  it("follows a group upgraded to a supergroup: same conversation, still allowed, answered in the new chat", async () => {
    const e2e = await startE2e({ env: { ALLOWED_TELEGRAM_CHATS: String(OLD_GROUP.id) } });
    const { telegram, llm } = e2e;
    const first = "@longhaul_test_bot remember the code word heron";
    telegram.pushMessage({ chat: OLD_GROUP, from: GRACE, text: first, entities: mentionOf(first) });
    await e2e.waitForSent(OLD_GROUP.id, 1);

    telegram.migrateChat(OLD_GROUP.id, NEW_GROUP_ID, OLD_GROUP.title);
    const question = "@longhaul_test_bot what was the code word?";
    telegram.pushMessage({ chat: { id: NEW_GROUP_ID, type: "supergroup", title: OLD_GROUP.title }, from: GRACE, text: question, entities: mentionOf(question) });
    const [answer] = await e2e.waitForSent(NEW_GROUP_ID, 1);
    expect(textOf(answer)).toBe("echo: Grace Hopper: what was the code word?");
    // The model saw the old chat's conversation: the context moved with the chat.
    const lastRequest = llm.requests[llm.requests.length - 1];
    const shown = (lastRequest?.body.messages ?? []).map((message) => contentText(message.content)).join("\n");
    expect(shown).toContain("remember the code word heron");
    expect(e2e.sentTo(OLD_GROUP.id)).toHaveLength(1);
  });

  it("delivers a reply queued for the old id to the new chat", async () => {
    const e2e = await startE2e({ env: { ALLOWED_TELEGRAM_CHATS: String(OLD_GROUP.id) } });
    const { telegram, llm } = e2e;
    const held = llm.hold();
    const text = "@longhaul_test_bot summarise the thread";
    telegram.pushMessage({ chat: OLD_GROUP, from: GRACE, text, entities: mentionOf(text) });
    await llm.waitForRequests(1);
    // The group is upgraded while the model thinks; Telegram refuses the old id from now on.
    telegram.migrateChat(OLD_GROUP.id, NEW_GROUP_ID, OLD_GROUP.title);
    await sleep(300);
    held.release();
    const [answer] = await e2e.waitForSent(NEW_GROUP_ID, 1);
    expect(textOf(answer)).toBe("echo: Grace Hopper: summarise the thread");
    await sleep(500);
    expect(e2e.sentTo(NEW_GROUP_ID)).toHaveLength(1);
  });

  it("keeps the URL of a link Telegram would drop visible (localhost)", async () => {
    const e2e = await startE2e();
    e2e.llm.enqueue("Open the [dashboard](http://localhost:3000/status) and the [docs](https://docs.example.com).");
    e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "where is the dashboard?" });
    const [answer] = await e2e.waitForSent(DM.id, 1);
    // What the user sees, as the fake's model of Telegram parsed it.
    expect(answer?.visible?.text).toContain("http://localhost:3000/status");
    expect(answer?.visible?.entities).toContainEqual(expect.objectContaining({ type: "text_link", url: "https://docs.example.com/" }));
  });

  it("answers a paste that Telegram split into three messages once, as one message", async () => {
    const e2e = await startE2e();
    const { telegram, llm } = e2e;
    const parts = ["alpha ".repeat(666), "beta ".repeat(800), "the end of the paste"].map((body, index) => `${index === 0 ? "Please review:\n" : ""}${body}`);
    llm.enqueue("Reviewed: it looks fine.");
    for (const text of parts) telegram.pushMessage({ chat: DM, from: ADA, text });
    const [answer] = await e2e.waitForSent(DM.id, 1);
    await sleep(2500);
    expect(e2e.sentTo(DM.id)).toHaveLength(1);
    expect(llm.requests).toHaveLength(1);
    // Each part as the adapter reads it (trimmed), joined with a line break.
    expect(lastUserText(llm.requests[0] as never)).toBe(parts.map((part) => part.trim()).join("\n"));
    expect(textOf(answer)).toBe("Reviewed: it looks fine.");
  });

  it("sends one notice for an album without captions", async () => {
    const e2e = await startE2e();
    const photo = [{ file_id: "p", file_unique_id: "u", width: 1, height: 1 }];
    for (let index = 0; index < 5; index++) e2e.telegram.pushMessage({ chat: DM, from: ADA, media_group_id: "album-7", photo });
    await e2e.waitForSent(DM.id, 1);
    await sleep(500);
    expect(e2e.sentTo(DM.id)).toHaveLength(1);
    expect(e2e.llm.requests).toHaveLength(0);
  });

  it("keeps intake alive through a second poller's 409s", async () => {
    const e2e = await startE2e();
    const { telegram } = e2e;
    // A second process polls the same token for a while (a rolling deploy): each of its
    // getUpdates terminates ours with 409, and ours does the same to it.
    const rival = { running: true, conflicts: 0 };
    const rivalLoop = (async () => {
      while (rival.running) {
        const status = await getUpdates(telegram.apiRoot, telegram.token);
        if (status === 409) rival.conflicts++;
      }
    })();
    await waitUntil(() => e2e?.logs.lines.some((line) => line.includes("409 Conflict")) === true, "our poller's 409 log line");
    rival.running = false;
    await rivalLoop;
    telegram.pushMessage({ chat: DM, from: ADA, text: "still listening?" });
    const [answer] = await e2e.waitForSent(DM.id, 1);
    expect(textOf(answer)).toBe("echo: still listening?");
    expect(e2e.adapter.isConnected()).toBe(true);
  });

  it("shows the model what a message replies to and where it was forwarded from", async () => {
    const e2e = await startE2e();
    const { telegram, llm } = e2e;
    const bob = { id: 77, is_bot: false, first_name: "Bob" };
    telegram.pushMessage({ chat: DM, from: ADA, text: "is this right?", reply_to_message: { message_id: 3, date: 1, chat: DM, from: bob, text: "the tests pass on Node 20" } as never });
    await e2e.waitForSent(DM.id, 1);
    telegram.pushMessage({ chat: DM, from: ADA, text: "what do you think?", forward_origin: { type: "user", date: 1, sender_user: bob } });
    await e2e.waitForSent(DM.id, 2);
    const users = llm.requests.map((request) => lastUserText(request));
    expect(users[0]).toContain("Bob");
    expect(users[0]).toContain("> the tests pass on Node 20");
    expect(users[1]).toContain("[forwarded from Bob]");
  });
});

/** One long poll of another process on the same token → its HTTP status. */
function getUpdates(apiRoot: string, token: string): Promise<number> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ timeout: 1, offset: -1 });
    const request = httpRequest(`${apiRoot}/bot${token}/getUpdates`, { method: "POST", headers: { "content-type": "application/json", "content-length": String(body.length) }, agent: false }, (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
    });
    request.on("error", () => resolve(0));
    request.end(body);
  });
}
