/**
 * One alarm going off, against real Redis and BullMQ with a clock the test moves: exactly once
 * whatever step a firing dies after, or when two workers fire the same occurrence; late and
 * missed occurrences; alarms that an edit, a pause or a revoked chat made stale.
 */
import { describe, expect, inject, it, vi } from "vitest";
import { silentLogger } from "../../../src/logger.js";
import { fireOccurrence, type FiringStep, type ScheduleItem } from "../../../src/schedule/index.js";
import { startScheduleWorker } from "../../../workers/schedule-worker.js";
import { ADA_DM, ARMED_STATES, inGroup, useScheduleHarness, type ScheduleHarness } from "../../helpers/schedule.js";

const ARMED = ARMED_STATES;
const at = (iso: string) => Date.parse(iso);
const setUp = useScheduleHarness();

async function created(h: ScheduleHarness, input: Parameters<ScheduleHarness["service"]["create"]>[1], requester = ADA_DM): Promise<ScheduleItem> {
  const result = await h.service.create(requester, input);
  if (!result.ok) throw new Error(result.text);
  return result.item;
}

class Crash extends Error {}
const crashAfter = (step: FiringStep) => (reached: FiringStep) => {
  if (reached === step) throw new Crash(`died after ${step}`);
};

describe("a firing that dies after any step, then runs again, delivers once", () => {
  for (const step of ["appended", "enqueued", "advanced", "armed"] as const) {
    it(`recurring item, died after "${step}"`, async () => {
      const h = setUp();
      const item = await created(h, { kind: "reminder", text: "stand up", when: { cron: "0 9 * * *" } });
      expect(item.nextRunAt).toBe(at("2026-03-29T07:00:00Z"));
      h.clock.now = item.nextRunAt + 150;
      const occurrence = { itemId: item.id, scheduledFor: item.nextRunAt };

      await expect(fireOccurrence(h.firingDeps(), occurrence, crashAfter(step))).rejects.toBeInstanceOf(Crash);
      const retry = await fireOccurrence(h.firingDeps(), occurrence);
      // And a third alarm for the same occurrence (a stalled job taken over later) changes nothing.
      expect((await fireOccurrence(h.firingDeps(), occurrence)).status).toBe("stale");

      const inbox = await h.inbox(item.sessionKey);
      expect(inbox).toHaveLength(1);
      expect(inbox[0]).toMatchObject({ text: "⏰ Reminder: stand up", messageId: `sched-${item.id}-${item.nextRunAt}`, scheduled: { itemId: item.id, kind: "reminder", scheduledFor: item.nextRunAt } });
      expect(inbox[0]?.scheduled?.late).toBeUndefined();
      const after = await h.store.get(item.id);
      expect(after).toMatchObject({ nextRunAt: at("2026-03-30T07:00:00Z"), fireCount: 1 });
      expect(ARMED).toContain(await h.alarmState(item.id, at("2026-03-30T07:00:00Z")));
      // A turn is queued for the session whatever step the first attempt reached.
      expect(await h.producers.turnQueue.getJobCountByTypes("waiting", "delayed")).toBe(1);
      if (step === "appended" || step === "enqueued") expect(retry).toMatchObject({ status: "fired", duplicate: true });
      else expect(retry.status).toBe("stale");
    });
  }

  for (const step of ["appended", "enqueued", "removed"] as const) {
    it(`one-off item, died after "${step}"`, async () => {
      const h = setUp();
      const item = await created(h, { kind: "reminder", text: "call the bank", when: { in: "2h" } });
      h.clock.now = item.nextRunAt + 10;
      const occurrence = { itemId: item.id, scheduledFor: item.nextRunAt };
      await expect(fireOccurrence(h.firingDeps(), occurrence, crashAfter(step))).rejects.toBeInstanceOf(Crash);
      await fireOccurrence(h.firingDeps(), occurrence);
      expect((await h.inbox(item.sessionKey)).map((message) => message.text)).toEqual(["⏰ Reminder: call the bank"]);
      expect(await h.store.get(item.id)).toBeUndefined();
      expect(await h.service.list(ADA_DM)).toEqual([]);
    });
  }
});

