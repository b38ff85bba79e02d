/**
 * A summary is whole or it is not used (issue #11, item 2), with a summarizer fake that measures
 * length in its own unit, reads the length it is asked for from the prompt, stops at max_tokens
 * like a server and can be a reasoning model. Also: dates, speakers and secrets in what the
 * summarizer reads and writes, pruned originals reaching a later fold, and the running turn's
 * request never folded away.
 */
import { describe, expect, it } from "vitest";
import { compact, type CompactInput } from "../../../src/context/compact.js";
import type { ChatMessage, ToolCall } from "../../../src/core/messages.js";
import { SUMMARY_TEMPLATE, summaryBudget, summarySystemPrompt } from "../../../src/context/summary-prompt.js";
import { REDACTED, redactSecrets } from "../../../src/context/redact.js";
import { SummaryTruncatedError } from "../../../src/context/summarize.js";
import type { Summarizer, SummaryRequest, SummaryResponse } from "../../../src/context/summarizer.js";
import { createTokenCounter } from "../../../src/context/tokens.js";
import { FakeSummarizer, turnIdsOf } from "../../fakes/fake-summarizer.js";

const counter = createTokenCounter("test-chars/4", (text) => Math.ceil(text.length / 4));
const settings = { contextWindow: 32_000, compactionThreshold: 0.5, targetRatio: 0.2, protectLastN: 20 };
const quickRetry = { attempts: 3, baseDelayMs: 0, timeoutMs: 5_000 };
const LAST_HEADING = SUMMARY_TEMPLATE.split("\n").at(-1)!;
const DAY = 86_400_000;

function session(turns: number, start = Date.UTC(2026, 10, 2, 9, 0)) {
  let seq = 0;
  let callSeq = 0;
  let clock = start;
  const newId = () => `m${++seq}`;
  const at = (stepMs = 60_000) => (clock += stepMs);
  const messages: ChatMessage[] = [{ id: newId(), role: "system", content: "You are longhaul." }];
  const builder = {
    messages,
    newId,
    user: (content: string, gapMs?: number) => (messages.push({ id: newId(), at: at(gapMs), role: "user", content }), builder),
    reply: (content: string) => (messages.push({ id: newId(), at: at(), role: "assistant", content }), builder),
    tool: (name: string, output: string) => {
      const call: ToolCall = { id: `call_${++callSeq}`, type: "function", function: { name, arguments: JSON.stringify({ n: callSeq }) } };
      messages.push({ id: newId(), at: at(), role: "assistant", content: null, tool_calls: [call] });
      messages.push({ id: newId(), at: at(), role: "tool", tool_call_id: call.id, content: output });
      return builder;
    },
  };
  for (let turn = 0; turn < turns; turn += 1) {
    builder.user(`Step ${turn}: check ledger_${turn}.csv`).tool("read_file", `row,amount\n${"1,42\n".repeat(600)}`).reply(`ledger_${turn}.csv balances.`);
  }
  return builder;
}

const input = (messages: ChatMessage[], newId: () => string, summarizer: Summarizer, extra: Partial<CompactInput> = {}): CompactInput =>
  ({ messages, settings, reason: "in-loop", summarizer, counter, newId, retry: quickRetry, ...extra });

class Scripted implements Summarizer {
  readonly requests: SummaryRequest[] = [];
  constructor(readonly model: string, private readonly script: (call: number, request: SummaryRequest) => SummaryResponse, readonly contextWindow = 128_000) {}
  async summarize(request: SummaryRequest): Promise<SummaryResponse> {
    this.requests.push(request);
    return this.script(this.requests.length, request);
  }
}

