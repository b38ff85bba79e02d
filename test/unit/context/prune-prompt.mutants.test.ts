/**
 * The newest group's water-filling cut, the clipping helpers and what the summarizer reads,
 * against the mutants StrykerJS left alive in prune.ts and summary-prompt.ts (docs/benchmarks.md,
 * "Mutation testing").
 */
import { describe, expect, it } from "vitest";
import type { ChatMessage, ToolCall } from "../../../src/core/messages.js";
import { clipMiddle, cutGroupToFit, cutTextToTokens, FOLD_TOOL_MAX_CHARS, PRUNE_MIN_CHARS, pruneToolResults, shortenArguments, sliceSafely } from "../../../src/context/prune.js";
import { buildSummaryMessages, serializeMessage, summaryBudget } from "../../../src/context/summary-prompt.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

const counter = createTokenCounter("test-chars", (text) => text.length);
const call = (id: string, args = "{}"): ToolCall => ({ id, type: "function", function: { name: "read_file", arguments: args } });

describe("cutting the newest group to fit", () => {
  const group = (...sizes: number[]): ChatMessage[] => [
    { id: "a", role: "assistant", content: null, tool_calls: sizes.map((_, index) => call(`c${index}`)) },
    ...sizes.map((size, index): ChatMessage => ({ id: `r${index}`, role: "tool", tool_call_id: `c${index}`, content: "x".repeat(size) })),
  ];

  it("keeps a group that fits exactly, and one with nothing to cut", () => {
    const fits = group(100, 100);
    const total = counter.countMessages(fits);
    expect(cutGroupToFit(fits, total, counter)).toEqual({ messages: fits, cutMessages: 0 });
    const noResults: ChatMessage[] = [{ id: "u", role: "user", content: "y".repeat(5_000) }];
    expect(cutGroupToFit(noResults, 100, counter)).toEqual({ messages: noResults, cutMessages: 0 });
  });

  it("small results stay whole and the big ones share the rest, in their places, under the limit", () => {
    const messages = group(9_000, 200, 6_000);
    const result = cutGroupToFit(messages, 4_000, counter);
    expect(result.cutMessages).toBe(2);
    expect(result.messages.map((message) => message.id)).toEqual(["a", "r0", "r1", "r2"]);
    expect(result.messages[2]).toBe(messages[2]);
    expect([result.messages[1]!.kind, result.messages[3]!.kind]).toEqual(["truncated", "truncated"]);
    const total = counter.countMessages(result.messages);
    expect(total).toBeLessThanOrEqual(4_000);
    // Water-filling: the two cut results end up the same size, within the notes' length, and
    // together with the whole one they use nearly all of the limit.
    const [first, second] = [result.messages[1]!, result.messages[3]!].map((message) => (message.content ?? "").length);
    expect(Math.abs(first! - second!)).toBeLessThan(20);
    expect(total).toBeGreaterThan(3_500);
  });
});

describe("cutting the newest group to fit, at the edges of a share", () => {
  it("a result exactly as big as its share stays whole (the same message), only the bigger one is cut", () => {
    const S = 500;
    const messages: ChatMessage[] = [
      { id: "a", role: "assistant", content: null, tool_calls: [call("c1"), call("c2")] },
      { id: "r1", role: "tool", tool_call_id: "c1", content: "s".repeat(S) },
      { id: "r2", role: "tool", tool_call_id: "c2", content: "b".repeat(10 * S) },
    ];
    const overhead = messages.reduce((sum, message) => sum + counter.countMessage(message), 0) - 11 * S;
    // What the results may share: 2S + 1, so the smaller one's share is exactly S.
    const result = cutGroupToFit(messages, overhead + 2 * S + 1, counter);
    expect(result.cutMessages).toBe(1);
    expect(result.messages[1]).toBe(messages[1]);
    expect(result.messages[2]).toMatchObject({ id: "r2", kind: "truncated" });
    expect(counter.countText(result.messages[2]!.content!)).toBeLessThanOrEqual(S + 1);
  });

  it("a text exactly at its token limit is returned whole; one token over is cut with its note", () => {
    const note = (shown: number) => `[${shown} shown]`;
    expect(cutTextToTokens("t".repeat(300), 300, counter, note)).toBe("t".repeat(300));
    const cut = cutTextToTokens("t".repeat(301), 300, counter, note);
    expect(cut).toMatch(/\[\d+ shown\]/);
    expect(counter.countText(cut)).toBeLessThanOrEqual(300);
  });
});

describe("clipping text", () => {
  it("keeps two thirds from the head and one third from the tail, and text within the limit whole", () => {
    expect(clipMiddle("abcdefghij", 10, () => "…")).toBe("abcdefghij");
    expect(clipMiddle("abcdefghijkl", 9, (shown) => `[${shown}]`)).toBe("abcdef\n[9]\njkl");
  });

  it("never splits a surrogate pair, at either end", () => {
    const text = "a😀b😀c";
    expect(sliceSafely(text, 2, text.length)).toBe("b😀c");
    expect(sliceSafely(text, 0, 2)).toBe("a");
    expect(sliceSafely(text, 0, text.length)).toBe(text);
  });
});

