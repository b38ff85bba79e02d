/**
 * Issue #31 item 1: user text is capped like everything else. A batch's user messages take at
 * most a quarter of the window together (large ones cut to head and tail with their recall id),
 * and a compaction cuts a user message outside the folded middle that alone is over the cap, so
 * a paste three times the window (stored before the cap, or a window that shrank) ends under the
 * window whether the summarizer works or not.
 */
import { describe, expect, it } from "vitest";
import { compact, type CompactInput } from "../../../src/context/compact.js";
import { defaultHardLimit } from "../../../src/context/decisions.js";
import { cutGroupToFit, extractRecallId } from "../../../src/context/prune.js";
import type { Summarizer } from "../../../src/context/summarizer.js";
import { createTokenCounter } from "../../../src/context/tokens.js";
import { capUserMessages, cutOversizedUserMessages, halveCutUserMessages, USER_TEXT_ROOM_SHARE, USER_TEXT_WINDOW_SHARE, userTextCapTokens } from "../../../src/context/user-text.js";
import type { ChatMessage, UserMessage } from "../../../src/core/messages.js";
import { capToolResult } from "../../../src/tools/output-cap.js";

const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));
const WINDOW = 16_000;

/** Numbered lines, so the head and the tail of a cut can be told apart from its middle. */
const paste = (lines: number, tag = "line") => Array.from({ length: lines }, (_, index) => `${tag} ${index + 1}: the quarterly figures for region ${index % 17}`).join("\n");
const user = (id: string, content: string): UserMessage => ({ id, role: "user", content });

describe("capUserMessages: a batch's user text within its share of the window", () => {
  it("keeps small messages as they are (same objects) and cuts the large ones to head + tail with their recall id", () => {
    const cap = userTextCapTokens(WINDOW);
    expect(cap).toBe(WINDOW * USER_TEXT_WINDOW_SHARE);
    const small = user("m2", "Here is the report, please check the totals:");
    const huge = user("m3", paste(3_000));
    const second = user("m4", paste(800, "row"));
    const result = capUserMessages([small, huge, second], cap, counter);
    expect(result.messages[0]).toBe(small);
    expect(result.cutIds).toEqual(["m3", "m4"]);
    const total = result.messages.reduce((sum, message) => sum + counter.countMessage(message), 0);
    expect(total).toBeLessThanOrEqual(cap);
    for (const [index, original] of [huge, second].entries()) {
      const cut = result.messages[index + 1]!;
      expect(cut.id).toBe(original.id);
      expect(cut.kind).toBe("truncated");
      expect(cut.originalId).toBe(original.id);
      expect(extractRecallId(cut.content)).toBe(original.id);
      expect(cut.content).toContain("for the whole message");
      // Head and tail: the first and the last line survive, the middle does not.
      expect(cut.content.startsWith(original.content.split("\n")[0]!)).toBe(true);
      expect(cut.content.endsWith(original.content.split("\n").at(-1)!)).toBe(true);
      expect(cut.content.length).toBeLessThan(original.content.length);
    }
    // The originals are untouched (the caller stores them in the transcript).
    expect(huge.content).toBe(paste(3_000));
    expect(huge.kind).toBeUndefined();
  });

  it("leaves a batch under the cap alone", () => {
    const messages = [user("m2", "hello"), user("m3", paste(100))];
    const result = capUserMessages(messages, userTextCapTokens(WINDOW), counter);
    expect(result.cutIds).toEqual([]);
    expect(result.messages[1]).toBe(messages[1]);
  });

  it("counts the cap in the counter's units: a provider counting 2× ours halves it", () => {
    expect(userTextCapTokens(WINDOW, 2)).toBe(WINDOW * USER_TEXT_WINDOW_SHARE / 2);
    expect(userTextCapTokens(WINDOW, 0.5)).toBe(WINDOW * USER_TEXT_WINDOW_SHARE * 2);
    // At most half of what the fixed overhead leaves under the hard limit (then scaled), however
    // large the window's share; none when the overhead alone passes the hard limit.
    expect(USER_TEXT_ROOM_SHARE).toBe(0.5);
    expect(userTextCapTokens(32_000, 1, undefined, { fixedTokens: 25_000, hardLimitTokens: 28_800 })).toBe(1_900);
    expect(userTextCapTokens(32_000, 2, undefined, { fixedTokens: 25_000, hardLimitTokens: 28_800 })).toBe(950);
    expect(userTextCapTokens(32_000, 1, undefined, { fixedTokens: 5_000, hardLimitTokens: 28_800 })).toBe(8_000);
    expect(userTextCapTokens(32_000, 1, undefined, { fixedTokens: 30_000, hardLimitTokens: 28_800 })).toBe(0);
  });
});

