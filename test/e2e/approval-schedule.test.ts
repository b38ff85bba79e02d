/**
 * Tool approval and scheduled items together, through the pipeline: a reminder the model sets
 * in a loop resumed after an approval belongs to the person who asked, in their chat; a task
 * that fires while a call waits for approval leaves the request waiting; a call that ran beside
 * one that waits is in the conversation at once, so a task that fires meanwhile does not redo it.
 */
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { Config } from "../../config/index.js";
import type { OutboundReply } from "../../src/core/channel.js";
import { createFiringQueue, createRedis, type Redis } from "../../src/queue/index.js";
import { scheduleSettingsFrom, ScheduleService, ScheduleStore } from "../../src/schedule/index.js";
import { lastUserText, startFakeLlm, textOf, type FakeLlm, type RecordedRequest } from "../fakes/fake-llm.js";
import { testConfig } from "../helpers/config.js";
import { FILESYSTEM, assertCallsAnswered, writeConfigFile } from "../helpers/mcp.js";
import { startPipeline, type Pipeline } from "../helpers/pipeline.js";
import { RecordingAdapter, inbound } from "../helpers/recording-adapter.js";
import { warmUpTokenizer } from "../helpers/telegram-pipeline.js";

const GROUP = "-100556";
const ADA = "42";
const ADMIN = "44";

const offeredTools = (request: RecordedRequest) =>
  (request.body.tools ?? []).map((tool) => (tool as { function: { name: string } }).function.name);

