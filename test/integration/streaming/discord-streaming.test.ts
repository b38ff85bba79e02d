/**
 * Live previews on Discord (issue 15), end to end: the real discord.js adapter and pipeline,
 * the fake Discord recording every POST, PATCH and DELETE with its 2,000-character limit and
 * per-channel buckets, the fake LLM streaming slowly. The channel must end with exactly the
 * committed answer, split past 2,000 characters, sent as new messages that notify while the
 * silent preview is deleted (issue 30).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Payload } from "../../fakes/fake-discord.js";
import { closeExpectingOnlyAskerPinged, DiscordE2E, E2E_TIMEOUT, IDS, mention, sleep, until } from "../../helpers/discord-pipeline.js";
import { longAnswer } from "../../helpers/streaming.js";

const squash = (text: string) => text.replace(/\s+/g, "");
const contents = (messages: Payload[]) => messages.map((message) => String(message.content));
const EDIT_PATH = /^\/channels\/(\d+)\/messages\/(\d+)$/;

describe("discord streaming", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E | undefined;
  afterEach(async () => {
    await closeExpectingOnlyAskerPinged(e2e);
    e2e = undefined;
  });

  for (const mode of ["progress", "partial"] as const) {
    it(`${mode}: a 4,500-character answer ends as exactly the answer in 3 messages that replaced the silent preview`, async () => {
      e2e = await DiscordE2E.start({ DISCORD_STREAMING: mode });
      await e2e.startPipeline();
      const answer = longAnswer(4_500);
      e2e.llm.enqueue({ text: answer, tokensPerSecond: 400 });
      e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000777", "write a lot"));

      await until(() => {
        const shown = contents(e2e!.fake.botMessages(IDS.textChannel));
        expect(shown).toHaveLength(3);
        expect(squash(shown.join(""))).toBe(squash(answer));
      }, 60_000);
      await sleep(2_000);
      const shown = e2e.fake.botMessages(IDS.textChannel);
      expect(squash(contents(shown).join(""))).toBe(squash(answer));
      expect(shown.every((message) => [...String(message.content)].length <= 2_000 && !message.edited_timestamp)).toBe(true);
      const posts = e2e.fake.requestsTo("POST", /^\/channels\/\d+\/messages$/).filter((request) => request.status === 200);
      // The silent preview, then the 3 parts of the answer.
      expect(posts).toHaveLength(4);
      const preview = posts[0]!.body as Payload;
      expect(preview).toMatchObject({ flags: 4096, allowed_mentions: { parse: [], replied_user: false } });
      if (mode === "progress") expect(String(preview.content)).toMatch(/^(💭|✍️)/u);
      const previewId = String(e2e.fake.notifications[0]?.messageId);
      const edits = e2e.fake.requestsTo("PATCH", EDIT_PATH).filter((request) => request.status === 200);
      expect(edits.every((request) => EDIT_PATH.exec(request.path)?.[2] === previewId)).toBe(true);
      expect(e2e.fake.requestsTo("DELETE", EDIT_PATH).map((request) => EDIT_PATH.exec(request.path)?.[2])).toEqual([previewId]);
      expect(new Set(posts.map((request) => String((request.body as Payload).content))).size).toBe(4);
      // Who was notified: nobody by the status; the asker by the answer's first part (a reply that pings).
      expect(e2e.fake.notifications.map((entry) => entry.userIds)).toEqual([[], [IDS.user], [], []]);
    });
  }

  it("a status whose POST Discord performed at once but answered only after its 5 s deadline: the channel ends with the final alone", async () => {
    e2e = await DiscordE2E.start({ DISCORD_STREAMING: "progress" });
    await e2e.startPipeline();
    const answer = Array.from({ length: 20 }, (_, index) => `word${index}`).join(" ");
    e2e.llm.enqueue({ text: answer, tokensPerSecond: 10 });
    const isStatusPost = (request: { method: string; path: string; body: unknown }) =>
      request.method === "POST" && /^\/channels\/\d+\/messages$/.test(request.path) && (Number((request.body as Payload | undefined)?.flags ?? 0) & 4096) !== 0;
    e2e.fake.holdAnswer(isStatusPost, 8_000);
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000888", "go"));

    await until(() => expect(e2e!.fake.lateAnswers).toHaveLength(1), 30_000);
    await until(() => expect(contents(e2e!.fake.botMessages(IDS.textChannel))).toEqual([answer]), 30_000);
    await sleep(2_000);
    expect(contents(e2e.fake.botMessages(IDS.textChannel))).toEqual([answer]);
    // The asker was notified by the answer alone.
    expect(e2e.fake.notifications.filter((entry) => entry.userIds.length > 0).map((entry) => entry.userIds)).toEqual([[IDS.user]]);
  });

  it("a preview deleted by a moderator: the final is posted as a new message, once", async () => {
    e2e = await DiscordE2E.start({ DISCORD_STREAMING: "partial" });
    await e2e.startPipeline();
    const answer = Array.from({ length: 80 }, (_, index) => `word${index}`).join(" ");
    e2e.llm.enqueue({ text: answer, tokensPerSecond: 25 });
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000778", "go"));
    const preview = await until(() => {
      const found = e2e!.fake.botMessages(IDS.textChannel).find((message) => String(message.content).startsWith("word0"));
      expect(found).toBeTruthy();
      return found!;
    }, 60_000);
    // The preview was a silent reply that pinged nobody (checked here: it is gone at the end).
    expect(preview).toMatchObject({ mention_roles: [], mention_everyone: false, mentions: [], flags: 4096 });
    e2e.fake.deleteByUser(IDS.textChannel, String(preview.id));

    await until(() => expect(contents(e2e!.fake.botMessages(IDS.textChannel))).toEqual([answer]), 60_000);
    await sleep(2_000);
    expect(contents(e2e.fake.botMessages(IDS.textChannel))).toEqual([answer]);
    expect(e2e.fake.botMessages(IDS.textChannel)[0]?.id).not.toBe(preview.id);
    // What is left in the channel pinged as it should (the deleted preview has no stored mentions).
    const pings = e2e.pings().filter((ping) => ping.roles !== undefined);
    expect(pings).toHaveLength(1);
    for (const ping of pings) expect(ping.pinged).toEqual(ping.expected);
    await e2e.close();
    e2e = undefined;
  });
  it("a thread archived mid-stream (edits refused with 50083): the answer is sent, which reopens the thread", async () => {
    e2e = await DiscordE2E.start({ DISCORD_STREAMING: "partial" });
    await e2e.startPipeline();
    const thread = e2e.fake.createThread(IDS.textChannel, "archived mid-turn");
    const threadId = String(thread.id);
    const answer = Array.from({ length: 80 }, (_, index) => `word${index}`).join(" ");
    e2e.llm.enqueue({ text: answer, tokensPerSecond: 25 });
    e2e.fake.dispatchMessage({ channel_id: threadId, content: `<@${IDS.bot}> go` });
    await until(() => expect(e2e!.fake.botMessages(threadId).some((message) => String(message.content).startsWith("word0"))).toBe(true), 60_000);
    e2e.fake.archiveThread(threadId);

    await until(() => expect(contents(e2e!.fake.botMessages(threadId))).toEqual([answer]), 60_000);
    expect(e2e.fake.notifications.filter((entry) => entry.channelId === threadId).map((entry) => entry.userIds)).toEqual([[], [IDS.user]]);
  });
});