const summarizer = (fails: boolean): Summarizer & { calls: number } => ({
  model: "aux",
  contextWindow: 128_000,
  calls: 0,
  async summarize() {
    this.calls++;
    if (fails) throw new Error("502 bad gateway");
    return { text: "## Goal\nread the report" };
  },
});

function pastedSession(): { messages: ChatMessage[]; newId: () => string } {
  let seq = 0;
  const newId = () => `m${++seq}`;
  const messages: ChatMessage[] = [{ id: newId(), role: "system", content: "You are longhaul." }];
  for (let turn = 0; turn < 6; turn++) {
    messages.push({ id: newId(), role: "user", content: `question ${turn}: ${"about the ledger ".repeat(40)}` });
    messages.push({ id: newId(), role: "assistant", content: `answer ${turn}: ${"the ledger balances ".repeat(40)}` });
  }
  // Three windows of text in one message: stored before the cap existed.
  messages.push({ id: newId(), role: "user", content: paste(Math.ceil((3 * WINDOW * 4) / 45)) });
  return { messages, newId };
}

const settings = { contextWindow: WINDOW, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 };

function input(overrides: Partial<CompactInput>): CompactInput {
  const { messages, newId } = pastedSession();
  return { messages, settings, reason: "hygiene", summarizer: summarizer(false), counter, newId, retry: { attempts: 1, baseDelayMs: 0, timeoutMs: 1_000 }, ...overrides };
}

describe("a compaction with a paste larger than the window in its kept tail", () => {
  it("summarizes the rest and cuts the paste to the cap: the result fits the window", async () => {
    const base = input({});
    const pasteMessage = base.messages.at(-1)!;
    expect(counter.countMessages(base.messages)).toBeGreaterThan(3 * WINDOW);
    const result = await compact(base);
    expect(result.status).toBe("compacted");
    expect(result.record.tokensAfter).toBeLessThan(WINDOW / 2);
    const last = result.messages.at(-1)!;
    expect(last.id).toBe(pasteMessage.id);
    expect(last.kind).toBe("truncated");
    expect(extractRecallId(last.content ?? "")).toBe(pasteMessage.id);
    expect(counter.countMessage(last)).toBeLessThanOrEqual(WINDOW * USER_TEXT_WINDOW_SHARE);
    expect(result.record.prunedMessages).toBeGreaterThanOrEqual(1);
    expect(result.messages.some((message) => message.kind === "summary")).toBe(true);
  });

  it("with the summarizer down and over the hard limit, drops old turns and still cuts the paste under the window", async () => {
    const result = await compact(input({ summarizer: summarizer(true) }));
    expect(result.status).toBe("dropped");
    expect(result.record.tokensAfter).toBeLessThan(WINDOW);
    expect(result.messages.at(-1)!.kind).toBe("truncated");
  });

  it("when the paste is all there is (nothing to fold), the cut alone is the compaction", async () => {
    const { messages, newId } = pastedSession();
    const only = [messages[0]!, messages.at(-1)!];
    const result = await compact({ ...input({}), messages: only, newId });
    expect(result.status).toBe("compacted");
    expect(result.record.summarizerCalls).toBe(0);
    expect(result.record.tokensAfter).toBeLessThanOrEqual(WINDOW * USER_TEXT_WINDOW_SHARE + 50);
    expect(result.messages[1]!.kind).toBe("truncated");
  });

  it("/compress (a manual compaction) cuts the newest message too, as the overflow notice promises", async () => {
    const base = input({ reason: "manual" });
    const result = await compact(base);
    expect(result.status).toBe("compacted");
    expect(result.record.tokensAfter).toBeLessThan(defaultHardLimit(WINDOW));
    expect(result.messages.at(-1)!.id).toBe(base.messages.at(-1)!.id);
    expect(result.messages.at(-1)!.kind).toBe("truncated");
  });

  it("an overflow with nothing to fold halves the paste the cap already cut (the provider counted more than we did); other reasons leave it", async () => {
    const { messages, newId } = pastedSession();
    const first = await compact({ ...input({}), messages: [messages[0]!, messages.at(-1)!], newId });
    const atCap = first.messages;
    const shown = counter.countMessage(atCap[1]!);
    expect(atCap[1]!.kind).toBe("truncated");
    expect((await compact({ ...input({ reason: "in-loop" }), messages: atCap, newId })).status).toBe("skipped");
    const overflow = await compact({ ...input({ reason: "overflow" }), messages: atCap, newId });
    expect(overflow.status).toBe("compacted");
    expect(overflow.record.summarizerCalls).toBe(0);
    const halved = overflow.messages[1]!;
    expect(counter.countMessage(halved)).toBeLessThanOrEqual(shown / 2);
    expect(extractRecallId(halved.content ?? "")).toBe(messages.at(-1)!.id);
    expect(halved.content!.startsWith(messages.at(-1)!.content!.slice(0, 100))).toBe(true);
    // A message nobody cut (a question) is not touched by an overflow.
    const question = user("q1", "What is the total for region 3?");
    const plain = await compact({ ...input({ reason: "overflow" }), messages: [messages[0]!, question], newId });
    expect(plain.messages[1]).toBe(question);
  });

  it("an overflow halves the cut paste it keeps, not one in the folded middle, and the record counts the halving", async () => {
    const cut = (id: string) => capUserMessages([user(id, paste(600, id))], 800, counter).messages[0]!;
    const messages: ChatMessage[] = [{ id: "m0", role: "system", content: "You are longhaul." }];
    messages.push(user("m1", "Hi."), { id: "m2", role: "assistant", content: "Hello." }, cut("m3"), { id: "m4", role: "assistant", content: "Read it." });
    for (let turn = 0; turn < 6; turn++) {
      messages.push(user(`q${turn}`, `question ${turn}: ${"about the ledger ".repeat(40)}`), { id: `a${turn}`, role: "assistant", content: `answer ${turn}: ${"the ledger balances ".repeat(40)}` });
    }
    messages.push(cut("m20"));
    let seq = 100;
    const base = { ...input({}), messages, newId: () => `n${++seq}`, settings: { ...settings, protectLastN: 2 } };
    const inLoop = await compact({ ...base, reason: "in-loop" });
    const overflow = await compact({ ...base, reason: "overflow" });
    expect(inLoop.status).toBe("compacted");
    expect(overflow.status).toBe("compacted");
    // m3 is folded into the summary in both; only the kept paste is halved.
    for (const result of [inLoop, overflow]) expect(result.messages.some((message) => message.id === "m3")).toBe(false);
    const before = counter.countMessage(messages.at(-1)!);
    const after = counter.countMessage(overflow.messages.at(-1)!);
    expect(overflow.messages.at(-1)!.id).toBe("m20");
    expect(after).toBeLessThanOrEqual(before / 2);
    expect(overflow.record.prunedMessages).toBe(inLoop.record.prunedMessages + 1);
    expect(overflow.record.prunedTokens).toBe(inLoop.record.prunedTokens + before - after);
  });

  it("obeys a cap the caller sets, in the provider's tokens", async () => {
    const result = await compact(input({ settings: { ...settings, userTextMaxTokens: 1_000, tokenRatio: 2 } }));
    expect(counter.countMessage(result.messages.at(-1)!)).toBeLessThanOrEqual(500);
  });
});

