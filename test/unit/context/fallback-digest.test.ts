/** Issue #31 item 6: the fallback digest's exact text (who, when, ids, first lines, what answered). */
import { describe, expect, it } from "vitest";
import { FALLBACK_DIGEST_HEADER, fallbackDigest, splitFallbackDigest } from "../../../src/context/fallback-digest.js";
import { createTokenCounter } from "../../../src/context/tokens.js";
import { compact, FALLBACK_DIGEST_SHARE } from "../../../src/context/compact.js";
import { thresholdTokens } from "../../../src/context/decisions.js";
import type { Summarizer } from "../../../src/context/summarizer.js";
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

describe("fallback digests across dropped compactions (a summarizer down for good)", () => {
  it("merge into one digest within its budget: the summary does not grow by a digest at every drop", async () => {
    // 8K window, plain turns of ~1,000 tokens, the summarizer dead: each turn ends over the hard
    // limit and drops. Before, each drop appended its digest to the last one: after 60 drops the
    // summary alone held ~5,000 tokens of digests, and the context passed the window.
    const window = 8_192;
    const settings = { contextWindow: window, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 };
    const dead: Summarizer = { model: "aux", contextWindow: 200_000, summarize: () => Promise.reject(new Error("502 bad gateway")) };
    let seq = 0;
    const newId = () => `m${++seq}`;
    let live: ChatMessage[] = [{ id: newId(), role: "system", content: "You are longhaul." }];
    let largestSummary = 0;
    let drops = 0;
    for (let turn = 0; turn < 120; turn++) {
      live = [...live, { id: newId(), role: "user", content: `question ${turn} ${"u".repeat(1_600)}` }, { id: newId(), role: "assistant", content: `answer ${turn} ${"a".repeat(2_400)}` }];
      const result = await compact({ messages: live, settings, reason: "in-loop", summarizer: dead, counter, newId, retry: { attempts: 1, baseDelayMs: 0 } });
      if (result.status !== "dropped") continue;
      drops++;
      live = result.messages;
      const summary = live.find((message) => message.kind === "summary");
      largestSummary = Math.max(largestSummary, summary ? counter.countMessage(summary) : 0);
      expect(result.record.tokensAfter).toBeLessThan(result.record.thresholdTokens);
    }
    expect(drops).toBeGreaterThan(20);
    const digestRoom = Math.floor(thresholdTokens(window, 0.5) * FALLBACK_DIGEST_SHARE);
    // The digest's room plus the summary's framing.
    expect(largestSummary).toBeLessThanOrEqual(digestRoom + 150);
    // The oldest turns are still named (as one range, from the first dropped), the newest line by line.
    const text = live.find((message) => message.kind === "summary")!.content ?? "";
    expect(text.split(FALLBACK_DIGEST_HEADER)).toHaveLength(2);
    // m2–m3, the first exchange, stay in the head; the first turn dropped is m4's.
    expect(text).toMatch(/\n- \(\d+ older turns, \[m4\] onwards: recall by id or search\)\n- \[m\d+\] user: question \d+/);
  });
});

describe("splitFallbackDigest and an earlier digest's lines", () => {
  it("splits a summary from the digest appended to it, and carries the earlier range's count and first id over", () => {
    const earlierText = `## Goal\nship it\n\n${FALLBACK_DIGEST_HEADER}\n- (3 older turns, [m2] onwards: recall by id or search)\n- [m9] user: old question`;
    const split = splitFallbackDigest(earlierText);
    expect(split).toEqual({ summary: "## Goal\nship it", digestLines: ["- (3 older turns, [m2] onwards: recall by id or search)", "- [m9] user: old question"] });
    expect(splitFallbackDigest("## Goal\nship it")).toEqual({ summary: "## Goal\nship it", digestLines: [] });
    const dropped: ChatMessage[] = [{ id: "m20", role: "user", content: "new question" }];
    const merged = fallbackDigest(dropped, { toolNames: new Map(), maxTokens: 10_000, counter, earlier: split.digestLines });
    expect(merged).toBe(`${FALLBACK_DIGEST_HEADER}\n- (3 older turns, [m2] onwards: recall by id or search)\n- [m9] user: old question\n- [m20] user: new question`);
    // Too long together: the earlier lines go first, counted into the range that still starts at m2.
    const tight = fallbackDigest(dropped, { toolNames: new Map(), maxTokens: counter.countText(`${FALLBACK_DIGEST_HEADER}\n- (4 older turns, [m2] onwards: recall by id or search)\n- [m20] user: new question`), counter, earlier: split.digestLines });
    expect(tight).toBe(`${FALLBACK_DIGEST_HEADER}\n- (4 older turns, [m2] onwards: recall by id or search)\n- [m20] user: new question`);
    // An earlier digest without a range: its first line's id opens the range.
    const plain = fallbackDigest(dropped, { toolNames: new Map(), maxTokens: 30, counter, earlier: ["- [m9] user: old question"] });
    expect(plain).toContain("[m9] onwards");
  });

  it("takes only the digest's lines, not the summary's bullets, and reads a range only from a line that is one", () => {
    const split = splitFallbackDigest(`## Goal\n- ship the report\n- keep the totals\n\n${FALLBACK_DIGEST_HEADER}\n- [m9] user: old question`);
    expect(split).toEqual({ summary: "## Goal\n- ship the report\n- keep the totals", digestLines: ["- [m9] user: old question"] });
    // A user's first line that ends like a range line (the text is the sender's) stays a line of its own.
    const quoting = "- [m9] user: it said - (40 older turns, [m0] onwards: recall by id or search)";
    const dropped: ChatMessage[] = [{ id: "m20", role: "user", content: "new question" }];
    expect(fallbackDigest(dropped, { toolNames: new Map(), maxTokens: 10_000, counter, earlier: [quoting] })).toBe(`${FALLBACK_DIGEST_HEADER}\n${quoting}\n- [m20] user: new question`);
  });
});
