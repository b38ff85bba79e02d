/** Issue #31 item 6: the fallback digest's exact text (who, when, ids, first lines, what answered). */
import { describe, expect, it } from "vitest";
import { FALLBACK_DIGEST_HEADER, fallbackDigest } from "../../../src/context/fallback-digest.js";
import { createTokenCounter } from "../../../src/context/tokens.js";
import type { ChatMessage } from "../../../src/core/messages.js";

const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));
const AT = Date.UTC(2026, 11, 1, 9, 44);

describe("fallbackDigest", () => {
  it("lists each dropped turn: id, date, first line of the user's message (stamp removed, long lines cut), then what answered it", () => {
    const dropped: ChatMessage[] = [
      { id: "m1", role: "assistant", content: "an answer left from before" },
      { id: "m2", at: AT, role: "user", content: `[Tue 2026-12-01 10:44 Europe/Berlin]  Alice: check the ledger\nsecond line` },
      { id: "m3", role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: "{}" } }] },
      { id: "m4", role: "tool", tool_call_id: "c1", content: "rows" },
      { id: "m5", role: "tool", tool_call_id: "c9", content: "orphan" },
      { id: "m6", role: "assistant", content: "done" },
      { id: "m7", role: "user", content: `${"x".repeat(161)}\nmore` },
      { id: "m8", role: "user", content: "  [note] plain" },
    ];
    const text = fallbackDigest(dropped, { toolNames: new Map([["c1", "read_file"]]), timeZone: "UTC", maxTokens: 10_000, counter });
    expect(text).toBe([
      FALLBACK_DIGEST_HEADER,
      "- [m1] assistant",
      "- [m2] Tue 2026-12-01 09:44 UTC · user: Alice: check the ledger → [m3] assistant calls read_file, [m4] read_file result, [m5] tool result, [m6] assistant",
      `- [m7] user: ${"x".repeat(160)}…`,
      "- [m8] user: [note] plain",
    ].join("\n"));
  });

  it("keeps the newest lines within maxTokens and names the older ones as a range", () => {
    const dropped: ChatMessage[] = Array.from({ length: 40 }, (_, index) => ({ id: `m${index + 1}`, role: "user" as const, content: `question number ${index + 1} about the ledger` }));
    const text = fallbackDigest(dropped, { toolNames: new Map(), maxTokens: 200, counter });
    expect(counter.countText(text)).toBeLessThanOrEqual(200);
    const lines = text.split("\n");
    expect(lines.slice(0, 2).join("\n")).toBe(FALLBACK_DIGEST_HEADER);
    const omitted = Number(/^- \((\d+) older turns, \[m1\] onwards: recall by id or search\)$/.exec(lines[2]!)?.[1]);
    expect(lines.slice(3)).toEqual(dropped.slice(omitted).map((message) => `- [${message.id}] user: ${message.content}`));
    expect(omitted).toBeGreaterThan(0);
    // Everything fits: no range line.
    expect(fallbackDigest(dropped.slice(0, 2), { toolNames: new Map(), maxTokens: 200, counter })).toBe(`${FALLBACK_DIGEST_HEADER}\n- [m1] user: question number 1 about the ledger\n- [m2] user: question number 2 about the ledger`);
  });

  it("uses its room: of 200 dropped turns it keeps at least three quarters of the newest lines that would fit", () => {
    const dropped: ChatMessage[] = Array.from({ length: 200 }, (_, index) => ({ id: `m${index + 1}`, role: "user" as const, content: `question number ${index + 1} about the ledger` }));
    const maxTokens = 600;
    const text = fallbackDigest(dropped, { toolNames: new Map(), maxTokens, counter });
    expect(counter.countText(text)).toBeLessThanOrEqual(maxTokens);
    const kept = text.split("\n").filter((line) => line.startsWith("- [")).length;
    // The most lines that fit: the header, the range line and the newest `fit` lines.
    let fit = 0;
    const render = (count: number) => [FALLBACK_DIGEST_HEADER, `- (${200 - count} older turns, [m1] onwards: recall by id or search)`, ...dropped.slice(200 - count).map((message) => `- [${message.id}] user: ${message.content}`)].join("\n");
    while (fit < 200 && counter.countText(render(fit + 1)) <= maxTokens) fit += 1;
    expect(fit).toBeGreaterThan(20);
    expect(kept).toBeLessThanOrEqual(fit);
    expect(kept).toBeGreaterThanOrEqual(Math.floor((fit * 3) / 4));
  });

  it("shows a first line of exactly 160 characters whole", () => {
    const line = "y".repeat(160);
    const text = fallbackDigest([{ id: "m1", role: "user", content: `${line}\nsecond` }], { toolNames: new Map(), maxTokens: 10_000, counter });
    expect(text).toBe(`${FALLBACK_DIGEST_HEADER}\n- [m1] user: ${line}`);
  });

  it("with a budget too small even for the header, ends with the header and the range line, listing no turn", () => {
    const dropped: ChatMessage[] = [{ id: "m1", role: "user", content: "first" }, { id: "m2", role: "user", content: "second" }];
    const text = fallbackDigest(dropped, { toolNames: new Map(), maxTokens: 5, counter });
    expect(text).toBe(`${FALLBACK_DIGEST_HEADER}\n- (2 older turns, [m1] onwards: recall by id or search)`);
  });

  it("lists answers left from before the first dropped request on one line, and an assistant's several calls, comma-separated", () => {
    const dropped: ChatMessage[] = [
      { id: "m1", role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: "{}" } }, { id: "c2", type: "function", function: { name: "search", arguments: "{}" } }] },
      { id: "m2", role: "tool", tool_call_id: "c1", content: "rows" },
      { id: "m3", role: "user", content: "next" },
    ];
    const text = fallbackDigest(dropped, { toolNames: new Map([["c1", "read_file"]]), maxTokens: 10_000, counter });
    expect(text).toBe(`${FALLBACK_DIGEST_HEADER}\n- [m1] assistant calls read_file, search, [m2] read_file result\n- [m3] user: next`);
  });

  it("a digest exactly at its budget keeps every line", () => {
    const dropped: ChatMessage[] = Array.from({ length: 6 }, (_, index) => ({ id: `m${index + 1}`, role: "user" as const, content: `question ${index + 1}` }));
    const whole = fallbackDigest(dropped, { toolNames: new Map(), maxTokens: 10_000, counter });
    expect(fallbackDigest(dropped, { toolNames: new Map(), maxTokens: counter.countText(whole), counter })).toBe(whole);
    expect(fallbackDigest(dropped, { toolNames: new Map(), maxTokens: counter.countText(whole) - 1, counter })).not.toBe(whole);
  });
});
