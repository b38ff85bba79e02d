/**
 * A batch whose chat part fails for good: what the segments before it did stays done — a fired
 * reminder delivered once, a /new archived — and the failed rest is kept in the conversation
 * with one notice. The batch mixes main's segment kinds (reminders, commands) with the fence's
 * BatchFailedError, which carries them to the commit.
 */
import { describe, expect, it } from "vitest";
import { BatchFailedError, batchFailureCause, runTurnSegments, settleWithoutAnswer, type TurnEngine } from "../../../src/agent/index.js";
import type { ScheduledOrigin } from "../../../src/core/channel.js";
import { PermanentError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/logger.js";
import { newSessionState } from "../../../src/session/state.js";
import type { InboxEntry } from "../../../src/session/store.js";
import { inbound } from "../../helpers/recording-adapter.js";

const entry = (text: string, messageId: string, scheduled?: ScheduledOrigin): InboxEntry => ({ ...inbound({ text, messageId }), ...(scheduled ? { scheduled } : {}), receivedAt: 0 });
const reminder = (text: string) => entry(text, "sched-r1-1000", { itemId: "r1", kind: "reminder", scheduledFor: 1_000 });

/** An engine whose model side fails for good: reminders and commands need none of it. */
const failingEngine = {
  systemPrompt: "system",
  idleResetMs: 0,
  now: () => 5_000,
  timeZone: "UTC",
  approval: { timeoutMs: 300_000, admins: {} },
  tools: { forTurn: async () => { throw new PermanentError("the model refused: 401 from 10.0.0.7"); } },
} as unknown as TurnEngine;

describe("a batch that fails after a reminder and a /new", () => {
  it("keeps the reminder and the /new done, and settles only the failed rest", async () => {
    const state = newSessionState(0, 7);
    state.live = [{ id: "m1", at: 1, role: "system", content: "system" }, { id: "m2", at: 2, role: "user", content: "the old topic" }];
    state.nextSeq = 3;
    state.engine.systemPromptBase = "system";
    const oldSessionId = state.sessionId;
    const batch = [reminder("⏰ Reminder: tea"), entry("/new", "41"), entry("hi", "42")];
    const target = { platform: "console" as const, chatId: "chat-1", replyToMessageId: "42" };
    const input = { sessionKey: "console:chat-1", state, batch, target, log: silentLogger };

    const failure = await runTurnSegments(failingEngine, { ...input, signal: new AbortController().signal }).then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(BatchFailedError);
    const failed = failure as BatchFailedError;
    expect(batchFailureCause(failed)).toBeInstanceOf(PermanentError);
    expect(failed.rest.map((item) => item.messageId)).toEqual(["42"]);
    expect(failed.done.archivedSessionId).toBe(oldSessionId);

    const settled = settleWithoutAnswer(failingEngine, { ...input, state: failed.done.state, batch: failed.rest }, "Sorry — the model is down.", undefined, failed.done);
    // One reply each: the reminder, the /new notice, the failure notice; ids follow the version.
    expect(settled.replies.map((reply) => [reply.replyId, reply.text.slice(0, 24)])).toEqual([
      ["console:chat-1#8#0", "⏰ Reminder: tea"],
      ["console:chat-1#8#1", "Started a new conversati"],
      ["console:chat-1#8#2", "Sorry — the model is dow"],
    ]);
    expect(settled.archivedSessionId).toBe(oldSessionId);
    // The fresh conversation keeps "hi" (unanswered); the reminder went out once, before /new.
    expect(settled.state.sessionId).not.toBe(oldSessionId);
    expect(settled.state.live.filter((message) => message.role !== "system").map((message) => message.content)).toEqual(["hi"]);
    expect(settled.transcript.map((message) => `${message.role}: ${message.content}`)).toEqual(["assistant: ⏰ Reminder: tea", "user: hi"]);
  });
});
