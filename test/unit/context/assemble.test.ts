import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/messages.js";
import {
  COMPACTION_NOTE,
  STUB_TOOL_RESULT,
  SUMMARY_END_MARKER,
  SUMMARY_HEADER,
  assemble,
  chooseSummaryRole,
  extractSummaryText,
  fixSummaryRoles,
  sanitizeToolPairs,
  summaryMessageContent,
  withCompactionNote,
} from "../../../src/context/assemble.js";

const system: ChatMessage = { id: "m1", role: "system", content: "You are longhaul." };
const user = (id: string): ChatMessage => ({ id, role: "user", content: `question ${id}` });
const reply = (id: string): ChatMessage => ({ id, role: "assistant", content: `answer ${id}` });
const calls = (id: string, ...callIds: string[]): ChatMessage => ({
  id,
  role: "assistant",
  content: null,
  tool_calls: callIds.map((callId) => ({ id: callId, type: "function", function: { name: "t", arguments: "{}" } })),
});
const result = (id: string, callId: string): ChatMessage => ({ id, role: "tool", tool_call_id: callId, content: `result ${callId}` });

describe("the system note", () => {
  it("is appended once and never again", () => {
    const once = withCompactionNote(system) as Extract<ChatMessage, { role: "system" }>;
    expect(once.content).toBe(`You are longhaul.\n\n${COMPACTION_NOTE}`);
    expect(once.id).toBe("m1");
    expect(withCompactionNote(once)).toBe(once);
  });
});

describe("the summary message", () => {
  it("frames the summary as reference material with an end marker, and unwraps back to the bare summary", () => {
    const content = summaryMessageContent("## Goal\nShip it");
    expect(content.startsWith(SUMMARY_HEADER)).toBe(true);
    expect(content.endsWith(SUMMARY_END_MARKER)).toBe(true);
    expect(SUMMARY_END_MARKER).toMatch(/latest user message/);
    expect(extractSummaryText(content)).toBe("## Goal\nShip it");
  });

  it.each([
    ["system", "user", "user"],
    ["system", "assistant", "user"],
    ["user", "user", "assistant"],
    ["user", "assistant", "user"],
    ["assistant", "user", "user"],
    ["assistant", "assistant", "user"],
  ] as const)("between %s and %s is a %s message", (before, after, expected) => {
    const message = (role: "system" | "user" | "assistant"): ChatMessage =>
      role === "system" ? system : role === "user" ? user("m5") : reply("m6");
    expect(chooseSummaryRole(message(before), message(after))).toBe(expected);
  });

  it("sits between head and kept messages with a fresh id and kind summary", () => {
    const kept = [user("m8"), reply("m9")];
    const output = assemble({ head: [system], summary: { id: "m20", text: "## Goal\nx", at: 5 }, kept, addNote: true });
    expect(output).toHaveLength(4);
    expect(output[0]!.content).toContain(COMPACTION_NOTE);
    expect(output[1]).toMatchObject({ id: "m20", role: "user", kind: "summary", at: 5 });
    expect(output[2]).toBe(kept[0]);
    expect(output[3]).toBe(kept[1]);
  });
});

