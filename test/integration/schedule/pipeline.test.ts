/**
 * Scheduled items through the real pipeline in this process (gateway with a RecordingAdapter,
 * BullMQ on the private redis-server, a worker, the fake LLM): the agent sets them with the
 * `schedule` tool, they fire through the session inbox, and the conversation remembers them.
 */
import { describe, expect, it, vi } from "vitest";
import type { Config } from "../../../config/index.js";
import { RedisChannelCursors } from "../../../src/gateway/cursors.js";
import { createRedis } from "../../../src/queue/index.js";
import { ScheduleStore } from "../../../src/schedule/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { httpError, textOf, withoutStamp } from "../../fakes/fake-llm.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { testConfig } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { inbound, RecordingAdapter } from "../../helpers/recording-adapter.js";
import { remindMePlan, schedulingModel } from "../../helpers/schedule.js";
import { closeAfterTest } from "../../helpers/close-after-test.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Run {
  config: Config;
  llm: FakeLlm;
  adapter: RecordingAdapter;
  pipeline: Pipeline;
  texts(): string[];
  withStores<T>(use: (sessions: SessionStore, schedule: ScheduleStore, cursors: RedisChannelCursors) => Promise<T>): Promise<T>;
}

async function start(env: Record<string, string> = {}): Promise<Run> {
  const llm = closeAfterTest(await startFakeLlm());
  const config = testConfig({ LLM_BASE_URL: llm.url, ...env });
  const adapter = new RecordingAdapter("console");
  const pipeline = closeAfterTest(await startPipeline(config, [adapter]));
  return {
    config, llm, adapter, pipeline,
    texts: () => adapter.sent.map((entry) => entry.reply.text),
    async withStores(use) {
      const redis = createRedis(config.REDIS_URL!);
      try {
        return await use(new SessionStore(redis, config.REDIS_PREFIX), new ScheduleStore(redis, config.REDIS_PREFIX), new RedisChannelCursors(redis, config.REDIS_PREFIX));
      } finally {
        redis.disconnect();
      }
    },
  };
}

