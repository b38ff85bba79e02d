/**
 * Check-ins (issue 35 item 3), through real turns (`runTurnSegments` with the session's context
 * manager): a fired check-in runs only when the chat is idle, on the cheap context (system
 * prompt, summary, latest plain messages within a budget; no tools), sends nothing when the model
 * says there is nothing worth saying, and pauses itself after N quiet runs in a row. A simulated
 * week shows the token cost per day against the growing history.
 */
import { describe, expect, it } from "vitest";
import type { TurnEngine } from "../../../src/agent/index.js";
import type { ChatRequest, ChatResult, LlmClient } from "../../../src/core/llm.js";
import type { ChatMessage } from "../../../src/core/messages.js";
import { silentLogger } from "../../../src/logger.js";
import { CHECKIN_SILENT, type ScheduleService } from "../../../src/schedule/index.js";
import type { SessionState } from "../../../src/session/state.js";
import type { InboxEntry } from "../../../src/session/store.js";
import { currentTimeTool, ToolCatalog } from "../../../src/tools/index.js";
import { engineOver, freshState, say, turn } from "../../helpers/agent-turns.js";

const ADA = "42";
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const T0 = Date.parse("2026-03-02T00:00:00Z");

/** A model whose usage is the request's size at ~4 characters a token; `answer` decides what it writes. */
function sizedLlm(answer: (request: ChatRequest) => string): LlmClient & { requests: ChatRequest[]; promptTokens: number[] } {
  const requests: ChatRequest[] = [];
  const promptTokens: number[] = [];
  return {
    model: "gpt-4o-mini",
    contextWindow: 128_000,
    requests,
    promptTokens,
    async complete(request: ChatRequest): Promise<ChatResult> {
      requests.push(request);
      const prompt = Math.ceil(JSON.stringify(request.messages).length / 4);
      promptTokens.push(prompt);
      const content = answer(request);
      return { content, toolCalls: [], finishReason: "stop", model: "gpt-4o-mini", usage: { promptTokens: prompt, completionTokens: Math.ceil(content.length / 4), cachedTokens: 0 } };
    },
  };
}

/** The schedule service as a check-in turn sees it: it records pauses. */
function recordingSchedule(): { service: ScheduleService; paused: string[] } {
  const paused: string[] = [];
  const service = { pause: async (_requester: unknown, id: string) => (paused.push(id), { ok: true, text: `Paused ${id}` }) };
  return { service: service as unknown as ScheduleService, paused };
}

function checkinEntry(at: number, n: number): InboxEntry {
  return {
    ...say(ADA, ADA, "Ada", `[Check-in r7 (every 4 hours), set by Ada; now …. Otherwise answer exactly ${CHECKIN_SILENT} and nothing is sent.]\nWhat to keep an eye on: the visa`, `sched-r7-${n}`),
    sentAt: at,
    receivedAt: at,
    scheduled: { itemId: "r7", kind: "checkin", scheduledFor: at },
  };
}

function engineWith(llm: LlmClient, schedule: ScheduleService, clock: { now: number }, maxQuietRuns = 3): TurnEngine {
  return engineOver(llm, new ToolCatalog({ builtins: [currentTimeTool], logger: silentLogger }), {
    schedule, now: () => clock.now, checkin: { idleMs: 30 * 60_000, maxQuietRuns, contextTokens: 2_000 },
  });
}

/** A conversation of `count` plain messages ending `endAt`, with a summary first. */
function history(state: SessionState, count: number, endAt: number, words = 60): void {
  state.live.push({ id: "sys", at: 0, role: "system", content: "You are a careful assistant." });
  state.live.push({ id: "sum", at: 0, role: "user", kind: "summary", content: "Summary: Ada is applying for a Japanese visa; the embassy asked for a bank statement." });
  for (let index = 0; index < count; index++) {
    const role = index % 2 === 0 ? "user" : "assistant";
    state.live.push({ id: `m${index}`, at: endAt - (count - index) * 60_000, role, content: `${role} message ${index}: ${"words ".repeat(words)}` } as ChatMessage);
  }
}

