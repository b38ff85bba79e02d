/**
 * A message cut a second time (c289312) at its edges (issue #31 item 7, survivors of prune.ts's
 * Stryker run at 5944c67): the second cut shows a piece of the first cut's head and a piece of
 * its tail, never the first note nor the line break that joins them, even when the two thirds /
 * one third split would reach past what the first cut shows on one side.
 */
import { describe, expect, it } from "vitest";
import { cutGroupToFit } from "../../../src/context/prune.js";
import { createTokenCounter } from "../../../src/context/tokens.js";
import type { ChatMessage, ToolMessage, UserMessage } from "../../../src/core/messages.js";

const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));
const USER = new Set(["user"] as const);
const BOTH = new Set(["user", "tool"] as const);
const NOTE_LINE = /\n\[… cut to fit the context: ([\d,]+) of ([\d,]+) chars shown · recall\("m3"\) for the whole message …\]\n/;

const rows = (count: number, tag: string) => Array.from({ length: count }, (_, index) => `${tag}${String(index).padStart(4, "0")}`).join("\n");

/** A paste the cap cut before: `head`, the first note, `tail`, and the cut's record. */
function cutBefore(head: string, tail: string): UserMessage {
  const note = "[… cut to fit the context: 9 of 50,000 chars shown · recall(\"m3\") for the whole message …]";
  return {
    id: "m3", role: "user", content: `${head}\n${note}\n${tail}`, kind: "truncated", originalId: "m3",
    cut: { originalChars: 50_000, headChars: head.length, tailChars: tail.length },
  };
}

function cutAgain(message: UserMessage, maxTokens: number) {
  const { messages, cutMessages } = cutGroupToFit([message], maxTokens, counter, USER);
  expect(cutMessages).toBe(1);
  const cut = messages[0] as UserMessage;
  const note = NOTE_LINE.exec(cut.content)!;
  expect(note).not.toBeNull();
  expect(cut.content.match(/cut to fit the context/g)).toHaveLength(1);
  const head = cut.content.slice(0, note.index);
  const tail = cut.content.slice(note.index + note[0].length);
  return { cut, head, tail, shown: Number(note[1]!.replace(/,/g, "")), of: note[2] };
}

describe("a second cut stays within the first cut's head and tail", () => {
  it("a short first head: shown whole, the rest of the room goes to the tail's end", () => {
    const head = rows(10, "h");
    const tail = rows(400, "t");
    const { cut, head: shownHead, tail: shownTail, shown, of } = cutAgain(cutBefore(head, tail), 400);
    expect(shownHead).toBe(head);
    expect(tail.endsWith(shownTail)).toBe(true);
    // The tail takes more than its third: what the head could not hold.
    expect(shownTail.length).toBeGreaterThan(shown / 2);
    expect(shown).toBeGreaterThan(1_200);
    expect(shown).toBe(head.length + shownTail.length);
    expect(of).toBe("50,000");
    expect(cut.cut).toEqual({ originalChars: 50_000, headChars: head.length, tailChars: shownTail.length });
  });

  it("a short first tail: shown whole, the rest of the room goes to the head's start", () => {
    const head = rows(400, "h");
    const tail = rows(10, "t");
    const { cut, head: shownHead, tail: shownTail, shown } = cutAgain(cutBefore(head, tail), 400);
    expect(shownTail).toBe(tail);
    expect(head.startsWith(shownHead)).toBe(true);
    expect(shownHead.length).toBeGreaterThan((shown * 3) / 4);
    // It uses its room (400 tokens, about 1,600 characters with the note): the head is not cut short.
    expect(shown).toBeGreaterThan(1_200);
    expect(shown).toBe(shownHead.length + tail.length);
    expect(cut.cut).toEqual({ originalChars: 50_000, headChars: shownHead.length, tailChars: tail.length });
  });

  it("a message already under its share is cut again all the same (its note names the new count)", () => {
    const head = rows(100, "h");
    const tail = rows(50, "t");
    const message = cutBefore(head, tail);
    const { head: shownHead, tail: shownTail, shown } = cutAgain(message, counter.countMessage(message) - 5);
    expect(head.startsWith(shownHead)).toBe(true);
    expect(tail.endsWith(shownTail)).toBe(true);
    expect(shown).toBe(shownHead.length + shownTail.length);
    expect(shown).toBeLessThan(head.length + tail.length);
  });
});

describe("cutGroupToFit leaves alone what it need not cut", () => {
  it("a message cut before that fits its share keeps its content while a larger one is cut", () => {
    const small = cutBefore(rows(10, "h"), rows(10, "t"));
    const big: UserMessage = { id: "m4", role: "user", content: rows(2_000, "p") };
    const { messages, cutMessages } = cutGroupToFit([small, big], 1_000, counter, USER);
    expect(cutMessages).toBe(1);
    expect(messages[0]).toEqual(small);
    expect(messages[1]!.content).toContain('recall("m4")');
  });

  it("a tool output that quotes a document's start marker gets no end marker added at the cut", () => {
    const call: ChatMessage = { id: "m5", role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: "{}" } }] };
    const output: ToolMessage = { id: "m6", role: "tool", tool_call_id: "c1", content: `[file a.txt, 1 KB, its text:]\n${rows(2_000, "r")}\n[end of a.txt]\n${rows(500, "s")}` };
    const { messages, cutMessages } = cutGroupToFit([call, output], 1_000, counter, BOTH);
    expect(cutMessages).toBe(1);
    expect(messages[1]!.content).toContain('recall("m6")');
    expect(messages[1]!.content).not.toContain("[end of a.txt]");
    // The same text as a user's paste: its file's fence is closed at the cut.
    const paste: UserMessage = { id: "m6", role: "user", content: output.content };
    expect(cutGroupToFit([paste], 1_000, counter, BOTH).messages[0]!.content).toContain("[end of a.txt]");
  });
});