describe("cutOversizedUserMessages: the last resort inside a compaction", () => {
  it("cuts only user messages outside the folded middle that alone exceed the cap (a message at the cap stays), never a summary, and reports the tokens it saved", () => {
    const cap = 100;
    const big = (id: string) => user(id, paste(40));
    const atCap = user("m7", "a".repeat((cap - 4) * 4));
    const messages: ChatMessage[] = [
      { id: "m0", role: "system", content: paste(40) },
      big("m1"),
      { id: "m2", role: "user", kind: "summary", content: paste(40) },
      big("m3"),
      { id: "m4", role: "assistant", content: paste(40) },
      big("m5"),
      big("m6"),
      atCap,
    ];
    expect(counter.countMessage(atCap)).toBe(cap);
    const result = cutOversizedUserMessages(messages, { from: 3, to: 5 }, cap, counter);
    const cut = result.messages.flatMap((message, index) => (message === messages[index] ? [] : [message.id]));
    expect(cut).toEqual(["m1", "m5", "m6"]);
    expect(result.cutMessages).toBe(3);
    const saved = ["m1", "m5", "m6"].reduce((sum, id) => {
      const index = messages.findIndex((message) => message.id === id);
      return sum + counter.countMessage(messages[index]!) - counter.countMessage(result.messages[index]!);
    }, 0);
    expect(result.cutTokens).toBe(saved);
    expect(saved).toBeGreaterThan(0);
  });

  it("a batch that is obviously short is not counted at all", () => {
    const counted: string[] = [];
    const spy = createTokenCounter("test-chars/4", (text) => (counted.push(text), Math.ceil(text.length / 4)));
    const messages = [user("m2", "hello"), user("m3", "how are you")];
    expect(capUserMessages(messages, 1_000, spy)).toEqual({ messages, cutIds: [] });
    expect(counted).toEqual([]);
  });
});