describe("a summary is whole or it is not used", () => {
  it("asks for a length in the prompt, leaves max_tokens headroom, and gets a whole summary of about that length", async () => {
    const { messages, newId } = session(20);
    const summarizer = new FakeSummarizer();
    const result = await compact(input(messages, newId, summarizer));
    expect(result.status).toBe("compacted");
    const call = summarizer.calls[0]!;
    expect(call.targetTokens).toBeGreaterThanOrEqual(summaryBudget({ middleTokens: 0, contextWindow: 32_000 }));
    expect(call.system).toContain(`Length: about ${call.targetTokens} tokens.`);
    expect(call.maxTokens).toBeGreaterThanOrEqual(2 * call.targetTokens!);
    expect(call.finishReason).toBe("stop");
    const summary = result.messages.find((message) => message.kind === "summary")!;
    expect(summary.content).toContain(LAST_HEADING);
    // Its length in the fake's own unit follows the request, not our counter.
    const written = summarizer.tokensOf(summary.content!);
    expect(written).toBeGreaterThan(0.7 * call.targetTokens!);
    expect(written).toBeLessThan(1.3 * call.targetTokens!);
  });

  it("treats a stop at max_tokens as a failed attempt, asks at once for a shorter summary in the same room, and stores only the whole answer", async () => {
    const { messages, newId } = session(20);
    const summarizer = new Scripted("aux", (call, request) =>
      call === 1 ? { text: "## Pending User Requests\n- \"check the led", finishReason: "length" } : { text: `## Pending User Requests\nNone.\n${LAST_HEADING}\nwhole (${request.maxTokens})`, finishReason: "stop" });
    const result = await compact(input(messages, newId, summarizer));
    expect(result.status).toBe("compacted");
    expect(summarizer.requests).toHaveLength(2);
    expect(summarizer.requests[1]!.maxTokens).toBe(summarizer.requests[0]!.maxTokens);
    expect(summarizer.requests[1]!.messages).not.toEqual(summarizer.requests[0]!.messages);
    expect(String(summarizer.requests[1]!.messages.at(-1)!.content)).toContain("Write a shorter summary");
    const summary = result.messages.find((message) => message.kind === "summary")!.content!;
    expect(summary).toContain(`whole (${summarizer.requests[1]!.maxTokens})`);
    expect(summary).not.toContain("check the led");
    expect(result.record.summarizerCalls).toBe(2);
  });

  it("gives up on a summarizer that stops at max_tokens again, and never stores the cut text: fallback, else failed", async () => {
    const { messages, newId } = session(20);
    const cut = () => new Scripted("aux", () => ({ text: "## Pending User Requests\n- half a sum", finishReason: "length" }));
    const main = new FakeSummarizer({ model: "main" });
    const aux = cut();
    const withFallback = await compact(input(messages, newId, aux, { fallbackSummarizer: main }));
    expect(aux.requests).toHaveLength(2); // the first try and one shorter ask, no more
    expect(withFallback.status).toBe("compacted");
    expect(withFallback.record.summarizerModel).toBe("main");
    expect(JSON.stringify(withFallback.messages)).not.toContain("half a sum");

    const alone = await compact(input(messages, newId, cut()));
    expect(alone.status).toBe("failed");
    expect(alone.messages).toEqual(messages);
    const failure = (alone.error as { failures: Array<{ error: unknown }> }).failures[0]!.error;
    expect(failure).toBeInstanceOf(SummaryTruncatedError);
  });

  it("holds the length budget at worst (issue #31): a summarizer that writes 4× the target is asked once for less, never given more room", async () => {
    const { messages, newId } = session(20);
    // Writes about four times what it is asked for, in its own unit: stops at max_tokens or runs past 1.5× the target.
    const verbose = new FakeSummarizer({ model: "verbose", lengthFactor: 4 });
    const main = new FakeSummarizer({ model: "main" });
    const result = await compact(input(messages, newId, verbose, { fallbackSummarizer: main }));
    expect(verbose.calls).toHaveLength(2);
    expect(verbose.calls[1]!.maxTokens).toBe(verbose.calls[0]!.maxTokens);
    expect(verbose.calls[1]!.targetTokens).toBe(Math.floor(verbose.calls[0]!.targetTokens! / 2));
    expect(result.record.summarizerModel).toBe("main");
    const summary = result.messages.find((message) => message.kind === "summary")!;
    expect(counter.countText(summary.content!)).toBeLessThan(1.5 * verbose.calls[0]!.targetTokens! + 200);
  });

  it("a summarizer that runs long once and obeys the shorter ask is used: its summary within 1.5× the target", async () => {
    const { messages, newId } = session(20);
    let calls = 0;
    const fake = new FakeSummarizer({ model: "aux" });
    const once: Summarizer = {
      model: "aux",
      contextWindow: fake.contextWindow,
      // The first answer is three times as long as asked (it ends normally); later ones obey.
      summarize: async (request) => {
        calls++;
        const response = await fake.summarize(request);
        return calls === 1 ? { ...response, text: [response.text, response.text, response.text].join("\n") } : response;
      },
    };
    const result = await compact(input(messages, newId, once));
    expect(calls).toBe(2);
    expect(result.record.summarizerModel).toBe("aux");
    const target = fake.calls[0]!.targetTokens!;
    expect(counter.countText(result.messages.find((message) => message.kind === "summary")!.content!)).toBeLessThanOrEqual(1.5 * target);
  });

  it("gives a reasoning model room to think and still finish; a cap at the bare target would have cut it", async () => {
    const { messages, newId } = session(20);
    const reasoning = new FakeSummarizer({ model: "thinker", reasoningTokens: 1_500 });
    const result = await compact(input(messages, newId, reasoning));
    expect(result.status).toBe("compacted");
    expect(reasoning.calls.every((call) => call.finishReason === "stop")).toBe(true);
    expect(result.messages.find((message) => message.kind === "summary")!.content).toContain(LAST_HEADING);
    // The same model capped at the target answers nothing usable.
    const capped = await reasoning.summarize({ messages: [{ role: "system", content: "x" }, { role: "user", content: `about ${reasoning.calls[0]!.targetTokens} tokens` }], maxTokens: reasoning.calls[0]!.targetTokens! });
    expect(capped.finishReason).toBe("length");
  });

  it("counts the previous summary whole in the next budget", async () => {
    expect(summaryBudget({ middleTokens: 3_000, previousSummaryTokens: 2_500, contextWindow: 200_000 })).toBe(3_100);
    expect(summaryBudget({ middleTokens: 3_000, previousSummaryTokens: 0, contextWindow: 200_000 })).toBe(2_000);
    expect(summaryBudget({ middleTokens: 3_000, previousSummaryTokens: 50_000, contextWindow: 200_000 })).toBe(10_000);

    // A long previous summary: the second fold is asked for at least its length.
    const builder = session(20);
    const writer = new FakeSummarizer({ fixedLengthTokens: 2_600, charsPerToken: 4 });
    const first = await compact({ ...input(builder.messages, builder.newId, writer), settings: { ...settings, contextWindow: 64_000 } });
    builder.messages.splice(0, builder.messages.length, ...first.messages);
    for (let turn = 20; turn < 40; turn += 1) builder.user(`Step ${turn}`).tool("read_file", "x,1\n".repeat(900)).reply("ok");
    const follower = new FakeSummarizer();
    await compact({ ...input(builder.messages, builder.newId, follower), settings: { ...settings, contextWindow: 64_000 } });
    expect(follower.calls[0]!.user).toContain("<previous-summary>");
    expect(follower.calls[0]!.targetTokens).toBeGreaterThanOrEqual(2_600);
  });
});

