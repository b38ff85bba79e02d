/** What people read about scheduled items: confirmations, the list, a fired reminder, a task. */
import type { ScheduleItem } from "./item.js";
import type { Recurrence } from "./recurrence.js";
import { describeInterval } from "./when.js";
import { formatInstant, formatShort } from "./zone.js";

export function describeRecurrence(recurrence: Recurrence, zone: string): string {
  return recurrence.type === "every"
    ? `every ${describeInterval(recurrence.intervalMs)}`
    : `on cron "${recurrence.expression}" (${zone})`;
}

const kindName = (item: ScheduleItem) => (item.kind === "checkin" ? "check-in" : item.kind);

/** `“Call the bank”`, cut to a length that fits a list line. */
function quoted(text: string, max = 120): string {
  const line = text.replace(/\s+/g, " ").trim();
  return `“${line.length > max ? `${line.slice(0, max - 1)}…` : line}”`;
}

/** The absolute next run, and the rule when it recurs. */
export function describeTiming(item: ScheduleItem): string {
  const next = formatInstant(item.nextRunAt, item.timeZone);
  return item.recurrence ? `next ${next}, then ${describeRecurrence(item.recurrence, item.timeZone)}` : next;
}

/** `Scheduled r7, a reminder: “Call the bank” — Sun 29 Mar 2026, 09:00 (Europe/Berlin, UTC+02:00).` */
export function confirmation(verb: string, item: ScheduleItem): string {
  return `${verb} ${item.id}, a ${kindName(item)}: ${quoted(item.text)} — ${describeTiming(item)}${item.paused ? " (paused)" : ""}.`;
}

/** One line per item, soonest first, with the commands to change them. */
export function listText(items: readonly ScheduleItem[], showCreator: boolean): string {
  if (items.length === 0) return "No reminders or scheduled tasks in this chat. Ask me to remind you of something, e.g. “remind me tomorrow at 9 to call the bank”.";
  const lines = items.map((item) => {
    const by = showCreator ? `, by ${item.creator.userName}` : "";
    const state = item.paused ? " · paused" : "";
    return `${item.id} · ${kindName(item)}${by}${state} · ${describeTiming(item)} · ${quoted(item.text, 80)}`;
  });
  return [
    `Reminders and scheduled tasks (${items.length}):`,
    ...lines,
    "",
    "/reminders cancel <id> · pause <id> · resume <id> · edit <id> text <new text> | at <time> | in <duration> | every <interval> | cron <expr>",
  ].join("\n");
}

/** `late: scheduled for 09:00` when the occurrence fired later than it should have. */
export const lateNote = (scheduledFor: number, now: number, zone: string) => `late: scheduled for ${formatShort(scheduledFor, now, zone)}`;

/** A fired reminder, as the chat sees it (and the transcript keeps it, as the assistant's message). */
export function reminderText(item: ScheduleItem, scheduledFor: number, now: number, late: boolean): string {
  const header = item.chat.chatType === "group" ? `⏰ Reminder for ${item.creator.userName}` : "⏰ Reminder";
  return `${header}: ${item.text}${late ? `\n(${lateNote(scheduledFor, now, item.timeZone)})` : ""}`;
}

/** The user message of a fired agent task: what the model reads as this turn's request. */
export function taskText(item: ScheduleItem, scheduledFor: number, now: number, late: boolean): string {
  const recurring = item.recurrence ? `, ${describeRecurrence(item.recurrence, item.timeZone)}` : "";
  return [
    `[Scheduled task ${item.id}, set by ${item.creator.userName}${recurring}; due ${formatInstant(scheduledFor, item.timeZone)}${late ? `, ${lateNote(scheduledFor, now, item.timeZone)}` : ""}. Carry it out now; your answer is posted to the chat.]`,
    item.text,
  ].join("\n");
}

/** The sentinel a check-in answers when there is nothing worth saying: no message is sent. */
export const CHECKIN_SILENT = "[nothing]";

/**
 * The request of a fired check-in: the model looks at the conversation (its summary and latest
 * messages) and says something only if it is worth a message now.
 */
export function checkinText(item: ScheduleItem, scheduledFor: number): string {
  const recurring = item.recurrence ? ` (${describeRecurrence(item.recurrence, item.timeZone)})` : "";
  return [
    `[Check-in ${item.id}${recurring}, set by ${item.creator.userName}; now ${formatInstant(scheduledFor, item.timeZone)}.`,
    "Look at the conversation so far. If something is worth a short message now — a follow-up that was promised, a deadline coming up, an open question you can now answer — write that message; it is posted to the chat.",
    `Otherwise answer exactly ${CHECKIN_SILENT} and nothing is sent. Do not greet or chat just to say something.]`,
    ...(item.text ? [`What to keep an eye on: ${item.text}`] : []),
  ].join("\n");
}

/** What the chat gets when a check-in pauses itself: the budget is near its limit. */
export function checkinPausedText(item: ScheduleItem, reason: string): string {
  return `⏸ Check-ins paused (${item.id}): ${reason} /checkin on resumes them.`;
}

/** What the chat gets instead of a task the budget check refused. */
export function taskRefusedText(item: ScheduleItem, reason: string): string {
  return `⏸ Skipped scheduled task ${item.id} (${quoted(item.text, 80)}): ${reason}`;
}
