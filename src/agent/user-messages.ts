/**
 * The messages a batch adds to the conversation: what the model reads for each inbound message
 * (speaker, forward, quoted reply, send time), and the assistant message a delivered reminder
 * leaves.
 */
import type { InboundMessage } from "../core/channel.js";
import type { ChatMessage, UserMessage } from "../core/messages.js";
import { describeGap, formatStamp } from "../core/time-stamp.js";
import type { SessionState } from "../session/state.js";
import type { InboxEntry } from "../session/store.js";
import { chatTimeZone } from "./chat-time-zone.js";
import type { Clock } from "./ports.js";

/**
 * The user messages a batch adds to the conversation. Shared chats name the speaker. With
 * `stamp`, each starts with when it was sent, `[Tue 2026-12-01 10:44 Europe/Berlin]`, and a gap of
 * an hour or more since the message before (`previousAt`) is spelled out. The stamp is written
 * once, into the stored content, so the cached prompt prefix never changes; the latest stamp tells
 * the model today's date and the chat's zone without touching the system prompt.
 */
export function toUserMessages(entries: readonly InboxEntry[], newId: () => string, stamp?: { timeZone: string; previousAt?: number }): UserMessage[] {
  let previousAt = stamp?.previousAt;
  return entries.map((entry) => {
    const text = userMessageText(entry);
    let content = text;
    if (stamp) {
      const gap = previousAt === undefined ? undefined : describeGap(entry.sentAt - previousAt);
      content = `[${formatStamp(entry.sentAt, stamp.timeZone)}${gap ? ` · ${gap} after the previous message` : ""}] ${text}`;
      previousAt = entry.sentAt;
    }
    return {
      id: newId(),
      at: entry.sentAt,
      role: "user",
      content,
      ...(entry.attachments?.length ? { attachments: entry.attachments } : {}),
    };
  });
}

/** The stamp settings of a turn: the chat's zone and the time of the last message before it. */
export function stampFor(engine: Partial<Pick<Clock, "messageTimeStamps" | "timeZone">>, state: SessionState): { timeZone: string; previousAt?: number } | undefined {
  if (!engine.messageTimeStamps) return undefined;
  const previousAt = state.live.findLast((message) => message.role !== "system" && message.at !== undefined)?.at;
  return { timeZone: chatTimeZone(state, engine.timeZone ?? "UTC"), ...(previousAt === undefined ? {} : { previousAt }) };
}

/**
 * What the model reads for one inbound message: the speaker in shared chats, then where it
 * was forwarded from and what it replies to (quoted, so the model can tell it from the
 * user's own words), then the text itself.
 */
export function userMessageText(entry: InboundMessage): string {
  // A fired task was worded by the scheduler (who set it, when it was due); no speaker prefix.
  if (entry.scheduled) return entry.text;
  const lines: string[] = [];
  if (entry.forwardedFrom !== undefined) lines.push(`[forwarded from ${entry.forwardedFrom}]`);
  if (entry.replyTo !== undefined) {
    const { author, text, quote } = entry.replyTo;
    const shown = quote !== undefined && quote.trim() !== "" ? quote : text;
    const quoted = shown.split("\n").map((line) => `> ${line}`).join("\n");
    lines.push(`[in reply to ${author}${quote ? " (quoting part of it)" : ""}:]\n${quoted}`);
  }
  if (entry.attachmentText) lines.push(entry.attachmentText);
  if (entry.text !== "" || !entry.attachmentText) lines.push(entry.text);
  const body = lines.join("\n");
  return entry.chatType === "group" ? `${entry.userName}: ${body}` : body;
}

/** The assistant message a delivered reminder leaves in the conversation. */
export function reminderMessage(entry: InboxEntry, id: string): ChatMessage {
  return { id, at: entry.sentAt, role: "assistant", content: entry.text };
}