describe("what the summarizer reads", () => {
  const tools = new Map([["c1", "read_file"]]);

  it("a call's arguments over 1,000 characters are clipped head and tail with a visible mark where they were cut", () => {
    const args = JSON.stringify({ text: `${"h".repeat(800)}${"t".repeat(800)}` });
    const line = serializeMessage({ id: "m2", role: "assistant", content: null, tool_calls: [call("c1", args)] }, new Map()).split("\n").slice(1).join("\n");
    expect(line).toContain('→ calls read_file {"text":"hhh');
    expect(line.endsWith('ttt"}')).toBe(true);
    expect(line).toMatch(/h\n…\nt/);
  });

  it("every role labelled, a tool call with its arguments, a result with its tool's name or 'unknown tool'", () => {
    expect(serializeMessage({ id: "m1", role: "system", content: "be brief" }, tools)).toBe("[m1] system: be brief");
    expect(serializeMessage({ id: "m2", role: "assistant", content: "checking", tool_calls: [call("c1", '{"path":"a.ts"}')] }, tools)).toBe('[m2] assistant: checking\n  → calls read_file {"path":"a.ts"}');
    expect(serializeMessage({ id: "m3", role: "tool", tool_call_id: "c1", content: "ok" }, tools)).toBe("[m3] tool result (read_file): ok");
    expect(serializeMessage({ id: "m4", role: "tool", tool_call_id: "zz", content: "ok" }, tools)).toBe("[m4] tool result (unknown tool): ok");
    expect(serializeMessage({ id: "m5", role: "user", content: "hi", at: Date.UTC(2026, 11, 1, 10, 44) }, tools)).toMatch(/^\[m5\] Tue 2026-12-01 10:44 .*· user: hi$/);
  });

  it("names the part only when a fold takes several, and a focus only when one was given", () => {
    const user = (input: Parameters<typeof buildSummaryMessages>[0]) => buildSummaryMessages(input)[1]!.content ?? "";
    expect(user({ turns: "T", targetTokens: 100, part: { index: 1, count: 1 } })).toContain("<turns>\nT\n</turns>");
    expect(user({ turns: "T", targetTokens: 100, part: { index: 2, count: 3 } })).toContain('<turns part="2 of 3">');
    expect(user({ turns: "T", targetTokens: 100 })).toContain("<turns>\nT\n</turns>");
    expect(user({ turns: "T", targetTokens: 100, focus: "   " })).not.toContain("Focus:");
    expect(user({ turns: "T", targetTokens: 100, focus: "  billing  " })).toContain('focus the summary on "billing".');
  });

  it("a window of 64K or more gets the smaller share", () => {
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 63_999 })).toBe(6_399);
    expect(summaryBudget({ middleTokens: 1_000_000, contextWindow: 64_000 })).toBe(3_200);
  });
});

describe("a pruned result's placeholder, at its edges", () => {
  it("shows an argument value of exactly 40 characters whole, and one of 41 cut to 40 with an ellipsis", () => {
    expect(shortenArguments(JSON.stringify({ path: "p".repeat(40) }))).toBe(`{"path":"${"p".repeat(40)}"}`);
    expect(shortenArguments(JSON.stringify({ path: "p".repeat(41) }))).toBe(`{"path":"${"p".repeat(40)}…"}`);
  });

  it("shortens the values inside lists and nested objects, and keeps their shape", () => {
    expect(shortenArguments(JSON.stringify({ files: ["a".repeat(50), "b.ts"] }))).toBe(`{"files":["${"a".repeat(40)}…","b.ts"]}`);
    expect(shortenArguments(JSON.stringify({ options: { pattern: "c".repeat(45), depth: 2, follow: null } }))).toBe(`{"options":{"pattern":"${"c".repeat(40)}…","depth":2,"follow":null}}`);
  });

  it("shows arguments of exactly 100 characters whole, and caps longer ones at 100 plus an ellipsis", () => {
    // A backend that sends arguments as plain text: shown as they are, whitespace collapsed.
    expect(shortenArguments("x".repeat(100))).toBe("x".repeat(100));
    expect(shortenArguments("x".repeat(101))).toBe(`${"x".repeat(100)}…`);
    const json = JSON.stringify({ a: "1".repeat(40), b: "2".repeat(36), c: 1234 });
    expect(json).toHaveLength(100);
    expect(shortenArguments(json)).toBe(json);
  });
});

