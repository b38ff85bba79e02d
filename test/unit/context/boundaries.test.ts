import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../../../src/core/messages.js";
import { findBoundaries, headEndOf } from "../../../src/context/boundaries.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

// 1 token per character keeps the arithmetic readable; every message also costs 4 tokens of overhead.
const counter = createTokenCounter("test-chars", (text) => text.length);

const system = (id: string): ChatMessage => ({ id, role: "system", content: "S" });
const user = (id: string, size = 6): ChatMessage => ({ id, role: "user", content: "u".repeat(size) });
const reply = (id: string, size = 6): ChatMessage => ({ id, role: "assistant", content: "a".repeat(size) });
const calls = (id: string, ...callIds: string[]): ChatMessage => ({
  id,
  role: "assistant",
  content: "",
  tool_calls: callIds.map((callId) => ({ id: callId, type: "function", function: { name: "t", arguments: "" } })),
});
const result = (id: string, callId: string, size = 6): ChatMessage => ({ id, role: "tool", tool_call_id: callId, content: "r".repeat(size) });
const summary = (id: string): ChatMessage => ({ id, role: "user", content: "summary", kind: "summary" });

const options = (tailBudgetTokens: number, protectLastN = 20) => ({ counter, tailBudgetTokens, protectLastN });

describe("head", () => {
  it("is the system prompt and the first exchange before the first compaction", () => {
    expect(headEndOf([system("m1"), user("m2"), reply("m3"), user("m4")], true)).toBe(3);
  });
  it("is the system prompt and the first request when nothing has answered it yet (a first message too big for the window)", () => {
    expect(headEndOf([system("m1"), user("m2")], true)).toBe(2);
    expect(findBoundaries([system("m1"), user("m2", 50_000)], options(100))).toMatchObject({ headEnd: 2, keptStart: 2 });
  });
  it("leaves a first reply that starts a tool loop to the middle", () => {
    expect(headEndOf([system("m1"), user("m2"), calls("m3", "c1"), result("m4", "c1")], true)).toBe(2);
  });
  it("keeps the running turn's request when a long first turn was already compacted (it sits before the summary)", () => {
    // One long turn: the first in-loop compaction left [system, request, summary, tool loop…]. The
    // next compaction folds the summary and the older steps, never the request the turn answers.
    const messages = [
      system("m1"), user("m2"), summary("m9"),
      calls("m10", "c1"), result("m11", "c1", 300), calls("m12", "c2"), result("m13", "c2", 300), calls("m14", "c3"), result("m15", "c3"),
    ];
    const boundaries = findBoundaries(messages, options(40, 0));
    expect(boundaries.headEnd).toBe(2);
    expect(boundaries.summaryIndex).toBe(2);
    expect(boundaries.keptStart).toBe(7);
    const middle = messages.slice(boundaries.headEnd, boundaries.keptStart);
    expect(middle.map((message) => message.id)).toEqual(["m9", "m10", "m11", "m12", "m13"]);
  });

  it("is the system prompt alone once a summary exists", () => {
    const messages = [system("m1"), user("m2"), reply("m3"), summary("m9"), user("m10"), reply("m11"), user("m12")];
    expect(findBoundaries(messages, options(1_000)).headEnd).toBe(1);
  });
});

describe("tail", () => {
  // 10 tokens per message (6 chars + 4 overhead).
  const session = [system("m1"), user("m2"), reply("m3"), user("m4"), reply("m5"), user("m6"), reply("m7"), user("m8"), reply("m9"), user("m10"), reply("m11")];

  it("walks back from the end within the token budget", () => {
    const boundaries = findBoundaries(session, options(40, 0));
    expect(boundaries.protectedStart).toBe(7);
    expect(boundaries.keptStart).toBe(7);
    expect(boundaries.headEnd).toBe(3);
  });

  it("keeps protect_last_n messages while within 1.5× the budget, not beyond", () => {
    expect(findBoundaries(session, options(40, 20)).protectedStart).toBe(5); // 60 tokens = 1.5 × 40
    expect(findBoundaries(session, options(40, 5)).protectedStart).toBe(6);
  });

  it("always keeps the last user message and everything after it", () => {
    const messages = [system("m1"), user("m2"), reply("m3"), reply("m4"), user("m5"), calls("m6", "c1"), result("m7", "c1", 500), calls("m8", "c2"), result("m9", "c2", 20)];
    const boundaries = findBoundaries(messages, options(40, 0));
    expect(boundaries.protectedStart).toBe(7);
    expect(boundaries.keptStart).toBe(4);
  });

  it("always keeps the newest group, however big", () => {
    const messages = [system("m1"), user("m2"), reply("m3"), user("m4"), calls("m5", "c1", "c2"), result("m6", "c1", 5_000), result("m7", "c2", 5_000)];
    expect(findBoundaries(messages, options(40, 0)).protectedStart).toBe(4);
  });

  it("never splits a tool call from its results", () => {
    const messages = [
      system("m1"), user("m2"), reply("m3"), user("m4"),
      calls("m5", "c1", "c2", "c3"), result("m6", "c1"), result("m7", "c2"), result("m8", "c3"),
      reply("m9"),
    ];
    // 30 tokens would fit m9 and two results, but the group m5..m8 goes whole or not at all.
    const boundaries = findBoundaries(messages, options(30, 0));
    expect(boundaries.protectedStart).toBe(8);
    expect(boundaries.keptStart).toBe(3);
    const groupTokens = [4, 5, 6, 7, 8].reduce((sum, index) => sum + counter.countMessage(messages[index]!), 0);
    expect(findBoundaries(messages, options(groupTokens, 0)).protectedStart).toBe(4);
    expect(findBoundaries(messages, options(groupTokens - 1, 0)).protectedStart).toBe(8);
  });

  it("puts the previous summary in the middle, never in the tail", () => {
    const messages = [system("m1"), summary("m9"), user("m10"), reply("m11"), user("m12"), reply("m13")];
    const boundaries = findBoundaries(messages, options(10_000));
    expect(boundaries.summaryIndex).toBe(1);
    expect(boundaries.protectedStart).toBe(2);
    expect(boundaries.keptStart).toBe(2);
  });
});