describe("what the summarizer reads", () => {
  it("sees every message's date in the chat's zone, a gap of days included, and is asked to resolve relative dates", async () => {
    const builder = session(12, Date.UTC(2026, 11, 1, 9, 44)); // Tue 2026-12-01 09:44 UTC = 10:44 in Berlin
    builder.user("Let's ship it on Friday.", 3 * DAY);
    for (let turn = 0; turn < 8; turn += 1) builder.user(`more ${turn}`).tool("read_file", "y\n".repeat(2_000)).reply("done");
    const summarizer = new FakeSummarizer();
    await compact(input(builder.messages, builder.newId, summarizer, { timeZone: "Europe/Berlin" }));
    const { user, system } = summarizer.calls[0]!;
    expect(user).toContain("[m3] Tue 2026-12-01 10:46 Europe/Berlin · assistant:");
    expect(user).toMatch(/\[m6\] Tue 2026-12-01 \d\d:\d\d Europe\/Berlin · user: Step 1/);
    expect(user).toMatch(/\] Fri 2026-12-04 \d\d:\d\d Europe\/Berlin · user: Let's ship it on Friday\./);
    expect(system).toContain('"Friday" said on Tue 2026-12-01 → "Friday 2026-12-04"');
  });

  it("keeps speakers and attributes instructions, names the past Historical, and has a resolved-questions section", () => {
    const system = summarySystemPrompt(1_000);
    expect(system).toContain("Keep who said what");
    expect(system).toContain("Attribute every request, instruction and preference to the person who gave it");
    expect(system).toContain("The Historical sections record the past, not orders");
    expect(system).toContain("Never copy secrets");
    expect(SUMMARY_TEMPLATE.split("\n")[0]).toBe("## Pending User Requests");
    expect(SUMMARY_TEMPLATE).toContain("## Resolved Questions");
    expect(SUMMARY_TEMPLATE).not.toMatch(/^## (Progress|Next Steps)$/m);
    expect(SUMMARY_TEMPLATE).toMatch(/^## Historical Progress$/m);
    expect(SUMMARY_TEMPLATE).toMatch(/^## Historical Next Steps$/m);
  });

  it("never passes an obvious secret to the summarizer, and never stores one the summarizer writes anyway", async () => {
    const builder = session(10);
    builder.user("Bob: here is the key sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 and my password: hunter2!x");
    builder.tool("http_get", "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c ok");
    builder.reply("Stored.");
    for (let turn = 0; turn < 8; turn += 1) builder.user(`later ${turn}`).tool("read_file", "z\n".repeat(2_000)).reply("ok");
    const leaky = new FakeSummarizer({ alsoWrite: "Bob's GitHub token is ghp_0123456789abcdefghijABCDEFGHIJ0123456789 (api_key=s3cr3t-value)" });
    const result = await compact(input(builder.messages, builder.newId, leaky));
    const read = leaky.calls.map((call) => call.user).join("\n");
    expect(read).toContain("Bob: here is the key");
    for (const secret of ["sk-proj-AbCdEf", "hunter2", "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"]) expect(read).not.toContain(secret);
    expect(read).toContain(REDACTED);
    const stored = result.messages.find((message) => message.kind === "summary")!.content!;
    expect(stored).not.toContain("ghp_0123456789");
    expect(stored).not.toContain("s3cr3t-value");
    expect(stored).toContain(`Bob's GitHub token is ${REDACTED}`);
  });
});

describe("redactSecrets", () => {
  it.each([
    ["OpenAI project key", "use sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123 now", "use [REDACTED] now"],
    ["Anthropic key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345-xyz", "[REDACTED]"],
    ["Telegram bot token", "BOT_TOKEN 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 set", "BOT_TOKEN [REDACTED] set"],
    ["AWS key id", "AKIAIOSFODNN7EXAMPLE", "[REDACTED]"],
    ["password assignment", 'password: "hunter2" and pwd=abcd1234', 'password: "[REDACTED]" and pwd=[REDACTED]'],
    ["password said in a sentence", "my password is Tr0ub4dor&3 ok", "my password is [REDACTED] ok"],
    ["bearer header", "Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer [REDACTED]"],
    ["private key block", "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[REDACTED]"],
  ])("removes a %s", (_name, text, expected) => {
    expect(redactSecrets(text)).toBe(expected);
  });

  it.each([
    ["ids and hashes", "commit 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f708192a3b, message [m17], call_abc123"],
    ["token counts", "the summary used 1,600 tokens; max tokens: 2000 is fine"],
    ["emoji and long runs", `🎉🎉 ${"x".repeat(300)} ünïcödé`],
  ])("leaves %s alone", (_name, text) => {
    expect(redactSecrets(text)).toBe(text);
  });
});

describe("folding the kept region later", () => {
  it("sends the original of a tool result pruned while it was kept, not its placeholder", async () => {
    // One long turn: the user's request, then a tool loop. The first compaction prunes results
    // between the request and the protected tail; after the next request, a compaction folds them.
    const builder = session(1);
    builder.user("Audit every ledger and tell me the total.");
    for (let step = 0; step < 14; step += 1) builder.tool("read_file", `ledger ${step} TOTAL=${1000 + step}\n${"5,5\n".repeat(700)}`);
    const summarizer = new FakeSummarizer();
    const first = await compact(input(builder.messages, builder.newId, summarizer));
    expect(first.status).toBe("compacted");
    const prunedKept = first.messages.filter((message) => message.kind === "pruned");
    expect(prunedKept.length).toBeGreaterThan(0);
    const target = prunedKept[0]!;
    builder.messages.splice(0, builder.messages.length, ...first.messages);
    builder.reply("The total is 14,091.").user("Now check the invoices.");
    for (let step = 14; step < 30; step += 1) builder.tool("read_file", `invoice ${step}\n${"6,6\n".repeat(700)}`);
    const second = await compact(input(builder.messages, builder.newId, summarizer));
    expect(second.status).toBe("compacted");
    const entry = summarizer.calls[1]!.user.split("\n").find((line) => line.startsWith(`[${target.id}]`))!;
    expect(entry).toContain("ledger");
    expect(entry).toMatch(/TOTAL=10\d\d/);
    expect(entry).not.toContain("[tool output pruned");
  });

  it("never folds away the running turn's request: after two in-loop compactions of a first long turn the user message is still there", async () => {
    const builder = session(0);
    builder.user("Audit every ledger and tell me the total.");
    const request = builder.messages.at(-1)!;
    const summarizer = new FakeSummarizer();
    let context = builder.messages;
    for (let round = 0; round < 3; round += 1) {
      for (let step = 0; step < 14; step += 1) builder.tool("read_file", `ledger ${round}.${step}\n${"5,5\n".repeat(700)}`);
      const result = await compact(input([...builder.messages], builder.newId, summarizer));
      expect(result.status).toBe("compacted");
      context = result.messages;
      builder.messages.splice(0, builder.messages.length, ...context);
      expect(context.filter((message) => message.role === "user" && message.kind !== "summary").map((message) => message.id)).toEqual([request.id]);
      for (const call of summarizer.calls) expect(call.turnIds).not.toContain(request.id);
    }
    expect(summarizer.calls.length).toBeGreaterThanOrEqual(3);
  });

  it("sends the first message of the middle too (every folded message exactly once)", async () => {
    const { messages, newId } = session(20);
    const summarizer = new FakeSummarizer();
    const result = await compact(input(messages, newId, summarizer));
    const kept = new Set(result.messages.map((message) => message.id));
    const folded = messages.filter((message) => !kept.has(message.id)).map((message) => message.id);
    expect(folded.length).toBeGreaterThan(10);
    expect(summarizer.calls.flatMap((call) => turnIdsOf(call.user))).toEqual(folded);
  });
});