describe("sanitizeToolPairs", () => {
  const ids = () => {
    let next = 100;
    return () => `m${next++}`;
  };

  it("leaves a valid sequence as it is", () => {
    const messages = [system, user("m2"), calls("m3", "c1", "c2"), result("m4", "c2"), result("m5", "c1"), reply("m6")];
    const output = sanitizeToolPairs(messages, ids());
    expect(output).toEqual({ messages, droppedResults: 0, movedResults: 0, stubbedCalls: 0, stubs: [] });
    output.messages.forEach((message, index) => expect(message).toBe(messages[index]));
  });

  it("drops results whose call is gone, and duplicates", () => {
    const messages = [system, user("m2"), result("m3", "c0"), calls("m4", "c1"), result("m5", "c1"), result("m6", "c1"), result("m7", "c9"), reply("m8")];
    const output = sanitizeToolPairs(messages, ids());
    expect(output.messages.map((message) => message.id)).toEqual(["m1", "m2", "m4", "m5", "m8"]);
    expect(output.droppedResults).toBe(3);
  });

  it("gives calls whose result is gone a stub result right after them, and returns the stubs to store", () => {
    const messages = [system, user("m2"), calls("m3", "c1", "c2"), result("m4", "c2"), user("m5"), calls("m6", "c3"), reply("m7")];
    const output = sanitizeToolPairs(messages, ids());
    expect(output.messages.map((message) => message.id)).toEqual(["m1", "m2", "m3", "m4", "m100", "m5", "m6", "m101", "m7"]);
    expect(output.messages[4]).toEqual({ id: "m100", role: "tool", tool_call_id: "c1", content: STUB_TOOL_RESULT });
    expect(output).toMatchObject({ droppedResults: 0, movedResults: 0, stubbedCalls: 2 });
    expect(output.stubs.map((stub) => stub.id)).toEqual(["m100", "m101"]);
  });

  it("moves a result found away from its call (after other messages, or before the call) back after it", () => {
    const messages = [system, result("m2", "c2"), user("m3"), calls("m4", "c1", "c2"), result("m5", "c1"), user("m6"), result("m7", "c1"), reply("m8")];
    const output = sanitizeToolPairs(messages, ids());
    // c1 is answered right after its call (m5); c2's result came before the call and moves after it; m7 repeats c1 and goes.
    expect(output.messages.map((message) => message.id)).toEqual(["m1", "m3", "m4", "m5", "m2", "m6", "m8"]);
    expect(output).toMatchObject({ droppedResults: 1, movedResults: 1, stubbedCalls: 0, stubs: [] });
  });
});

describe("a context without a system prompt", () => {
  it("gets no compaction note: the opening user message stays exactly as the user wrote it", () => {
    const opening = user("m1");
    const output = assemble({ head: [opening], summary: { id: "m9", text: "## Goal\nx" }, kept: [user("m3")], addNote: true });
    expect(output[0]).toBe(opening);
    expect(output.map((message) => message.id)).toEqual(["m1", "m9", "m3"]);
  });
});

describe("fixSummaryRoles", () => {
  it("gives a summary left after the system prompt the user role, and leaves valid ones as they are", () => {
    const summary: ChatMessage = { id: "s1", role: "assistant", kind: "summary", content: summaryMessageContent("the gist"), at: 5 };
    // The turn before the summary was dropped: an assistant message may not open the history.
    const fixed = fixSummaryRoles([system, summary, user("m3")]);
    expect(fixed[1]).toEqual({ id: "s1", role: "user", kind: "summary", content: summary.content, at: 5 });
    const valid = [system, user("m2"), summary, user("m3")];
    const same = fixSummaryRoles(valid);
    expect(same).toEqual(valid);
    expect(same[2]).toBe(summary);
  });

  it("gives a user-voiced summary between two user messages the assistant role, keeping its id, date and cached count", () => {
    const summary: ChatMessage = { id: "s1", role: "user", kind: "summary", content: summaryMessageContent("the gist"), at: 7, tokens: { encoding: "o200k_base", count: 42 } };
    const fixed = fixSummaryRoles([system, user("m2"), summary, user("m4")]);
    expect(fixed[2]).toEqual({ id: "s1", role: "assistant", kind: "summary", content: summary.content, at: 7, tokens: { encoding: "o200k_base", count: 42 } });
    // Without a date or a count, none is invented.
    const bare: ChatMessage = { id: "s2", role: "user", kind: "summary", content: "x" };
    expect(fixSummaryRoles([system, user("m2"), bare])[2]).toEqual({ id: "s2", role: "assistant", kind: "summary", content: "x" });
  });

  it("keeps a summary between a user message and an assistant message in the user's voice (neither role alternates)", () => {
    const summary: ChatMessage = { id: "s1", role: "assistant", kind: "summary", content: "x" };
    expect(fixSummaryRoles([system, user("m2"), summary, reply("m4")])[2]).toEqual({ id: "s1", role: "user", kind: "summary", content: "x" });
  });

  it("never changes the role of a message that is not a summary", () => {
    const history = [system, reply("m2"), user("m3"), user("m4"), user("m5")];
    const fixed = fixSummaryRoles(history);
    expect(fixed).toEqual(history);
    fixed.forEach((message, index) => expect(message).toBe(history[index]));
  });
});
