import { describe, expect, it } from "vitest";
import type { ChatMessage, ToolMessage } from "../../../src/core/messages.js";
import {
  PRUNE_MIN_CHARS,
  cutGroupToFit,
  cutTextToTokens,
  extractRecallId,
  prunedPlaceholder,
  pruneToolResults,
  shortenArguments,
  sliceSafely,
} from "../../../src/context/prune.js";
import { createTokenCounter } from "../../../src/context/tokens.js";

const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));

const call = (id: string, name: string, args: Record<string, unknown>) => ({
  id,
  type: "function" as const,
  function: { name, arguments: JSON.stringify(args) },
});

describe("prunedPlaceholder", () => {
  it("names the tool, its shortened arguments, the original size and the recall id", () => {
    const result: ToolMessage = { id: "m17", role: "tool", tool_call_id: "c1", content: "x".repeat(12_345) };
    const text = prunedPlaceholder(result, call("c1", "read_file", { path: "src/a.ts" }));
    expect(text).toBe('[tool output pruned: read_file {"path":"src/a.ts"} · 12,345 chars · recall("m17") to fetch it]');
    expect(extractRecallId(text)).toBe("m17");
  });

  it("keeps pointing at the original when a cut result is pruned later", () => {
    const result: ToolMessage = { id: "m20", role: "tool", tool_call_id: "c1", content: "y".repeat(500), kind: "truncated", originalId: "m20" };
    expect(extractRecallId(prunedPlaceholder(result, undefined))).toBe("m20");
    expect(prunedPlaceholder(result, undefined)).toContain("unknown tool");
  });

  it("shortens long argument values and caps the whole", () => {
    expect(shortenArguments(JSON.stringify({ query: "q".repeat(300), limit: 5 }))).toBe(`{"query":"${"q".repeat(40)}…","limit":5}`);
    expect(shortenArguments(JSON.stringify({ a: "1".repeat(39), b: "2".repeat(39), c: "3".repeat(39) })).length).toBeLessThanOrEqual(101);
    expect(shortenArguments("not json\n  at all")).toBe("not json at all");
  });

  it("extracts nothing from text without a recall id", () => {
    expect(extractRecallId("plain tool output")).toBeUndefined();
  });
});

describe("pruneToolResults", () => {
  const messages: ChatMessage[] = [
    { id: "m1", role: "system", content: "sys" },
    { id: "m2", role: "user", content: "read two files" },
    { id: "m3", role: "assistant", content: null, tool_calls: [call("c1", "read_file", { path: "a.ts" }), call("c2", "read_file", { path: "b.ts" })] },
    { id: "m4", role: "tool", tool_call_id: "c1", content: "a".repeat(PRUNE_MIN_CHARS + 1) },
    { id: "m5", role: "tool", tool_call_id: "c2", content: "b".repeat(PRUNE_MIN_CHARS) },
    { id: "m6", role: "assistant", content: "done" },
    { id: "m7", role: "tool", tool_call_id: "c9", content: "z".repeat(1_000) },
  ];

  it("replaces only results over 200 chars inside the range, keeping id, place and call id", () => {
    const before = structuredClone(messages);
    const result = pruneToolResults(messages, { from: 1, to: 6 }, counter);
    expect(result.prunedMessages).toBe(1);
    const pruned = result.messages[3] as ToolMessage;
    expect(pruned).toMatchObject({ id: "m4", role: "tool", tool_call_id: "c1", kind: "pruned", originalId: "m4" });
    expect(extractRecallId(pruned.content)).toBe("m4");
    expect(pruned.content).toContain("read_file");
    // Untouched messages are the same objects; the result outside the range stays.
    expect(result.messages[4]).toBe(messages[4]);
    expect(result.messages[6]).toBe(messages[6]);
    expect(result.prunedTokens).toBe(counter.countMessage(messages[3]!) - counter.countMessage(pruned));
    // The input is not mutated (apart from the token-count cache).
    const withoutCounts = (list: ChatMessage[]) => list.map(({ tokens: _count, ...rest }) => rest);
    expect(withoutCounts(messages)).toEqual(withoutCounts(before));
  });

  it("does not prune a placeholder twice", () => {
    const once = pruneToolResults(messages, { from: 0, to: messages.length }, counter);
    const twice = pruneToolResults(once.messages, { from: 0, to: messages.length }, counter);
    expect(twice.prunedMessages).toBe(0);
  });
});

describe("cut to fit", () => {
  it("keeps the head and the end of a text within the token limit and names the recall id", () => {
    const text = Array.from({ length: 2_000 }, (_, index) => `line ${index}`).join("\n");
    const cut = cutTextToTokens(text, 200, counter, (shown) => `[… ${shown} shown · recall("m9") …]`);
    expect(counter.countText(cut)).toBeLessThanOrEqual(200);
    expect(cut.startsWith("line 0\n")).toBe(true);
    expect(cut.endsWith("line 1999")).toBe(true);
    expect(extractRecallId(cut)).toBe("m9");
  });

  it("never splits a surrogate pair", () => {
    const text = "😀😀😀";
    expect(sliceSafely(text, 0, 3)).toBe("😀");
    expect(sliceSafely(text, 1, 6)).toBe("😀😀");
  });

  it("water-fills a group: small results stay whole, big ones share the rest", () => {
    const group: ChatMessage[] = [
      { id: "m10", role: "assistant", content: null, tool_calls: [call("c1", "ls", {}), call("c2", "cat", {}), call("c3", "cat", {})] },
      { id: "m11", role: "tool", tool_call_id: "c1", content: "s".repeat(400) },
      { id: "m12", role: "tool", tool_call_id: "c2", content: "b".repeat(20_000) },
      { id: "m13", role: "tool", tool_call_id: "c3", content: "c".repeat(40_000) },
    ];
    const maxTokens = 2_000;
    const { messages, cutMessages } = cutGroupToFit(group, maxTokens, counter);
    expect(cutMessages).toBe(2);
    expect(messages[1]).toBe(group[1]);
    expect(messages.reduce((sum, message) => sum + counter.countMessage(message), 0)).toBeLessThanOrEqual(maxTokens);
    for (const [index, id] of [[2, "m12"], [3, "m13"]] as const) {
      expect(messages[index]).toMatchObject({ id, kind: "truncated", originalId: id });
      expect(extractRecallId((messages[index] as ToolMessage).content)).toBe(id);
      expect(messages[index]!.tokens?.count).not.toBe(group[index]!.tokens?.count);
    }
  });

  it("leaves a group that fits untouched", () => {
    const group: ChatMessage[] = [{ id: "m1", role: "tool", tool_call_id: "c1", content: "ok" }];
    expect(cutGroupToFit(group, 100, counter)).toEqual({ messages: group, cutMessages: 0 });
  });
});
