/**
 * One alarm going off. The occurrence enters the conversation through the same door as a chat
 * message: a synthetic inbound message appended to the session inbox under a dedupe id made of
 * (item, occurrence), then a turn is enqueued. The inbox's `seen` key is what makes it exactly
 * once: two workers that fire the same occurrence (a takeover after a stall, a retry after a
 * crash) append one message. Every step is idempotent, so a firing that dies anywhere is simply
 * run again by BullMQ.
 */
import type { InboundMessage } from "../core/channel.js";
import type { Logger } from "../logger.js";
import type { FiringAlarms, Occurrence } from "./alarms.js";
import { checkinPausedText, checkinText, reminderText, taskRefusedText, taskText } from "./format.js";
import { occurrenceMessageId, type ScheduleItem } from "./item.js";
import { latestOccurrence, nextOccurrence } from "./recurrence.js";
import type { ScheduleStore } from "./store.js";

/** An occurrence delivered this much after its time carries a "late: scheduled for …" note. */
export const LATE_AFTER_MS = 60_000;

export type TaskBudgetVerdict = { allowed: true } | { allowed: false; reason: string };

export interface FiringDeps {
  store: ScheduleStore;
  alarms: FiringAlarms;
  /** The session store's append (dedupe + inbox + work set, one script). */
  inbox: { appendInbox(message: InboundMessage, receivedAt: number): Promise<boolean> };
  turns: { enqueueTurn(sessionKey: string): Promise<void> };
  /** Whether the chat is still served (allowlists, approved users). One that is not loses its items. */
  chatAllowed(item: ScheduleItem): Promise<boolean>;
  /**
   * BUDGET HOOK (#17): may this agent task spend tokens now? Budgets do not exist yet; when they
   * do, their check goes here. Absent: allowed. A refused task reaches the chat as a notice,
   * without an LLM call.
   */
  checkTaskBudget?: (item: ScheduleItem) => Promise<TaskBudgetVerdict>;
  /**
   * May a check-in run now? Refused when the chat's budget is near its limit (not only spent):
   * the check-in then pauses itself and the chat is told once. Absent: checkTaskBudget.
   */
  checkCheckinBudget?: (item: ScheduleItem) => Promise<TaskBudgetVerdict>;
  /** A recurring occurrence missed by more than this is skipped (SCHEDULE_MISSED_GRACE_S). */
  missedGraceMs: number;
  now(): number;
  logger: Logger;
}

export type FiringOutcome =
  | { status: "fired"; deliveredFor: number; late: boolean; duplicate: boolean }
  | { status: "skipped-missed"; missedFor: number }
  | { status: "stale" | "gone" | "paused" | "chat-removed" };

/** Durable steps of a firing, in order; fault tests stop a firing right after one of them. */
export type FiringStep = "appended" | "enqueued" | "advanced" | "armed" | "removed";