describe("concurrent and stale alarms", () => {
  it("two workers firing the same occurrence at once append one message and advance once", async () => {
    const h = setUp();
    const item = await created(h, { kind: "reminder", text: "water the plants", when: { every: "1h" } });
    h.clock.now = item.nextRunAt;
    const occurrence = { itemId: item.id, scheduledFor: item.nextRunAt };
    const outcomes = await Promise.all([fireOccurrence(h.firingDeps(), occurrence), fireOccurrence(h.firingDeps(), occurrence)]);
    expect(await h.inbox(item.sessionKey)).toHaveLength(1);
    expect(outcomes.filter((outcome) => outcome.status === "fired" && !outcome.duplicate)).toHaveLength(1);
    expect(await h.store.get(item.id)).toMatchObject({ nextRunAt: item.nextRunAt + 3_600_000, fireCount: 1 });
  });

  it("an alarm for a time the item was edited away from does nothing, and the new time is armed", async () => {
    const h = setUp();
    const item = await created(h, { kind: "reminder", text: "dentist", when: { at: "2026-03-30T09:00" } });
    const edited = await h.service.edit(ADA_DM, item.id, { when: { at: "2026-03-30T11:00" } });
    expect(edited.ok && edited.item.nextRunAt).toBe(at("2026-03-30T09:00:00Z"));
    h.clock.now = item.nextRunAt;
    expect((await fireOccurrence(h.firingDeps(), { itemId: item.id, scheduledFor: item.nextRunAt })).status).toBe("stale");
    expect(await h.inbox(item.sessionKey)).toEqual([]);
    expect(await h.alarmState(item.id, item.nextRunAt)).toBe("unknown");
    expect(ARMED).toContain(await h.alarmState(item.id, at("2026-03-30T09:00:00Z")));
  });

  it("a paused item stays silent and keeps its time; resumed, it fires late once", async () => {
    const h = setUp();
    const item = await created(h, { kind: "reminder", text: "take the pills", when: { at: "2026-03-28T12:00" } });
    await h.service.pause(ADA_DM, item.id);
    h.clock.now = item.nextRunAt + 1_000;
    expect((await fireOccurrence(h.firingDeps(), { itemId: item.id, scheduledFor: item.nextRunAt })).status).toBe("paused");
    expect(await h.inbox(item.sessionKey)).toEqual([]);

    h.clock.now = at("2026-03-28T13:30:00Z");
    const resumed = await h.service.resume(ADA_DM, item.id);
    expect(resumed.ok).toBe(true);
    expect(ARMED).toContain(await h.alarmState(item.id, item.nextRunAt));
    await fireOccurrence(h.firingDeps(), { itemId: item.id, scheduledFor: item.nextRunAt });
    const [message] = await h.inbox(item.sessionKey);
    expect(message?.text).toBe("⏰ Reminder: take the pills\n(late: scheduled for 12:00)");
    expect(message?.scheduled?.late).toBe(true);
  });

  it("an alarm that went off while paused rings again after resume (its finished job is replaced)", async () => {
    const h = setUp();
    const item = await created(h, { kind: "reminder", text: "ping", when: { in: "1h" } });
    await h.service.pause(ADA_DM, item.id);
    // The alarm goes off anyway (the pause came while it was already running): the worker
    // finds the item paused, and BullMQ keeps the completed job under the alarm's id.
    await h.alarms.arm(item.id, item.nextRunAt);
    const worker = startScheduleWorker({
      redisAddress: inject("redisUrl"), prefix: h.prefix, lockMs: 5_000, deps: h.firingDeps(), service: h.service, logger: silentLogger,
    });
    try {
      await vi.waitFor(async () => expect(await h.alarmState(item.id, item.nextRunAt)).toBe("completed"), { timeout: 20_000 });
      expect(await h.inbox(item.sessionKey)).toEqual([]);
      await h.service.resume(ADA_DM, item.id);
      await vi.waitFor(async () => expect(await h.inbox(item.sessionKey)).toHaveLength(1), { timeout: 20_000 });
    } finally {
      await worker.close();
    }
  });

  it("a chat that is no longer served loses the item instead of getting the message", async () => {
    const h = setUp();
    const item = await created(h, { kind: "reminder", text: "secret", when: { in: "1h" } }, inGroup("1", "Bob"));
    h.clock.now = item.nextRunAt;
    const outcome = await fireOccurrence(h.firingDeps({ chatAllowed: async () => false }), { itemId: item.id, scheduledFor: item.nextRunAt });
    expect(outcome.status).toBe("chat-removed");
    expect(await h.inbox(item.sessionKey)).toEqual([]);
    expect(await h.store.get(item.id)).toBeUndefined();
  });
});

