/**
 * `/checkin` (issue #35 item 3): one check-in per chat, opt-in.
 *
 *   /checkin                          whether this chat has one, its interval and next run
 *   /checkin every 4h [what to watch] start (or replace) the chat's check-in
 *   /checkin off                      stop it
 *   /checkin on                       resume one that paused itself (quiet runs, budget)
 *
 * A check-in is a scheduled item of kind `checkin`: it looks at the conversation every interval
 * and posts only when something is worth saying (docs/reminders.md, "Check-ins").
 */
import { describeTiming } from "./format.js";
import type { Requester, ScheduleItem } from "./item.js";
import type { ScheduleService } from "./service.js";

const USAGE = "Usage: /checkin · /checkin every <interval> [what to keep an eye on] (e.g. /checkin every 4h) · /checkin off · /checkin on";
/** What a check-in watches when its starter named nothing. */
export const CHECKIN_DEFAULT_FOCUS = "anything worth following up";

export interface CheckinOutcome {
  text: string;
  /** The chat's check-in (re)started: its count of quiet runs starts again. */
  restarted: boolean;
}

export async function checkinCommand(service: ScheduleService, requester: Requester, args: string): Promise<CheckinOutcome> {
  const [verb = "", ...rest] = args.trim().split(/\s+/).filter((word) => word !== "");
  const current = await service.chatItems(requester, "checkin");
  const answer = (text: string, restarted = false) => ({ text, restarted });
  switch (verb.toLowerCase()) {
    case "":
    case "status":
      return answer(current.length === 0 ? `No check-ins in this chat. /checkin every 4h starts them: I look at the conversation every 4 hours and write only when something is worth it.` : current.map(describe).join("\n"));
    case "off":
    case "stop": {
      if (current.length === 0) return answer("No check-ins in this chat.");
      const results = await Promise.all(current.map((item) => service.cancel(requester, item.id)));
      const refused = results.find((result) => !result.ok);
      return answer(refused ? refused.text : "Check-ins stopped.");
    }
    case "on":
    case "resume": {
      const paused = current.filter((item) => item.paused);
      if (paused.length === 0) return answer(current.length === 0 ? "No check-ins in this chat. /checkin every 4h starts them." : "Check-ins are already on.");
      const results = await Promise.all(paused.map((item) => service.resume(requester, item.id)));
      const first = results[0]!;
      if (!first.ok) return answer(first.text);
      return answer(`Check-ins resumed. ${first.item ? describe(first.item) : ""}`.trim(), true);
    }
    case "every": {
      const [interval, ...focusWords] = rest;
      if (!interval) return answer(USAGE);
      const focus = focusWords.join(" ").trim() || CHECKIN_DEFAULT_FOCUS;
      const created = await service.create(requester, { kind: "checkin", text: focus, when: { every: interval } });
      if (!created.ok || !created.item) return answer(created.text);
      // One per chat: the new one replaces any earlier.
      await Promise.all(current.map((item) => service.cancel(requester, item.id)));
      return answer(`Check-ins on. ${describe(created.item)}`, true);
    }
    default:
      return answer(USAGE);
  }
}

function describe(item: ScheduleItem): string {
  return `Check-in ${item.id}: ${describeTiming(item)}${item.paused ? " (paused: /checkin on resumes it)" : ""} · watching: ${item.text}.`;
}