describe("a fired check-in (issue 35 item 3)", () => {
  it("sends nothing when there is nothing worth saying, keeps nothing, and pauses itself after three quiet runs in a row", async () => {
    const llm = sizedLlm(() => CHECKIN_SILENT);
    const { service, paused } = recordingSchedule();
    const clock = { now: T0 + 8 * HOUR };
    let state = freshState();
    history(state, 10, T0);
    const before = state.live.length;
    const texts: string[][] = [];
    for (let run = 1; run <= 3; run++) {
      clock.now += 4 * HOUR;
      const result = await turn(engineWith(llm, service, clock), [checkinEntry(clock.now, run)], state);
      texts.push(result.replies.map((reply) => reply.text));
      state = result.state;
    }
    expect(llm.requests).toHaveLength(3);
    expect(texts.slice(0, 2)).toEqual([[], []]);
    expect(texts[2]).toEqual(["⏸ I paused check-ins after 3 in a row with nothing worth saying. /checkin on resumes them."]);
    expect(paused).toEqual(["r7"]);
    // Nothing of the quiet runs entered the conversation (the system message is ensured once).
    expect(state.live.filter((message) => message.role !== "system").length).toBe(before - 1);
  });

  it("posts what is worth saying, keeps it as its own message, and counts quiet runs afresh", async () => {
    let say = false;
    const llm = sizedLlm(() => (say ? "Reminder: the embassy wanted the bank statement by Friday — shall I draft the cover letter?" : CHECKIN_SILENT));
    const { service, paused } = recordingSchedule();
    const clock = { now: T0 + 8 * HOUR };
    let state = freshState();
    history(state, 10, T0);
    for (const [run, speak] of [[1, false], [2, false], [3, true], [4, false], [5, false]] as const) {
      say = speak;
      clock.now += 4 * HOUR;
      const result = await turn(engineWith(llm, service, clock), [checkinEntry(clock.now, run)], state);
      expect(result.replies.map((reply) => reply.text)).toEqual(speak ? ["Reminder: the embassy wanted the bank statement by Friday — shall I draft the cover letter?"] : []);
      state = result.state;
    }
    expect(paused).toEqual([]);
    expect(state.live.at(-1)).toMatchObject({ role: "assistant", content: expect.stringContaining("bank statement by Friday") });
    expect(state.engine.checkinQuietRuns).toBe(2);
  });

  it("is skipped without a model call while the chat is active: a person wrote within 30 minutes, or writes in the same batch", async () => {
    const llm = sizedLlm(() => "something");
    const { service } = recordingSchedule();
    const clock = { now: T0 + 10 * 60_000 };
    const state = freshState();
    history(state, 4, T0); // the last person's message 2 minutes before T0
    const busy = await turn(engineWith(llm, service, clock), [checkinEntry(clock.now, 1)], state);
    expect(busy.replies).toEqual([]);
    clock.now = T0 + 5 * HOUR;
    const withPeople = await turn(engineWith(sizedLlm(() => "echo"), service, clock), [checkinEntry(clock.now, 2), say(ADA, ADA, "Ada", "hi there", "900")], busy.state);
    expect(withPeople.replies.map((reply) => reply.text)).toEqual(["echo"]);
    expect(llm.requests).toHaveLength(0);
  });

  it("reads the cheap context (system prompt, summary, latest plain messages within its budget; no tools); waiting check-ins merge into one call", async () => {
    const llm = sizedLlm(() => CHECKIN_SILENT);
    const { service } = recordingSchedule();
    const clock = { now: T0 + 2 * HOUR };
    const state = freshState();
    history(state, 400, T0);
    state.live.push({ id: "a-tool", at: T0 - 1, role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "current_time", arguments: "{}" } }] });
    state.live.push({ id: "t-tool", at: T0 - 1, role: "tool", tool_call_id: "c1", content: "12:00" });
    await turn(engineWith(llm, service, clock), [checkinEntry(clock.now - 4 * HOUR, 1), checkinEntry(clock.now, 2)], state);
    expect(llm.requests).toHaveLength(1);
    const [request] = llm.requests;
    expect(request!.tools).toBeUndefined();
    const contents = request!.messages.map((message) => String(message.content));
    expect(contents[0]).toContain("careful assistant");
    expect(contents[1]).toContain("Summary: Ada is applying");
    expect(contents.at(-1)).toContain("[Check-in r7");
    expect(request!.messages.some((message) => message.role === "tool")).toBe(false);
    // The newest plain messages, in order, within ~2,000 tokens: a few dozen of the 400.
    const recent = contents.slice(2, -1);
    expect(recent.at(-1)).toContain("message 399");
    expect(recent.length).toBeGreaterThan(10);
    expect(recent.length).toBeLessThan(60);
    expect(llm.promptTokens[0]).toBeLessThan(3_000);
  });

  it("a simulated week: tokens per day stay flat while the history grows, and fall to 0 once it pauses itself", async () => {
    // Ada writes during the day for four days (a deadline on day 3); check-ins every 4 hours.
    const llm = sizedLlm((request) => {
      // Worth a message once the deadline was mentioned, and not again after saying it.
      const recent = JSON.stringify(request.messages.slice(-4));
      return recent.includes("deadline is on") && !recent.includes("bank statement in?") ? "The visa deadline is Thursday: is the bank statement in?" : CHECKIN_SILENT;
    });
    const { service, paused } = recordingSchedule();
    const clock = { now: T0 };
    let state = freshState();
    history(state, 0, T0);
    const perDay = new Array<number>(7).fill(0);
    const posted: number[] = [];
    let sequence = 0;
    // Hour by hour: Ada writes 09:00–18:00 on the first four days; a check-in every 4 hours.
    for (let hour = 0; hour < 7 * 24; hour++) {
      const day = Math.floor(hour / 24);
      const time = hour % 24;
      clock.now = T0 + hour * HOUR;
      if (day < 4 && time >= 9 && time <= 18) {
        const text = day === 2 && time === 18 ? "the visa deadline is on Thursday" : `note ${day}.${time}: ${"details ".repeat(700)}`;
        state.live.push({ id: `u${sequence++}`, at: clock.now, role: "user", content: text }, { id: `a${sequence++}`, at: clock.now, role: "assistant", content: `noted ${day}.${time} ${"ok ".repeat(200)}` });
      }
      if (time % 4 !== 2 || paused.length > 0) continue; // the firing skips a paused item
      clock.now += 30 * 60_000 + 1; // at hh:30, past the idle wait after a message at hh:00
      const calls = llm.requests.length;
      const result = await turn(engineWith(llm, service, clock, 6), [checkinEntry(clock.now, sequence++)], state);
      state = result.state;
      if (llm.requests.length > calls) perDay[day]! += llm.promptTokens.at(-1)! + 20;
      if (result.replies.some((reply) => reply.kind === "answer")) posted.push(day);
    }
    const historyTokens = Math.ceil(JSON.stringify(state.live).length / 4);
    console.info(`check-in tokens per day over a simulated week (history ${historyTokens.toLocaleString("en-US")} tokens at the end): ${perDay.join(", ")}; posted on day ${posted.join(", ")}; paused: ${paused.length > 0}`);
    expect(historyTokens).toBeGreaterThan(60_000);
    // At most 6 runs a day, each ≤ ~3K tokens however long the history: ≤ 18K a day, against a
    // history many times that (a run on the whole history would cost it each time).
    for (const tokens of perDay) expect(tokens).toBeLessThanOrEqual(18_000);
    expect(posted).toEqual([2]);
    // Quiet after the last activity (day 3, 18:00): six quiet runs, then it pauses and costs nothing.
    expect(paused).toEqual(["r7"]);
    expect(perDay.slice(5)).toEqual([0, 0]);
  });
});