describe("late and missed occurrences", () => {
  it("a one-off missed during downtime is delivered once, late, with a note in the chat's zone", async () => {
    const h = setUp();
    const item = await created(h, { kind: "reminder", text: "call the bank", when: { at: "2026-03-30T09:00" } });
    // Everything was down for two days.
    h.clock.now = at("2026-04-01T10:15:00Z");
    await fireOccurrence(h.firingDeps(), { itemId: item.id, scheduledFor: item.nextRunAt });
    const [message] = await h.inbox(item.sessionKey);
    expect(message?.text).toBe("⏰ Reminder: call the bank\n(late: scheduled for Mon 30 Mar 09:00)");
  });

  it("a recurrence missed for longer than the grace is skipped and goes on from now", async () => {
    const h = setUp();
    const item = await created(h, { kind: "reminder", text: "standup", when: { cron: "0 9 * * *" } });
    h.clock.now = at("2026-03-29T17:00:00Z"); // 10 h after the 09:00 run; grace 6 h
    const outcome = await fireOccurrence(h.firingDeps(), { itemId: item.id, scheduledFor: item.nextRunAt });
    expect(outcome).toEqual({ status: "skipped-missed", missedFor: at("2026-03-29T07:00:00Z") });
    expect(await h.inbox(item.sessionKey)).toEqual([]);
    expect(await h.store.get(item.id)).toMatchObject({ nextRunAt: at("2026-03-30T07:00:00Z"), fireCount: 0 });
    expect(ARMED).toContain(await h.alarmState(item.id, at("2026-03-30T07:00:00Z")));
  });

  it("after several missed runs only the latest is delivered, late, if within the grace", async () => {
    const h = setUp();
    const item = await created(h, { kind: "reminder", text: "stretch", when: { every: "1h" } });
    expect(item.nextRunAt).toBe(at("2026-03-28T10:00:00Z"));
    h.clock.now = at("2026-03-28T13:20:00Z"); // missed 10:00, 11:00, 12:00 and 13:00
    const outcome = await fireOccurrence(h.firingDeps(), { itemId: item.id, scheduledFor: item.nextRunAt });
    expect(outcome).toMatchObject({ status: "fired", deliveredFor: at("2026-03-28T13:00:00Z"), late: true });
    const inbox = await h.inbox(item.sessionKey);
    expect(inbox.map((message) => message.text)).toEqual(["⏰ Reminder: stretch\n(late: scheduled for 14:00)"]);
    expect(inbox[0]?.messageId).toBe(`sched-${item.id}-${at("2026-03-28T13:00:00Z")}`);
    expect(await h.store.get(item.id)).toMatchObject({ nextRunAt: at("2026-03-28T14:00:00Z"), fireCount: 1 });
  });
});

