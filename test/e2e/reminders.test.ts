/**
 * "Remind me in 2 s" end to end on each platform: the real adapter against its fake platform (or
 * the app as a process on the console), the fake LLM calling the `schedule` tool, BullMQ's
 * delayed job firing into the session inbox. The reminder arrives once, as a message of its own
 * (not a reply to anything), with no model call.
 */
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { startFakeLlm, type FakeLlm } from "../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "../helpers/app-process.js";
import { testEnv } from "../helpers/config.js";
import { DiscordE2E, E2E_TIMEOUT, IDS, mention } from "../helpers/discord-pipeline.js";
import { remindMePlan, schedulingModel } from "../helpers/schedule.js";
import { createRedis } from "../../src/queue/index.js";
import { ScheduleStore } from "../../src/schedule/index.js";
import { ADA, DM, FAKE_BOT, GROUP, GRACE, mentionOf, sleep, startTelegramE2e, textOf, waitUntil, warmUpTokenizer, type TelegramE2e } from "../helpers/telegram-pipeline.js";

beforeAll(() => warmUpTokenizer());

describe("reminders on Telegram", E2E_TIMEOUT, () => {
  let e2e: TelegramE2e | undefined;
  afterEach(async () => {
    await e2e?.close();
    e2e = undefined;
  });

  it("a reminder in 2 s arrives once, as its own message", async () => {
    e2e = await startTelegramE2e();
    e2e.llm.setHandler(schedulingModel(remindMePlan));
    const request = e2e.telegram.pushMessage({ chat: DM, from: ADA, text: "remind me in 2s to stretch your legs" });
    const [confirmation] = await e2e.waitForSent(DM.id, 1);
    expect(textOf(confirmation)).toMatch(/^Done\. Scheduled r1, a reminder: “stretch your legs” — .* UTC\.$/);
    expect(confirmation?.payload.reply_parameters).toEqual({ message_id: request.message?.message_id, allow_sending_without_reply: true });

    const [, reminder] = await e2e.waitForSent(DM.id, 2);
    expect(textOf(reminder)).toBe("⏰ Reminder: stretch your legs");
    expect(reminder?.payload.reply_parameters).toBeUndefined();
    await sleep(2_500);
    expect(e2e.sentTo(DM.id)).toHaveLength(2);
    expect(e2e.llm.requests).toHaveLength(2);
  });

  it("a reminder set before the group became a supergroup is listed and delivered in the new chat", async () => {
    const oldGroup = { id: -4002, type: "group" as const, title: "Gardeners" };
    const newGroup = { id: -1004002, type: "supergroup" as const, title: "Gardeners" };
    e2e = await startTelegramE2e({ env: { ALLOWED_TELEGRAM_CHATS: String(oldGroup.id) } });
    e2e.llm.setHandler(schedulingModel(remindMePlan));
    const ask = "@longhaul_test_bot remind me in 8s to water the plants";
    e2e.telegram.pushMessage({ chat: oldGroup, from: GRACE, text: ask, entities: mentionOf(ask) });
    const [confirmation] = await e2e.waitForSent(oldGroup.id, 1);
    expect(textOf(confirmation)).toMatch(/^Done\. Scheduled r1, a reminder: “water the plants”/);

    e2e.telegram.migrateChat(oldGroup.id, newGroup.id, newGroup.title);
    e2e.telegram.pushMessage({ chat: newGroup, from: GRACE, text: "/reminders", entities: [{ type: "bot_command", offset: 0, length: 10 }] });
    const [list] = await e2e.waitForSent(newGroup.id, 1);
    expect(textOf(list)).toContain("r1");
    expect(textOf(list)).toContain("water the plants");

    const [, reminder] = await e2e.waitForSent(newGroup.id, 2);
    expect(textOf(reminder)).toBe("⏰ Reminder for Grace Hopper: water the plants");
    await sleep(1_000);
    expect(e2e.sentTo(newGroup.id)).toHaveLength(2);
    expect(e2e.sentTo(oldGroup.id)).toHaveLength(1);
  });

  it("a reminder of a group the bot is removed from is dropped, and nothing is sent", async () => {
    e2e = await startTelegramE2e({ env: { ALLOWED_TELEGRAM_CHATS: String(GROUP.id) } });
    e2e.llm.setHandler(schedulingModel(remindMePlan));
    const ask = "@longhaul_test_bot remind me in 4s to water the plants";
    e2e.telegram.pushMessage({ chat: GROUP, from: GRACE, text: ask, entities: mentionOf(ask) });
    await e2e.waitForSent(GROUP.id, 1);
    const redis = createRedis(e2e.config.REDIS_URL!);
    try {
      const store = new ScheduleStore(redis, e2e.config.REDIS_PREFIX);
      expect(await store.listChat("telegram", String(GROUP.id))).toHaveLength(1);
      const bot = { id: FAKE_BOT.id, is_bot: true, first_name: FAKE_BOT.first_name, username: FAKE_BOT.username };
      e2e.telegram.pushUpdate({
        update_id: 990_001,
        my_chat_member: { chat: GROUP, from: GRACE, date: Math.floor(Date.now() / 1000), old_chat_member: { user: bot, status: "member" }, new_chat_member: { user: bot, status: "kicked", until_date: 0 } },
      } as never);
      await waitUntil(() => e2e!.logs.lines.some((line) => line.includes("chat-closed")), "the gateway closing the chat");
      expect(await store.allIds()).toEqual([]);
    } finally {
      redis.disconnect();
    }
    await sleep(5_000);
    expect(e2e.sentTo(GROUP.id)).toHaveLength(1);
  });

  it("/reminders works in a group without the bot's name", async () => {
    e2e = await startTelegramE2e({ env: { ALLOWED_TELEGRAM_CHATS: String(GROUP.id) } });
    e2e.telegram.pushMessage({ chat: GROUP, from: GRACE, text: "/reminders", entities: [{ type: "bot_command", offset: 0, length: 10 }] });
    const [answer] = await e2e.waitForSent(GROUP.id, 1);
    expect(textOf(answer)).toMatch(/^No reminders or scheduled tasks in this chat/);
    expect(e2e.llm.requests).toHaveLength(0);
  });
});

