/**
 * A scheduled item: a fixed reminder ("Call the bank") or an agent task ("summarise this week's
 * plan"), once or recurring, owned by one chat. The item in Redis is the truth; BullMQ's delayed
 * job for its next run is only the alarm clock (a job whose time no longer matches the item
 * does nothing).
 */
import { messageOrigin, type MessageOrigin, type Platform } from "../core/channel.js";
import type { Recurrence } from "./recurrence.js";

/** `checkin`: a recurring look at the chat (issue #35 item 3) that may decide to say nothing. */
export type ItemKind = "reminder" | "task" | "checkin";

/** Where an item lives and answers: the routing fields of the message that created it. */
export interface ItemChat {
  platform: Platform;
  chatId: string;
  threadId?: string;
  /** A Discord thread's channel: access rules name channels. */
  parentChatId?: string;
  chatType: "private" | "group";
}

export interface ScheduleItem {
  /** Short and typable (`r12`): users cancel with `/reminders cancel r12`. */
  id: string;
  sessionKey: string;
  chat: ItemChat;
  creator: { userId: string; userName: string };
  kind: ItemKind;
  text: string;
  /** IANA zone the times were given in; recurrences are computed in it. */
  timeZone: string;
  /** Absent: one-off. */
  recurrence?: Recurrence;
  /** First run; an interval recurrence counts from it. */
  anchorAt: number;
  createdAt: number;
  /** UTC ms of the next run (for a paused item: the run it would have had). */
  nextRunAt: number;
  paused: boolean;
  /** Bumped by every change; edits are checked against it. */
  revision: number;
  fireCount: number;
  lastFiredAt?: number;
}

/** Who asks (the speaker of the message, or the operator at the console) and from where. */
export interface Requester extends ItemChat {
  sessionKey: string;
  userId: string;
  userName: string;
  /** The chat's time zone (the session's own, else TZ). */
  timeZone: string;
}

/** The requester of an inbound message (the one a command or tool call came from). */
export function requesterOf(message: MessageOrigin, timeZone: string): Requester {
  return { ...messageOrigin(message), timeZone };
}

/** The dedupe id of one occurrence: the ingress' `seen` key makes it enter the inbox once. */
export const occurrenceMessageId = (itemId: string, scheduledFor: number) => `sched-${itemId}-${scheduledFor}`;