describe("scheduled items in the pipeline", () => {
  it("a turn that re-runs after its schedule call (its next step failed) creates the reminder once (issue 28)", async () => {
    const { llm, adapter, texts, withStores } = await start({ LLM_MAX_RETRIES: "0" });
    const model = schedulingModel(remindMePlan);
    let failedOnce = false;
    llm.setHandler((request) => {
      const last = request.body.messages[request.body.messages.length - 1];
      // The step after the tool call fails once: the whole turn is retried by its job, and the
      // model, asked again, calls schedule again (with a new call id, as real models do).
      if (last?.role === "tool" && !failedOnce) {
        failedOnce = true;
        return httpError.server(500);
      }
      return model(request);
    });
    const request = inbound({ text: "remind me in 1h to water the plants" });
    await adapter.submit(request);
    await adapter.waitFor((sent) => sent.length >= 1, 60_000);
    expect(failedOnce).toBe(true);
    const calls = llm.requests.flatMap((recorded) => recorded.body.messages.filter((message) => message.role === "tool"));
    expect(calls.length).toBeGreaterThanOrEqual(2);
    const items = await withStores((_sessions, schedule) => schedule.listChat("console", request.chatId));
    expect(items.map((item) => item.text)).toEqual(["water the plants"]);
    expect(texts()).toHaveLength(1);
    expect(texts()[0]).toContain(`Scheduled ${items[0]!.id}`);
  });

  it("a reminder in 2 s is delivered once, without a model call, and the conversation remembers it", async () => {
    const { llm, adapter, texts, withStores } = await start();
    llm.setHandler(schedulingModel(remindMePlan));
    const request = inbound({ text: "remind me in 2s to stretch your legs" });
    await adapter.submit(request);
    await adapter.waitFor((sent) => sent.length >= 1);
    expect(texts()[0]).toMatch(/^Done\. Scheduled r1, a reminder: “stretch your legs” — \w{3} \d+ \w{3} \d{4}, \d\d:\d\d UTC\.$/);

    await adapter.waitFor((sent) => sent.length >= 2);
    const [confirmation, reminder] = adapter.sent;
    expect(reminder?.reply).toMatchObject({ text: "⏰ Reminder: stretch your legs", inReplyTo: [], kind: "answer" });
    expect(reminder?.reply.target.replyToMessageId).toBeUndefined();
    // Not early: set for 2 s after the tool call, which came before the confirmation went out.
    expect(reminder!.at - confirmation!.at).toBeGreaterThanOrEqual(1_000);
    await sleep(2_500);
    expect(texts()).toHaveLength(2);
    expect(llm.requests).toHaveLength(2);

    const transcript = await withStores((sessions) => sessions.readTranscript(request.sessionKey));
    expect(transcript.map((message) => `${message.role}: ${message.role === "user" ? withoutStamp(message.content) : (message.content ?? "(tool call)")}`)).toEqual([
      "user: remind me in 2s to stretch your legs",
      "assistant: (tool call)",
      `tool: ${texts()[0]!.replace(/^Done\. /, "")}`,
      `assistant: ${texts()[0]}`,
      "assistant: ⏰ Reminder: stretch your legs",
    ]);

    // The next turn's context carries the reminder as the assistant's own words.
    await adapter.submit(inbound({ text: "thanks, done" }));
    await adapter.waitFor((sent) => sent.length >= 3);
    const context = llm.requests[2]?.body.messages.map((message) => `${message.role}: ${message.role === "user" ? withoutStamp(textOf(message.content)) : textOf(message.content)}`) ?? [];
    expect(context.slice(-2)).toEqual(["assistant: ⏰ Reminder: stretch your legs", "user: thanks, done"]);
  });

  it("a recurring reminder fires three times, then /reminders cancel stops it", async () => {
    const { llm, adapter, texts, withStores } = await start({ SCHEDULE_MIN_INTERVAL_S: "1" });
    llm.setHandler(schedulingModel((text) => (text === "water reminder" ? { action: "create", every: "4s", text: "drink some water" } : undefined)));
    await adapter.submit(inbound({ text: "water reminder" }));
    await adapter.waitFor((sent) => sent.length >= 1);
    expect(texts()[0]).toMatch(/^Done\. Scheduled r1, a reminder: “drink some water” — next .* UTC, then every 4 seconds\.$/);

    // Cancel right after the third firing, well before the fourth is due.
    await vi.waitFor(async () => expect((await withStores((_sessions, schedule) => schedule.get("r1")))?.fireCount).toBe(3), { timeout: 45_000, interval: 20 });
    await adapter.submit(inbound({ text: "/reminders cancel r1" }));
    await adapter.waitFor((sent) => sent.some((entry) => entry.reply.text.startsWith("Cancelled")), 30_000);
    await sleep(5_000);

    const reminders = texts().filter((text) => text.startsWith("⏰"));
    expect(reminders).toEqual(["⏰ Reminder: drink some water", "⏰ Reminder: drink some water", "⏰ Reminder: drink some water"]);
    expect(texts()).toContain("Cancelled r1: “drink some water”.");
    expect(await withStores((_sessions, schedule) => schedule.allIds())).toEqual([]);
    expect(llm.requests).toHaveLength(2);
  });

  it("an agent task runs as a turn of the session, and its output is in the transcript", async () => {
    const { llm, adapter, texts, withStores } = await start();
    llm.setHandler(schedulingModel((text) => (text === "plan" ? { action: "create", kind: "task", in: "2s", text: "summarise this week's plan" } : undefined)));
    const request = inbound({ text: "plan" });
    await adapter.submit(request);
    await adapter.waitFor((sent) => sent.length >= 2);
    expect(texts()[1]).toBe("Task done: summarise this week's plan");
    expect(adapter.sent[1]?.reply.target.replyToMessageId).toBeUndefined();

    // Same session, same context: the task's request carries the conversation before it.
    const taskRequest = llm.requests[2];
    expect(taskRequest?.body.messages[1]?.role).toBe("user");
    expect(withoutStamp(textOf(taskRequest?.body.messages[1]?.content))).toBe("plan");
    expect(taskRequest?.body.tools?.length).toBeGreaterThan(0);

    const transcript = await withStores((sessions) => sessions.readTranscript(request.sessionKey));
    const last = transcript.slice(-2);
    expect(last[0]?.role).toBe("user");
    // A fired task carries the time it fired too (MESSAGE_TIMESTAMPS), then the scheduler's words.
    expect(withoutStamp(last[0]?.content ?? "")).toMatch(/^\[Scheduled task r1, set by Ada; due .* UTC\. Carry it out now; your answer is posted to the chat\.\]\nsummarise this week's plan$/);
    expect(last[1]).toMatchObject({ role: "assistant", content: "Task done: summarise this week's plan" });
  });

  it("/reminders lists, pauses and edits; in a group only the creator or an admin may cancel", async () => {
    const { llm, adapter, texts } = await start({ ADMIN_TELEGRAM_USERS: "nobody" });
    llm.setHandler(schedulingModel(remindMePlan));
    const group = { chatType: "group" as const, chatId: "team", sessionKey: "console:team" };
    const say = async (userId: string, userName: string, text: string) => {
      const count = adapter.sent.length;
      await adapter.submit(inbound({ ...group, userId, userName, text }));
      await adapter.waitFor((sent) => sent.length > count);
      return texts()[texts().length - 1]!;
    };
    expect(await say("ada", "Ada", "remind me in 3h to book the room")).toMatch(/^Done\. Scheduled r1/);
    expect(await say("bob", "Bob", "/reminders")).toMatch(/^Reminders and scheduled tasks \(1\):\nr1 · reminder, by Ada · .* · “book the room”/);
    expect(await say("bob", "Bob", "/reminders cancel r1")).toBe("Only Ada, who set r1, or an admin of this bot can change or cancel it.");
    expect(await say("ada", "Ada", "/reminders pause r1")).toMatch(/^Paused r1, a reminder: “book the room” — .* \(paused\)\.$/);
    expect(await say("ada", "Ada", "/reminders edit r1 text book the big room")).toMatch(/^Changed r1, a reminder: “book the big room”/);
    expect(await say("ada", "Ada", "/reminders frobnicate r1")).toMatch(/^Usage: \/reminders/);
    expect(await say("ada", "Ada", "/reminders cancel r1")).toBe("Cancelled r1: “book the big room”.");
    expect(await say("ada", "Ada", "/reminders")).toMatch(/^No reminders or scheduled tasks in this chat/);
  });

  it("the gateway drops a chat's items and its read cursor when the bot leaves it", async () => {
    const { llm, adapter, pipeline, withStores } = await start();
    llm.setHandler(schedulingModel(remindMePlan));
    await adapter.submit(inbound({ text: "remind me in 1h to leave" }));
    await adapter.waitFor((sent) => sent.length >= 1);
    expect(await withStores((_sessions, schedule) => schedule.allIds())).toEqual(["r1"]);
    await withStores(async (_sessions, _schedule, cursors) => {
      await cursors.advance("console", "chat-1", "100");
      await cursors.advance("console", "chat-2", "200");
    });
    await pipeline.gateway.chatClosed("console", "chat-1");
    expect(await withStores((_sessions, schedule) => schedule.allIds())).toEqual([]);
    expect(await withStores((_sessions, _schedule, cursors) => cursors.list("console"))).toEqual(new Map([["chat-2", "200"]]));
  });
});
