/**
 * Reminders and scheduled tasks (issue 19): items in Redis, an alarm per next run (a BullMQ
 * delayed job, armed through `FiringAlarms`), firings that enter the conversation through the
 * session inbox, the `schedule` tool and the `/reminders` command. See docs/reminders.md.
 */
export type { FiringAlarms, Occurrence } from "./alarms.js";
export { remindersCommand } from "./command.js";
export { checkinCommand, CHECKIN_DEFAULT_FOCUS, type CheckinOutcome } from "./checkin-command.js";
export { CHECKIN_SILENT } from "./format.js";
export { fireOccurrence, LATE_AFTER_MS, type FiringDeps, type FiringOutcome, type FiringStep, type TaskBudgetVerdict } from "./fire.js";
export { occurrenceMessageId, requesterOf, type ItemChat, type ItemKind, type Requester, type ScheduleItem } from "./item.js";
export type { Recurrence } from "./recurrence.js";
export { MAX_ITEM_TEXT_CHARS, scheduleSettingsFrom, ScheduleService, type ActionResult, type ScheduleSettings } from "./service.js";
export { ScheduleStore } from "./store.js";
export { createScheduleTool, type ScheduleTool } from "./tool.js";
export { resolveTiming, type WhenInput } from "./when.js";
export { isValidTimeZone } from "./zone.js";