describe("agent tasks", () => {
  it("become a user message worded by the scheduler, from the creator, in the item's chat", async () => {
    const h = setUp();
    const bob = inGroup("42", "Bob");
    const item = await created(h, { kind: "task", text: "summarise this week's plan", when: { cron: "0 9 * * 1" } }, bob);
    h.clock.now = item.nextRunAt;
    await fireOccurrence(h.firingDeps(), { itemId: item.id, scheduledFor: item.nextRunAt });
    const [message] = await h.inbox(bob.sessionKey);
    expect(message).toMatchObject({ platform: "telegram", chatId: "-100777", chatType: "group", userId: "42", userName: "Bob", scheduled: { kind: "task" } });
    expect(message?.text).toBe(`[Scheduled task ${item.id}, set by Bob, on cron "0 9 * * 1" (Europe/Berlin); due Mon 30 Mar 2026, 09:00 (Europe/Berlin, UTC+02:00). Carry it out now; your answer is posted to the chat.]\nsummarise this week's plan`);
  });

  it("go through the budget hook; a refused task reaches the chat as a notice, without the model", async () => {
    const h = setUp();
    const item = await created(h, { kind: "task", text: "research flights", when: { in: "1h" } });
    h.clock.now = item.nextRunAt;
    const asked: string[] = [];
    await fireOccurrence(h.firingDeps({
      checkTaskBudget: async (task) => {
        asked.push(task.id);
        return { allowed: false, reason: "this chat's budget for today is used up" };
      },
    }), { itemId: item.id, scheduledFor: item.nextRunAt });
    expect(asked).toEqual([item.id]);
    const [message] = await h.inbox(item.sessionKey);
    expect(message?.scheduled?.kind).toBe("reminder");
    expect(message?.text).toBe(`⏸ Skipped scheduled task ${item.id} (“research flights”): this chat's budget for today is used up`);
  });
});

describe("check-ins (issue 35 item 3)", () => {
  it("missed runs merge into one however late (no grace skip), worded as a check-in that may stay silent", async () => {
    const h = setUp();
    const item = await created(h, { kind: "checkin", text: "the visa application", when: { every: "4h" } });
    h.clock.now = item.nextRunAt + 30 * 3_600_000; // down for more than a day: 8 runs missed, grace 6 h
    const outcome = await fireOccurrence(h.firingDeps(), { itemId: item.id, scheduledFor: item.nextRunAt });
    expect(outcome).toMatchObject({ status: "fired", late: true });
    const inbox = await h.inbox(item.sessionKey);
    expect(inbox).toHaveLength(1);
    expect(inbox[0]?.scheduled?.kind).toBe("checkin");
    expect(inbox[0]?.text).toContain(`[Check-in ${item.id} (every 4 hours), set by Ada`);
    expect(inbox[0]?.text).toContain("answer exactly [nothing] and nothing is sent");
    expect(inbox[0]?.text).toContain("What to keep an eye on: the visa application");
    expect(await h.store.get(item.id)).toMatchObject({ fireCount: 1, paused: false });
  });

  it("a budget near its limit pauses the check-in and tells the chat once, without the model", async () => {
    const h = setUp();
    const item = await created(h, { kind: "checkin", text: "anything worth following up", when: { every: "4h" } });
    h.clock.now = item.nextRunAt;
    const asked: string[] = [];
    await fireOccurrence(h.firingDeps({
      checkTaskBudget: async () => ({ allowed: true }),
      checkCheckinBudget: async (checkin) => {
        asked.push(checkin.id);
        return { allowed: false, reason: "this chat has used 92% of its budget for today." };
      },
    }), { itemId: item.id, scheduledFor: item.nextRunAt });
    expect(asked).toEqual([item.id]);
    const [message] = await h.inbox(item.sessionKey);
    expect(message?.scheduled?.kind).toBe("reminder");
    expect(message?.text).toBe(`⏸ Check-ins paused (${item.id}): this chat has used 92% of its budget for today. /checkin on resumes them.`);
    const after = await h.store.get(item.id);
    expect(after?.paused).toBe(true);
    expect(await h.alarmState(item.id, after!.nextRunAt)).toBe("unknown");
  });
});
