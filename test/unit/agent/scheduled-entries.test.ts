/**
 * Scheduled messages inside a turn's batch: a fired reminder is its own segment and is never lost
 * with a failed turn; a fired task is an agent turn of its own; replies never point at the
 * synthetic message id of a scheduled message.
 */
import { describe, expect, it } from "vitest";
import { segmentBatch, settleWithoutAnswer, userMessageText } from "../../../src/agent/index.js";
import type { ScheduledOrigin } from "../../../src/core/channel.js";
import { silentLogger } from "../../../src/logger.js";
import { newSessionState } from "../../../src/session/state.js";
import type { InboxEntry } from "../../../src/session/store.js";
import { inbound } from "../../helpers/recording-adapter.js";

const entry = (text: string, messageId: string, scheduled?: ScheduledOrigin, chatType: "private" | "group" = "private"): InboxEntry => ({
  ...inbound({ text, messageId, chatType }),
  ...(scheduled ? { scheduled } : {}),
  receivedAt: 0,
});
const reminder = (text: string, id = "r1") => entry(text, `sched-${id}-1000`, { itemId: id, kind: "reminder", scheduledFor: 1_000 });
const task = (text: string, id = "r2") => entry(text, `sched-${id}-1000`, { itemId: id, kind: "task", scheduledFor: 1_000 });

const describeSegments = (batch: InboxEntry[]) =>
  segmentBatch(batch).map((segment) =>
    segment.kind === "chat" ? `chat(${segment.entries.map((item) => item.messageId).join(",")})` : `${segment.kind}(${segment.entry.messageId})`);

describe("segmenting a batch with scheduled messages", () => {
  it("keeps reminders and tasks apart from what people wrote", () => {
    const batch = [entry("hi", "1"), entry("there", "2"), reminder("⏰ Reminder: tea"), entry("/reminders", "3"), task("[Scheduled task r2] plan"), entry("and you?", "4"), entry("ok", "5")];
    expect(describeSegments(batch)).toEqual([
      "chat(1,2)", "reminder(sched-r1-1000)", "command(3)", "chat(sched-r2-1000)", "chat(4,5)",
    ]);
  });

  it("never reads a scheduled text as a command, and never prefixes it with a speaker", () => {
    const fired = entry("/new", "sched-r9-1", { itemId: "r9", kind: "task", scheduledFor: 1 }, "group");
    expect(describeSegments([fired])).toEqual(["chat(sched-r9-1)"]);
    expect(userMessageText(fired)).toBe("/new");
    expect(userMessageText(entry("/new", "7", undefined, "group"))).toBe("Ada: /new");
  });
});

describe("a turn that fails with a reminder in its batch", () => {
  it("still delivers the reminder (not as a reply) and keeps it in the conversation", () => {
    const state = newSessionState(0);
    const batch = [entry("what's the weather?", "41"), reminder("⏰ Reminder: tea")];
    const result = settleWithoutAnswer(
      { now: () => 5, systemPrompt: "system" },
      { sessionKey: "console:chat-1", state, batch, target: { platform: "console", chatId: "chat-1", replyToMessageId: "41" }, log: silentLogger },
      "Sorry — the model is down.",
    );
    expect(result.replies.map((reply) => [reply.text, reply.target.replyToMessageId, reply.inReplyTo])).toEqual([
      ["⏰ Reminder: tea", undefined, []],
      ["Sorry — the model is down.", "41", ["41"]],
    ]);
    expect(result.transcript.map((message) => `${message.role}: ${message.content}`)).toEqual(["user: what's the weather?", "assistant: ⏰ Reminder: tea"]);
    expect(result.state.live.map((message) => message.role)).toEqual(["system", "user", "assistant"]);
  });

  it("a failed task's notice replies to nothing", () => {
    const result = settleWithoutAnswer(
      { now: () => 5, systemPrompt: "system" },
      { sessionKey: "console:chat-1", state: newSessionState(0), batch: [task("[Scheduled task r2] plan")], target: { platform: "console", chatId: "chat-1" }, log: silentLogger },
      "Sorry — the model is down.",
    );
    expect(result.replies[0]?.target.replyToMessageId).toBeUndefined();
    expect(result.replies[0]?.inReplyTo).toEqual([]);
  });
});