describe("what pruning reports and what a cut keeps", () => {
  it("reports the tokens a placeholder saved for a result already counted in the session (its cached count belongs to the old text)", () => {
    const result: ChatMessage = { id: "r1", role: "tool", tool_call_id: "c1", content: "z".repeat(5_000) };
    const messages: ChatMessage[] = [{ id: "a", role: "assistant", content: null, tool_calls: [call("c1")] }, result];
    const before = counter.countMessage(result);
    const pruned = pruneToolResults(messages, { from: 0, to: 2 }, counter);
    const placeholder = pruned.messages[1]!;
    expect(placeholder.kind).toBe("pruned");
    expect(placeholder.content!.length).toBeLessThan(200);
    expect(counter.countMessage(placeholder)).toBeLessThan(200);
    expect(pruned.prunedTokens).toBe(before - counter.countMessage(placeholder));
    expect(pruned.prunedTokens).toBeGreaterThan(4_800);
  });

  it("a result cut to fit a limit smaller than the rest of its group still keeps the head of its output", () => {
    // The assistant's own text takes the whole limit: the result gets the minimum, not nothing.
    const messages: ChatMessage[] = [
      { id: "a", role: "assistant", content: "w".repeat(3_000), tool_calls: [call("c1")] },
      { id: "r1", role: "tool", tool_call_id: "c1", content: `HEAD-OF-OUTPUT ${"o".repeat(20_000)}` },
    ];
    const quarters = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));
    const result = cutGroupToFit(messages, 500, quarters);
    expect(result.cutMessages).toBe(1);
    const cut = result.messages[1]!.content!;
    expect(quarters.countText(cut)).toBeLessThanOrEqual(64);
    expect(cut.startsWith("HEAD-OF-OUTPUT")).toBe(true);
    expect(cut).toContain('recall("r1")');
  });
});

describe("a pruned result, pruned again, and what a cut shows", () => {
  it("a placeholder longer than PRUNE_MIN_CHARS (a long tool name) is left alone the next time: its fold text still reads the original", () => {
    const name = `mcp__warehouse__${"inventory_".repeat(10)}`;
    const longCall: ToolCall = { id: "c1", type: "function", function: { name, arguments: JSON.stringify({ query: "q".repeat(300), region: "r".repeat(300) }) } };
    const original = `ORIGINAL-HEAD ${"o".repeat(9_000)}`;
    const messages: ChatMessage[] = [{ id: "a", role: "assistant", content: null, tool_calls: [longCall] }, { id: "r1", role: "tool", tool_call_id: "c1", content: original }];
    const once = pruneToolResults(messages, { from: 0, to: 2 }, counter);
    expect(once.messages[1]!.content!.length).toBeGreaterThan(PRUNE_MIN_CHARS);
    expect(once.messages[1]!.foldText).toContain("ORIGINAL-HEAD");
    const twice = pruneToolResults(once.messages, { from: 0, to: 2 }, counter);
    expect(twice).toMatchObject({ prunedMessages: 0, prunedTokens: 0 });
    expect(twice.messages[1]).toBe(once.messages[1]);
  });

  it("the summarizer's copy of a pruned result is its head and tail, with how much was left out and the recall id", () => {
    const messages: ChatMessage[] = [{ id: "a", role: "assistant", content: null, tool_calls: [call("c1")] }, { id: "r1", role: "tool", tool_call_id: "c1", content: "z".repeat(10_000) }];
    const foldText = pruneToolResults(messages, { from: 0, to: 2 }, counter).messages[1]!.foldText!;
    expect(foldText).toContain(`\n[… ${10_000 - FOLD_TOOL_MAX_CHARS} chars omitted; recall("r1") for all …]\n`);
    expect(foldText.replace(/\n\[…[^\]]*\]\n/, "")).toBe("z".repeat(FOLD_TOOL_MAX_CHARS));
  });

  it("a cut uses its room: it shrinks in small steps until it fits, not to nothing", () => {
    const cut = cutTextToTokens("t".repeat(20_000), 1_000, counter, (shown) => `[… ${shown} shown …]`);
    expect(counter.countText(cut)).toBeLessThanOrEqual(1_000);
    expect(counter.countText(cut)).toBeGreaterThanOrEqual(800);
  });

  it("a limit smaller than the note itself still ends: the note alone comes back, naming what was cut", () => {
    const cut = cutTextToTokens("t".repeat(5_000), 5, counter, (shown) => `[… ${shown} of 5,000 chars shown …]`);
    expect(cut).toBe("\n[… 0 of 5,000 chars shown …]\n");
  });

  it("a cut result's note offers the full output; a cut user message's, the whole message", () => {
    const tool = cutGroupToFit([{ id: "a", role: "assistant", content: null, tool_calls: [call("c1")] }, { id: "r1", role: "tool", tool_call_id: "c1", content: "x".repeat(5_000) }], 1_000, counter);
    expect(tool.messages[1]!.content).toContain('recall("r1") for the full output …]');
    const user = cutGroupToFit([{ id: "u1", role: "user", content: "y".repeat(5_000) }], 1_000, counter, new Set(["user"]));
    expect(user.messages[0]!.content).toContain('recall("u1") for the whole message …]');
  });
});
