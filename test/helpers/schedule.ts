/**
 * Scheduled items against the private redis-server: the real store, service and BullMQ alarm
 * queue under a fresh prefix, with a clock the test moves.
 */
import { afterEach, inject } from "vitest";
import type { InboundMessage } from "../../src/core/channel.js";
import { silentLogger } from "../../src/logger.js";
import { createFiringQueue, createProducers, createRedis, firingJobId, type FiringQueue, type Producers, type Redis } from "../../src/queue/index.js";
import { ScheduleService, ScheduleStore, type FiringDeps, type Requester, type ScheduleSettings } from "../../src/schedule/index.js";
import { SessionStore } from "../../src/session/store.js";
import { echo, lastUserText, textOf, type FakeHandler } from "../fakes/fake-llm.js";
import { uniquePrefix } from "./config.js";

export interface ScheduleHarness {
  prefix: string;
  redis: Redis;
  store: ScheduleStore;
  sessions: SessionStore;
  alarms: FiringQueue;
  producers: Producers;
  service: ScheduleService;
  clock: { now: number };
  /** Firing deps on the real stores and queues, the harness clock, every chat allowed. */
  firingDeps(overrides?: Partial<FiringDeps>): FiringDeps;
  /** State of the alarm job for (item, time): "delayed", "completed", … or "unknown". */
  alarmState(itemId: string, at: number): Promise<string>;
  /** Every message waiting in a session's inbox. */
  inbox(sessionKey: string): Promise<InboundMessage[]>;
  close(): Promise<void>;
}

/** Job states of an alarm that is set and will ring. */
export const ARMED_STATES = ["waiting", "delayed", "prioritized"];

/** For a test file: `setUp()` starts a harness that is closed after each test. */
export function useScheduleHarness(): (settings?: Partial<ScheduleSettings>) => ScheduleHarness {
  let harness: ScheduleHarness | undefined;
  afterEach(async () => {
    await harness?.close();
    harness = undefined;
  });
  return (settings = {}) => (harness = startScheduleHarness(settings));
}

export const DEFAULT_SETTINGS: ScheduleSettings = { maxItems: 50, minIntervalMs: 300_000, admins: { telegram: ["999"] } };

export function startScheduleHarness(settings: Partial<ScheduleSettings> = {}, start = Date.parse("2026-03-28T09:00:00Z")): ScheduleHarness {
  const prefix = uniquePrefix("s");
  const redis = createRedis(inject("redisUrl"));
  const store = new ScheduleStore(redis, prefix);
  const sessions = new SessionStore(redis, prefix);
  const alarms = createFiringQueue(redis, prefix);
  const producers = createProducers(redis, prefix);
  const clock = { now: start };
  const service = new ScheduleService({ store, alarms, settings: { ...DEFAULT_SETTINGS, ...settings }, now: () => clock.now });
  return {
    prefix, redis, store, sessions, alarms, producers, service, clock,
    firingDeps: (overrides = {}) => ({
      store, alarms, inbox: sessions, turns: producers,
      chatAllowed: async () => true,
      missedGraceMs: 6 * 3_600_000,
      now: () => clock.now,
      logger: silentLogger,
      ...overrides,
    }),
    alarmState: (itemId, at) => alarms.queue.getJobState(firingJobId(itemId, at)),
    async inbox(sessionKey) {
      const raw = await redis.lrange(sessions.keys(sessionKey).inbox, 0, -1);
      return raw.map((entry) => JSON.parse(entry) as InboundMessage);
    },
    async close() {
      await alarms.queue.obliterate({ force: true }).catch(() => undefined);
      await alarms.close();
      await producers.close();
      redis.disconnect();
    },
  };
}

/** Ada in her private Telegram chat, in Berlin. */
export const ADA_DM: Requester = {
  platform: "telegram", chatId: "5012345678", chatType: "private", sessionKey: "tg:5012345678",
  userId: "5012345678", userName: "Ada", timeZone: "Europe/Berlin",
};

/** Someone in the Telegram group "-100777" (one session for the whole group). */
export const inGroup = (userId: string, userName: string, chatId = "-100777"): Requester => ({
  platform: "telegram", chatId, chatType: "group", sessionKey: `tg:${chatId}`, userId, userName, timeZone: "Europe/Berlin",
});

/**
 * A fake-LLM handler that behaves like a model with the `schedule` tool: `plan(userText)` says
 * which tool call a request gets (none: echo); a tool result is passed on ("Done. <result>"); a
 * fired task is answered with "Task done: <its instructions>".
 */
export function schedulingModel(plan: (userText: string) => Record<string, unknown> | undefined): FakeHandler {
  return (request) => {
    const last = request.body.messages[request.body.messages.length - 1];
    if (last?.role === "tool") return { text: `Done. ${textOf(last.content)}` };
    const user = lastUserText(request);
    if (user.startsWith("[Scheduled task")) return { text: `Task done: ${user.split("\n").slice(1).join(" ")}` };
    const args = plan(user);
    return args ? { toolCalls: [{ name: "schedule", arguments: args }] } : echo(request);
  };
}

/** "remind me in 2s to stretch" → a create call for a reminder. */
export const remindMePlan = (userText: string): Record<string, unknown> | undefined => {
  const match = /remind me in (\S+) to (.+)$/i.exec(userText);
  return match ? { action: "create", kind: "reminder", in: match[1], text: match[2] } : undefined;
};