describe("tool approval with scheduled items", () => {
  let llm: FakeLlm;
  let adapter: RecordingAdapter;
  let pipeline: Pipeline;
  let config: Config;
  let redis: Redis;
  let root: string;

  beforeAll(async () => {
    warmUpTokenizer();
    llm = await startFakeLlm();
    root = mkdtempSync(join(tmpdir(), "lh-approval-schedule-"));
    const file = writeConfigFile({
      mcp: { servers: { files: { command: process.execPath, args: [FILESYSTEM, root], approval: { tools: ["write_file"] } } } },
    });
    adapter = new RecordingAdapter("telegram");
    config = testConfig({
      LLM_BASE_URL: llm.url,
      LONGHAUL_CONFIG_FILE: file,
      ALLOWED_TELEGRAM_CHATS: GROUP,
      ALLOWED_TELEGRAM_USERS: ADA,
      ADMIN_TELEGRAM_USERS: ADMIN,
      APPROVAL_TIMEOUT_S: "60",
    });
    pipeline = await startPipeline(config, [adapter]);
    redis = createRedis(config.REDIS_URL!);
  });
  afterAll(async () => {
    redis.disconnect();
    await pipeline.close();
    await llm.close();
  });
  afterEach(() => {
    for (const request of llm.requests) assertCallsAnswered(request);
  });

  const say = (chatId: string, userId: string, text: string) => adapter.submit(inbound({
    platform: "telegram", text, chatId, sessionKey: `tg:${chatId}`, chatType: chatId.startsWith("-") ? "group" : "private",
    userId, userName: userId === ADA ? "Ada" : "Root",
  }));
  const press = (chatId: string, userId: string, actionId: string) => adapter.submit(inbound({
    platform: "telegram", text: "(button)", chatId, sessionKey: `tg:${chatId}`, chatType: chatId.startsWith("-") ? "group" : "private",
    userId, userName: userId === ADA ? "Ada" : "Root", action: { id: actionId, sourceMessageId: "900" },
  }));
  const repliesTo = (chatId: string): OutboundReply[] => adapter.sent.filter((entry) => entry.reply.target.chatId === chatId).map((entry) => entry.reply);
  const waitReplies = async (chatId: string, count: number) => {
    await adapter.waitFor(() => repliesTo(chatId).length >= count, 60_000);
    return repliesTo(chatId);
  };

  it("a reminder set after an approved call is the asker's, in the asker's chat, whoever approved", async () => {
    llm.setHandler((request) => {
      const last = request.body.messages.at(-1);
      if (last?.role !== "tool") return { toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "plan.txt"), content: "plan" } }] };
      const result = textOf(last.content);
      if (/Successfully wrote/.test(result)) return { toolCalls: [{ name: "schedule", arguments: { action: "create", kind: "reminder", in: "2h", text: "read plan.txt" } }] };
      return { text: `Done. ${result}` };
    });
    await say(GROUP, ADA, "write the plan, then remind me in 2h to read it");
    const [request] = await waitReplies(GROUP, 1);
    expect(request?.actions).toHaveLength(2);

    // An admin approves: the reminder is still Ada's, set in the group.
    await press(GROUP, ADMIN, request!.actions![0]!.id);
    const replies = await waitReplies(GROUP, 3);
    expect(replies[1]?.text).toBe("✅ Approved by Root: ran `files__write_file`.");
    expect(replies[2]?.text).toMatch(/^Done\. Scheduled r\d+, a reminder: “read plan\.txt” — /);
    const items = await new ScheduleStore(redis, config.REDIS_PREFIX).listChat("telegram", GROUP);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      sessionKey: `tg:${GROUP}`,
      chat: { platform: "telegram", chatId: GROUP, chatType: "group" },
      creator: { userId: ADA, userName: "Ada" },
      kind: "reminder",
    });
  });

  it("a task that fires while a call waits for approval leaves the request waiting, and runs without tools that would ask", async () => {
    const chat = ADA;
    llm.setHandler((request) => {
      if (request.body.messages.at(-1)?.role === "tool") return { text: `tool said: ${textOf(request.body.messages.at(-1)?.content)}` };
      if (lastUserText(request).startsWith("[Scheduled task")) return { text: "Task done." };
      return { toolCalls: [{ name: "files__write_file", arguments: { path: join(root, "waiting.txt"), content: "waited" } }] };
    });
    await say(chat, ADA, "please write waiting.txt");
    const [request] = await waitReplies(chat, 1);
    expect(request?.actions).toHaveLength(2);

    const alarms = createFiringQueue(redis, config.REDIS_PREFIX);
    const schedule = new ScheduleService({ store: new ScheduleStore(redis, config.REDIS_PREFIX), alarms, settings: scheduleSettingsFrom(config) });
    const created = await schedule.create(
      { platform: "telegram", chatId: chat, chatType: "private", sessionKey: `tg:${chat}`, userId: ADA, userName: "Ada", timeZone: "UTC" },
      { kind: "task", text: "summarise the plan", when: { in: "2s" } },
    ).finally(() => alarms.close());
    expect(created.ok).toBe(true);
    const task = (await waitReplies(chat, 2))[1];
    expect(task).toMatchObject({ kind: "answer", text: "Task done." });
    const taskRequest = llm.requests.find((recorded) => lastUserText(recorded).startsWith("[Scheduled task"))!;
    expect(offeredTools(taskRequest)).toContain("schedule");
    expect(offeredTools(taskRequest)).toContain("files__read_text_file");
    expect(offeredTools(taskRequest)).not.toContain("files__write_file");

    // The request still waits: Ada's answer runs the call and the loop answers her.
    await press(chat, ADA, request!.actions![0]!.id);
    const replies = await waitReplies(chat, 4);
    expect(replies[2]?.text).toBe("✅ Approved by Ada: ran `files__write_file`.");
    expect(replies[3]?.text).toMatch(/^tool said: Successfully wrote/);
    expect(existsSync(join(root, "waiting.txt"))).toBe(true);
  });

  it("a call that ran beside one waiting for approval is in the conversation at once: a task firing meanwhile does not set the reminder again", async () => {
    // Issue 28 (a one-off reminder delivered twice in a chaos run): one step asked for a reminder
    // (run at once) and a write (waiting for approval); the whole step was kept out of the
    // conversation until the answer, so a task that fired meanwhile showed the model the user's
    // request with no sign of the reminder it had set — and a model that does what it is asked
    // set it again.
    const chat = ADA;
    const before = repliesTo(chat).length;
    const reminders = async () => (await new ScheduleStore(redis, config.REDIS_PREFIX).listChat("telegram", chat)).filter((item) => item.text === "water the plants");
    const remind = { name: "schedule", arguments: { action: "create", kind: "reminder", in: "1h", text: "water the plants" } };
    const shows = (request: RecordedRequest) => request.body.messages.some((message) => message.role === "tool" && /^Scheduled r\d+, a reminder: “water the plants”/.test(textOf(message.content)));
    llm.setHandler((request) => {
      const last = request.body.messages.at(-1);
      if (last?.role === "tool") return { text: `tool said: ${textOf(last.content)}` };
      // A model that sees the request for a reminder and no sign of it sets it.
      if (lastUserText(request).startsWith("[Scheduled task")) return shows(request) ? { text: "Task done." } : { toolCalls: [remind] };
      return { toolCalls: [remind, { name: "files__write_file", arguments: { path: join(root, "plants.txt"), content: "water" } }] };
    });
    await say(chat, ADA, "remind me in 1h to water the plants, and write plants.txt");
    const request = (await waitReplies(chat, before + 1))[before];
    expect(request?.actions).toHaveLength(2);
    expect(await reminders()).toHaveLength(1);

    const alarms = createFiringQueue(redis, config.REDIS_PREFIX);
    const schedule = new ScheduleService({ store: new ScheduleStore(redis, config.REDIS_PREFIX), alarms, settings: scheduleSettingsFrom(config) });
    await schedule.create(
      { platform: "telegram", chatId: chat, chatType: "private", sessionKey: `tg:${chat}`, userId: ADA, userName: "Ada", timeZone: "UTC" },
      { kind: "task", text: "look at the plants", when: { in: "2s" } },
    ).finally(() => alarms.close());
    expect((await waitReplies(chat, before + 2))[before + 1]).toMatchObject({ kind: "answer", text: "Task done." });
    expect(shows(llm.requests.findLast((recorded) => lastUserText(recorded).startsWith("[Scheduled task"))!)).toBe(true);
    expect(await reminders()).toHaveLength(1);

    // The waiting call still waits, and runs when Ada approves it.
    await press(chat, ADA, request!.actions![0]!.id);
    const replies = await waitReplies(chat, before + 4);
    expect(replies[before + 2]?.text).toBe("✅ Approved by Ada: ran `files__write_file`.");
    expect(replies[before + 3]?.text).toMatch(/^tool said: Successfully wrote/);
    expect(await reminders()).toHaveLength(1);
  });
});