describe("reminders on Discord", E2E_TIMEOUT, () => {
  let e2e: DiscordE2E | undefined;
  afterEach(async () => {
    await e2e?.close();
    e2e = undefined;
  });

  it("a reminder in 2 s arrives once in the channel, naming who set it, as its own message", async () => {
    e2e = await DiscordE2E.start();
    await e2e.startPipeline();
    e2e.llm.setHandler(schedulingModel(remindMePlan));
    e2e.fake.dispatchMessage(mention(IDS.textChannel, "600000000000000701", "remind me in 2s to stretch your legs"));
    const [confirmation] = await e2e.waitForSent(1, IDS.textChannel);
    expect(confirmation?.content).toMatch(/^Done\. Scheduled r1, a reminder: “stretch your legs” — .* UTC\.$/);
    expect(confirmation?.message_reference).toMatchObject({ message_id: "600000000000000701" });

    const [, reminder] = await e2e.waitForSent(2, IDS.textChannel);
    expect(reminder?.content).toBe("⏰ Reminder for Ada (ops): stretch your legs");
    expect(reminder?.message_reference).toBeUndefined();
    await sleep(2_500);
    expect(e2e.sent(IDS.textChannel)).toHaveLength(2);
    expect(e2e.llm.requests).toHaveLength(2);
  });
});

describe("reminders on the console (the app as a process)", () => {
  let llm: FakeLlm | undefined;
  let app: AppProcess | undefined;
  afterEach(async () => {
    await app?.kill("SIGKILL");
    await llm?.close();
  });

  it("a reminder in 2 s is printed once, then the app still exits cleanly at the end of input", async () => {
    llm = await startFakeLlm();
    llm.setHandler(schedulingModel(remindMePlan));
    app = spawnApp(testEnv({ LLM_BASE_URL: llm.url, CONSOLE: "auto" }));
    app.child.stdin.write("remind me in 2s to stretch your legs\n");
    const [confirmation] = await app.waitForStdoutLines(1, 60_000);
    expect(confirmation).toMatch(/^Done\. Scheduled r1, a reminder: “stretch your legs” — .* UTC\.$/);
    const lines = await app.waitForStdoutLines(2);
    expect(lines[1]).toBe("⏰ Reminder: stretch your legs");
    await sleep(2_500);
    expect(app.stdout().trim().split("\n")).toHaveLength(2);
    app.child.stdin.end();
    expect(await app.exited()).toBe(0);
    expect(llm.requests).toHaveLength(2);
  }, 90_000); // a spawned app: its start and first answer took close to 30 s on a loaded machine
});