export async function fireOccurrence(deps: FiringDeps, occurrence: Occurrence, afterStep?: (step: FiringStep) => void): Promise<FiringOutcome> {
  const { store } = deps;
  const log = deps.logger.child({ itemId: occurrence.itemId, scheduledFor: occurrence.scheduledFor });
  const item = await store.get(occurrence.itemId);
  if (!item) return { status: "gone" };
  if (item.nextRunAt !== occurrence.scheduledFor) {
    // An alarm the item moved away from: edited, or an earlier attempt advanced it and died
    // before arming the next run. Arming is idempotent, so make sure the current one is set.
    if (!item.paused && item.nextRunAt > occurrence.scheduledFor) await deps.alarms.arm(item.id, item.nextRunAt);
    return { status: "stale" };
  }
  // A paused item keeps its next run; resuming re-arms it.
  if (item.paused) return { status: "paused" };
  if (!(await deps.chatAllowed(item))) {
    await store.remove(item);
    log.info({ sessionKey: item.sessionKey }, "schedule-chat-removed");
    return { status: "chat-removed" };
  }

  const now = deps.now();
  // After downtime a recurrence may have several missed occurrences: only the latest counts.
  const deliverFor = item.recurrence
    ? latestOccurrence(item.recurrence, now, item.timeZone, item.anchorAt, occurrence.scheduledFor) ?? occurrence.scheduledFor
    : occurrence.scheduledFor;
  // A check-in's missed runs merge into one, however late: it looks at the chat as it is now.
  const skip = item.recurrence !== undefined && item.kind !== "checkin" && now - deliverFor > deps.missedGraceMs;
  const late = now - deliverFor > LATE_AFTER_MS;

  let duplicate = false;
  let pauseAfter = false;
  if (!skip) {
    const { message, pause } = await occurrenceMessage(deps, item, deliverFor, now, late);
    pauseAfter = pause;
    duplicate = !(await deps.inbox.appendInbox(message, now));
    afterStep?.("appended");
    // Even for a duplicate: the attempt that appended it may have died before enqueueing.
    await deps.turns.enqueueTurn(item.sessionKey);
    afterStep?.("enqueued");
    log.info({ sessionKey: item.sessionKey, kind: item.kind, deliverFor, late, duplicate }, "schedule-fired");
  } else {
    log.info({ sessionKey: item.sessionKey, missedFor: deliverFor, lateMs: now - deliverFor }, "schedule-missed-skipped");
  }

  if (item.recurrence) {
    const next = nextOccurrence(item.recurrence, Math.max(now, deliverFor), item.timeZone, item.anchorAt);
    const advanced = await store.advance(item.id, occurrence.scheduledFor, next, skip ? undefined : now);
    afterStep?.("advanced");
    // Whoever advanced it arms the next run; a retry of an attempt that died in between re-arms.
    const current = advanced ? { nextRunAt: next, paused: item.paused } : await store.get(item.id);
    if (current && !current.paused) await deps.alarms.arm(item.id, current.nextRunAt);
    afterStep?.("armed");
    if (pauseAfter) await pauseItem(deps, item.id, log);
  } else {
    await store.remove(item, occurrence.scheduledFor);
    afterStep?.("removed");
  }
  return skip ? { status: "skipped-missed", missedFor: deliverFor } : { status: "fired", deliveredFor: deliverFor, late, duplicate };
}

/** A check-in that paused itself (budget near its limit): paused as `/reminders pause` would. */
async function pauseItem(deps: FiringDeps, itemId: string, log: Logger): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const current = await deps.store.get(itemId);
    if (!current || current.paused) return;
    const outcome = await deps.store.update({ ...current, paused: true });
    if (outcome === "missing") return;
    if (outcome === "updated") {
      await deps.alarms.disarm(itemId, current.nextRunAt);
      log.info({ sessionKey: current.sessionKey }, "checkin-paused-budget");
      return;
    }
  }
}

/** The synthetic inbound message of one occurrence, from the item's creator in the item's chat; `pause`: pause the item after it. */
async function occurrenceMessage(deps: FiringDeps, item: ScheduleItem, scheduledFor: number, now: number, late: boolean): Promise<{ message: InboundMessage; pause: boolean }> {
  let kind = item.kind;
  let text: string;
  let pause = false;
  if (item.kind === "checkin") {
    const verdict = (await (deps.checkCheckinBudget ?? deps.checkTaskBudget)?.(item)) ?? { allowed: true };
    if (verdict.allowed) {
      text = checkinText(item, scheduledFor);
    } else {
      kind = "reminder";
      text = checkinPausedText(item, verdict.reason);
      pause = true;
    }
  } else if (item.kind === "task") {
    const verdict = (await deps.checkTaskBudget?.(item)) ?? { allowed: true };
    if (verdict.allowed) {
      text = taskText(item, scheduledFor, now, late);
    } else {
      // Delivered as a fixed message: no LLM call for a task the budget refused.
      kind = "reminder";
      text = taskRefusedText(item, verdict.reason);
    }
  } else {
    text = reminderText(item, scheduledFor, now, late);
  }
  const message: InboundMessage = {
    platform: item.chat.platform,
    sessionKey: item.sessionKey,
    messageId: occurrenceMessageId(item.id, scheduledFor),
    chatId: item.chat.chatId,
    ...(item.chat.threadId !== undefined ? { threadId: item.chat.threadId } : {}),
    ...(item.chat.parentChatId !== undefined ? { parentChatId: item.chat.parentChatId } : {}),
    userId: item.creator.userId,
    userName: item.creator.userName,
    chatType: item.chat.chatType,
    text,
    sentAt: now,
    scheduled: { itemId: item.id, kind, scheduledFor, ...(late ? { late: true } : {}) },
  };
  return { message, pause };
}