describe("halveCutUserMessages: after an overflow, a paste the cap cut shows half as much", () => {
  it("halves only the cut user messages outside the folded middle, leaves a cut it cannot shorten, and reports what it saved", () => {
    const capped = (id: string) => capUserMessages([user(id, paste(400))], 500, counter).messages[0]!;
    const tiny: UserMessage = { ...user("m8", "short, already cut"), kind: "truncated", originalId: "m8" };
    const messages: ChatMessage[] = [
      { id: "m0", role: "system", content: paste(40) },
      capped("m1"),
      capped("m2"),
      capped("m3"),
      capped("m4"),
      user("m5", paste(400)),
      { id: "m6", role: "tool", tool_call_id: "c1", kind: "truncated", originalId: "m6", content: paste(400) },
      capped("m7"),
      tiny,
    ];
    for (const id of ["m1", "m2", "m3", "m4", "m7"]) expect(messages.find((message) => message.id === id)!.kind).toBe("truncated");
    // The middle is [2, 4): m2 and m3 are folded by the summary, not cut here.
    const result = halveCutUserMessages(messages, { from: 2, to: 4 }, counter);
    const changed = result.messages.flatMap((message, index) => (message === messages[index] ? [] : [message.id]));
    expect(changed).toEqual(["m1", "m4", "m7"]);
    let saved = 0;
    for (const id of changed) {
      const index = messages.findIndex((message) => message.id === id);
      const before = counter.countMessage(messages[index]!);
      const after = counter.countMessage(result.messages[index]!);
      expect(after).toBeLessThanOrEqual(before / 2);
      expect(extractRecallId(result.messages[index]!.content ?? "")).toBe(id);
      saved += before - after;
    }
    expect(result.cutMessages).toBe(3);
    expect(result.cutTokens).toBe(saved);
    expect(saved).toBeGreaterThan(0);
  });
});

describe("a message cut twice names the original's size", () => {
  const noteOf = (content: string) => /\[… cut to fit the context: ([\d,]+) of ([\d,]+) chars shown · recall\("([^"]+)"\)/.exec(content);
  const number = (text: string) => Number(text.replace(/,/g, ""));

  it("a paste cut at admission, then halved on an overflow or cut in a compaction: 'of M' is the original's length, the shown chars are the original's", () => {
    const original = user("m3", paste(3_000));
    const [admitted] = capUserMessages([original], 4_000, counter).messages;
    expect(number(noteOf(admitted!.content)![2]!)).toBe(original.content.length);
    const halved = halveCutUserMessages([admitted!], { from: 0, to: 0 }, counter).messages[0] as UserMessage;
    // Before: 'of 13,684 chars shown', the admitted cut's length, where the original has 138,124.
    const note = noteOf(halved.content)!;
    expect(number(note[2]!)).toBe(original.content.length);
    expect(note[3]).toBe("m3");
    // A cut just under the first one: its head and tail are the original's, never a piece of the first note.
    const slightly = cutOversizedUserMessages([admitted!], { from: 0, to: 0 }, counter.countMessage(admitted!) - 20, counter).messages[0] as UserMessage;
    expect(slightly.content.match(/cut to fit the context/g)).toHaveLength(1);
    expect(number(noteOf(slightly.content)![2]!)).toBe(original.content.length);
    const [head, tail] = slightly.content.split(/\n\[… cut to fit the context: [^\n]*\n/);
    expect(original.content.startsWith(head!)).toBe(true);
    expect(original.content.endsWith(tail!)).toBe(true);
    expect(number(noteOf(slightly.content)![1]!)).toBe(head!.length + tail!.length);
  });

  it("a tool output capped when it came back, then cut in the tail, names the whole output's size", async () => {
    const output = paste(2_000);
    const saved = new Map<string, string>();
    const capped = await capToolResult({ id: "m5", role: "tool", tool_call_id: "c1", content: output }, 20_000, { save: async (id, text) => void saved.set(id, text) });
    const call: ChatMessage = { id: "m4", role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "read_file", arguments: "{}" } }] };
    const [, cut] = cutGroupToFit([call, capped], 1_000, counter).messages;
    expect(cut!.content).toContain(`of ${output.length.toLocaleString("en-US")} chars shown · recall("m5")`);
    expect(saved.get("m5")).toBe(output);
  });
});
