/** Who pays for a call: the chat (session) and the person it answers. */
import { platformPrefix, type Platform } from "../core/channel.js";
import type { BudgetAccounts } from "./meter.js";

/** The chat (session) and the person (`tg:42`) who pay for a segment's calls; a message of nobody (a fired task) charges the chat only. */
export function budgetAccounts(sessionKey: string, speaker: { platform: Platform; userId: string } | undefined): BudgetAccounts {
  return speaker && speaker.userId !== "" ? { chat: sessionKey, user: `${platformPrefix(speaker.platform)}:${speaker.userId}` } : { chat: sessionKey };
}
