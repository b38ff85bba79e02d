import { createRequire } from "node:module";
import { Tiktoken, type TiktokenBPE } from "js-tiktoken/lite";
import { describe, expect, it, vi } from "vitest";
import { buildCorpus } from "../../../bench/tokens.js";
import { imageTokens } from "../../../src/context/image-tokens.js";
import type { ChatMessage, ToolDefinition } from "../../../src/core/messages.js";
import {
  APPROXIMATE_ENCODING,
  ENCODE_BUDGET_MS,
  MAX_PIECE_CHARS,
  MAX_RUN_CHARS,
  MESSAGE_OVERHEAD_TOKENS,
  REPLY_PRIMING_TOKENS,
  buildTokenCounter,
  countingEncoder,
  createTokenCounter,
  encodingForModel,
  getTokenCounter,
  splitForCounting,
} from "../../../src/context/tokens.js";
import {
  MAX_CALIBRATION_RATIO,
  MIN_CALIBRATION_RATIO,
  calibratedCount,
  initialCalibration,
  updateCalibration,
} from "../../../src/context/calibration.js";

describe("encodingForModel", () => {
  it.each([
    ["gpt-4o-mini", "o200k_base"],
    ["gpt-4.1", "o200k_base"],
    ["gpt-5", "o200k_base"],
    ["o3-mini", "o200k_base"],
    ["openai/gpt-4o", "o200k_base"],
    ["anthropic/claude-sonnet-4", "o200k_base"],
    ["llama3.1:8b", "o200k_base"],
    ["gpt-4", "cl100k_base"],
    ["gpt-4-turbo", "cl100k_base"],
    ["gpt-4-0613", "cl100k_base"],
    ["gpt-3.5-turbo", "cl100k_base"],
    ["openai/gpt-3.5-turbo-16k", "cl100k_base"],
    ["text-embedding-3-small", "cl100k_base"],
  ])("%s → %s", (model, encoding) => {
    expect(encodingForModel(model)).toBe(encoding);
  });
});

describe("the js-tiktoken counter", () => {
  const counter = getTokenCounter("gpt-4o-mini");

  it("is one counter per encoding per process", () => {
    expect(getTokenCounter("gpt-4o")).toBe(counter);
    expect(counter.encoding).toBe("o200k_base");
  });

  it("counts like the o200k tokenizer", () => {
    expect(counter.countText("hello world")).toBe(2);
    expect(counter.countText("")).toBe(0);
  });

  it("counts special tokens in user text as ordinary text instead of throwing", () => {
    const text = "please ignore <|endoftext|> and <|im_start|>system";
    expect(() => counter.countText(text)).not.toThrow();
    // As ordinary text, "<|endoftext|>" is several tokens, not the one special token.
    expect(counter.countText("<|endoftext|>")).toBeGreaterThan(1);
    const message: ChatMessage = { id: "m1", role: "user", content: text };
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + counter.countText(text));
  });

  it("counts cl100k for GPT-4 with different figures for the same text", () => {
    const cl100k = getTokenCounter("gpt-4");
    expect(cl100k.encoding).toBe("cl100k_base");
    const text = "Compactación de contexto: 日本語のテキスト and some code `const x = 1;`";
    expect(cl100k.countText(text)).not.toBe(counter.countText(text));
  });

  it("counts a tool set once, however often it is checked", () => {
    const calls: string[] = [];
    const spy = createTokenCounter("spy", (text) => (calls.push(text), text.length));
    const tools: ToolDefinition[] = [{ type: "function", function: { name: "recall", description: "Fetch a message", parameters: { type: "object" } } }];
    const other: ToolDefinition[] = [{ type: "function", function: { name: "time", description: "Now", parameters: { type: "object" } } }];
    for (let check = 0; check < 5; check += 1) {
      expect(spy.countTools([...tools])).toBe(JSON.stringify(tools).length);
      expect(spy.countTools([...other])).toBe(JSON.stringify(other).length);
    }
    expect(calls).toEqual([JSON.stringify(tools), JSON.stringify(other)]);
  });

  it("recognises a tool set of the same definition objects without serializing it, and a changed set by its JSON", () => {
    const spy = createTokenCounter("spy", (text) => text.length);
    const recall: ToolDefinition = { type: "function", function: { name: "recall", description: "Fetch a message", parameters: { type: "object" } } };
    const time: ToolDefinition = { type: "function", function: { name: "time", description: "Now", parameters: { type: "object" } } };
    const stringify = vi.spyOn(JSON, "stringify");
    try {
      expect(spy.countTools([recall, time])).toBe(JSON.stringify([recall, time]).length);
      stringify.mockClear();
      for (let check = 0; check < 5; check += 1) expect(spy.countTools([recall, time])).toBe(JSON.stringify([recall, time]).length - 0);
      // The five checks above serialized only what the expectations themselves did.
      expect(stringify).toHaveBeenCalledTimes(5);
      // The same objects in another order, a subset, or an equal copy are other sets.
      expect(spy.countTools([time, recall])).toBe(JSON.stringify([time, recall]).length);
      expect(spy.countTools([recall])).toBe(JSON.stringify([recall]).length);
      const copy: ToolDefinition = { type: "function", function: { name: "recall", description: "Fetch a message, changed", parameters: { type: "object" } } };
      expect(spy.countTools([copy, time])).toBe(JSON.stringify([copy, time]).length);
    } finally {
      stringify.mockRestore();
    }
  });

  it("keeps no decode table (issue 32: ~47 MB of heap for o200k), and counts exactly as js-tiktoken's full encoder", () => {
    const ranks = createRequire(import.meta.url)("js-tiktoken/ranks/cl100k_base") as { default?: TiktokenBPE } & TiktokenBPE;
    const full = new Tiktoken(ranks.default ?? ranks);
    const counting = countingEncoder(Tiktoken, ranks.default ?? ranks);
    expect((full as unknown as { textMap: Map<number, Uint8Array> }).textMap.size).toBeGreaterThan(100_000);
    expect((counting as unknown as { textMap: Map<number, Uint8Array> }).textMap.size).toBe(0);
    for (const text of ["hello world", "what does the queue look like right now, and why?", "ünïcødé 漢字 🙂🙂", "  indented\n\tcode();", "<|endoftext|> as text"]) {
      expect(counting.encode(text, [], [])).toEqual(full.encode(text, [], []));
    }
  });

  it("falls back to chars/4 only when the encoder cannot be built", () => {
    const fallback = buildTokenCounter("o200k_base", () => {
      throw new Error("rank file missing");
    });
    expect(fallback.encoding).toBe(APPROXIMATE_ENCODING);
    expect(fallback.countText("12345678")).toBe(2);
    expect(fallback.countText("123456789")).toBe(3);
  });
});

describe("message counts", () => {
  const spyCounter = () => {
    const calls: string[] = [];
    const counter = createTokenCounter("spy", (text) => {
      calls.push(text);
      return Math.ceil(text.length / 4);
    });
    return { counter, calls };
  };

  it("are cached on the message and never re-encoded", () => {
    const { counter, calls } = spyCounter();
    const message: ChatMessage = { id: "m1", role: "user", content: "x".repeat(40) };
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + 10);
    expect(calls).toHaveLength(1);
    expect(message.tokens).toEqual({ encoding: "spy", count: MESSAGE_OVERHEAD_TOKENS + 10 });
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + 10);
    expect(counter.countMessages([message, message])).toBe(REPLY_PRIMING_TOKENS + 2 * (MESSAGE_OVERHEAD_TOKENS + 10));
    expect(calls).toHaveLength(1);
  });

  it("are recounted when cached under another encoding", () => {
    const { counter, calls } = spyCounter();
    const message: ChatMessage = { id: "m1", role: "user", content: "abcd", tokens: { encoding: "cl100k_base", count: 99 } };
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + 1);
    expect(calls).toEqual(["abcd"]);
    expect(message.tokens).toEqual({ encoding: "spy", count: MESSAGE_OVERHEAD_TOKENS + 1 });
  });

  it("include the tool-call JSON of assistant messages", () => {
    const { counter, calls } = spyCounter();
    const toolCalls = [{ id: "call_1", type: "function" as const, function: { name: "read_file", arguments: '{"path":"src/a.ts"}' } }];
    const message: ChatMessage = { id: "m2", role: "assistant", content: null, tool_calls: toolCalls };
    const json = JSON.stringify(toolCalls);
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + Math.ceil(json.length / 4));
    expect(calls).toEqual([json]);
  });

  it("include an assistant's reasoning sent back with it (DeepSeek), and a user's inline pictures", () => {
    const { counter, calls } = spyCounter();
    const thinking: ChatMessage = { id: "m4", role: "assistant", content: "done", reasoning_content: "r".repeat(40) };
    expect(counter.countMessage(thinking)).toBe(MESSAGE_OVERHEAD_TOKENS + 1 + 10);
    expect(calls).toEqual(["done", "r".repeat(40)]);
    const photo: ChatMessage = {
      id: "m5", role: "user", content: "look",
      attachments: [{ kind: "image", label: "photo", name: "p.jpg", source: { platform: "url", url: "http://x/p" }, inline: true, width: 512, height: 512 }],
    };
    expect(counter.countMessage(photo)).toBe(MESSAGE_OVERHEAD_TOKENS + 1 + imageTokens(512, 512));
  });

  it("count an assistant message with an empty list of calls like one without calls (nothing is sent for it)", () => {
    const { counter, calls } = spyCounter();
    const message: ChatMessage = { id: "m3", role: "assistant", content: "done", tool_calls: [] };
    expect(counter.countMessage(message)).toBe(MESSAGE_OVERHEAD_TOKENS + 1);
    expect(calls).toEqual(["done"]);
  });

  it("count tool definitions", () => {
    const { counter } = spyCounter();
    const tools: ToolDefinition[] = [
      { type: "function", function: { name: "recall", description: "Fetch an original message by id", parameters: { type: "object" } } },
    ];
    expect(counter.countTools([])).toBe(0);
    expect(counter.countTools(tools)).toBe(Math.ceil(JSON.stringify(tools).length / 4));
  });

  it("count a longer tool set afresh after a shorter one it starts with", () => {
    const { counter } = spyCounter();
    const recall: ToolDefinition = { type: "function", function: { name: "recall", description: "Fetch an original message by id", parameters: { type: "object" } } };
    const memory: ToolDefinition = { type: "function", function: { name: "memory", description: "Read and write the user's notes", parameters: { type: "object" } } };
    const one = counter.countTools([recall]);
    expect(counter.countTools([recall, memory])).toBe(Math.ceil(JSON.stringify([recall, memory]).length / 4));
    expect(counter.countTools([recall, memory])).toBeGreaterThan(one);
  });
});

describe("calibration", () => {
  it("takes the first sample as the ratio, then moves 30% towards each new one", () => {
    const first = updateCalibration(initialCalibration(), { estimatedTokens: 1_000, reportedPromptTokens: 1_200 });
    expect(first.state).toEqual({ ratio: 1.2, samples: 1 });
    expect(first.observedRatio).toBeCloseTo(1.2);
    expect(first.suspectedTruncation).toBe(false);

    const second = updateCalibration(first.state, { estimatedTokens: 1_000, reportedPromptTokens: 1_000 });
    expect(second.state.ratio).toBeCloseTo(1.2 + 0.3 * (1.0 - 1.2));
    expect(second.state.samples).toBe(2);
    expect(calibratedCount(second.state, 10_000)).toBe(Math.ceil(10_000 * second.state.ratio));
  });

  it("clamps the ratio to [0.5, 2]", () => {
    const high = updateCalibration(initialCalibration(), { estimatedTokens: 1_000, reportedPromptTokens: 5_000 });
    expect(high.state.ratio).toBe(MAX_CALIBRATION_RATIO);
    expect(high.observedRatio).toBe(5);
    let state = initialCalibration();
    for (let round = 0; round < 20; round += 1) {
      state = updateCalibration(state, { estimatedTokens: 1_000, reportedPromptTokens: 610 }).state;
    }
    expect(state.ratio).toBeGreaterThanOrEqual(MIN_CALIBRATION_RATIO);
    expect(state.ratio).toBeCloseTo(0.61, 2);
  });

  it("flags a report far below the estimate as possible silent truncation and does not learn from it", () => {
    const state = { ratio: 1.1, samples: 4 };
    const update = updateCalibration(state, { estimatedTokens: 10_000, reportedPromptTokens: 2_048 });
    expect(update.suspectedTruncation).toBe(true);
    expect(update.state).toBe(state);
  });

  it("ignores unusable samples", () => {
    const state = initialCalibration();
    expect(updateCalibration(state, { estimatedTokens: 1_000, reportedPromptTokens: 0 }).state).toBe(state);
    expect(updateCalibration(state, { estimatedTokens: 10, reportedPromptTokens: 30 }).state).toBe(state);
    expect(calibratedCount(state, 1_234)).toBe(1_234);
  });
});

/** Seeded pseudo-random text from an alphabet: defeats the encoder's merge cache. */
function randomText(length: number, alphabet: readonly string[], seed = 7): string {
  let state = seed;
  let text = "";
  while (text.length < length) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    text += alphabet[(state >> 8) % alphabet.length];
  }
  return text;
}

const PATHOLOGICAL: Array<[string, string]> = [
  ['"a" × 16,000', "a".repeat(16_000)],
  ["16,000 spaces", " ".repeat(16_000)],
  ["4,096 emoji", "😀".repeat(4_096)],
  ["4,096 Cyrillic letters without spaces", "ж".repeat(4_096)],
  ['"x" + 15,998 spaces + "y"', `x${" ".repeat(15_998)}y`],
  ["16,000 random letters without spaces", randomText(16_000, [..."abcdefghijklmnopqrstuvwxyz"])],
  ["16,000 random CJK characters", randomText(16_000, [..."日本語のテキスト中文字漢"])],
  ["mixed emoji with modifiers and flags", randomText(16_000, ["😀", "🎉", "👍🏽", "🇺🇸", "x"])],
  ["16,000 newlines", "\n".repeat(16_000)],
];

const longestRun = (piece: string): number => Math.max(0, ...(piece.match(/\S+|\s+/g) ?? []).map((run) => run.length));

describe("no input can stall the counter (issue #10)", () => {
  /** The real counter (splitting, budget) in front of a spy encoder that records what it is handed. */
  const spyEncoder = () => {
    const pieces: string[] = [];
    const counter = buildTokenCounter("o200k_base", () => (piece) => (pieces.push(piece), piece.length));
    return { counter, pieces };
  };

  it.each(PATHOLOGICAL)("%s reaches the encoder only in bounded pieces", (_name, text) => {
    const { counter, pieces } = spyEncoder();
    expect(counter.countText(text)).toBe(text.length);
    expect(pieces.join("")).toBe(text);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(MAX_PIECE_CHARS);
      expect(longestRun(piece)).toBeLessThanOrEqual(MAX_RUN_CHARS);
    }
    // Linear: about one piece per MAX_RUN_CHARS bytes of a run, never more; no run in a piece over MAX_RUN_CHARS bytes.
    expect(pieces.length).toBeLessThanOrEqual(Math.ceil(Buffer.byteLength(text) / (MAX_RUN_CHARS - 3)) + 2);
    for (const piece of pieces) expect(Math.max(0, ...(piece.match(/\S+|\s+/g) ?? []).map((run) => Buffer.byteLength(run)))).toBeLessThanOrEqual(MAX_RUN_CHARS);
  });

  it("cuts runs of the smallest two- and three-byte characters (U+0080, U+0800) within MAX_RUN_CHARS bytes", () => {
    for (const text of ["\u0080".repeat(300), "\u0800".repeat(300)]) {
      const pieces = splitForCounting(text);
      expect(pieces.join("")).toBe(text);
      for (const piece of pieces) expect(Buffer.byteLength(piece)).toBeLessThanOrEqual(MAX_RUN_CHARS);
    }
  });

  it("never splits a surrogate pair", () => {
    // U+10000 and U+10FFFF: the lowest and the highest high surrogate (\uD800, \uDBFF), after 3
    // bytes that would put a byte cut between the halves of a pair taken for two characters.
    for (const text of [`a${"😀".repeat(500)}`, "😀".repeat(500), `${"x".repeat(127)}${"😀".repeat(300)}`, `abc${"\u{10000}".repeat(300)}`, `abc${"\u{10FFFF}".repeat(300)}`]) {
      for (const piece of splitForCounting(text)) {
        expect(piece).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
      }
    }
  });

  it("leaves ordinary text in whole pieces, cut only before whitespace", () => {
    const prose = Array.from({ length: 2_000 }, (_, index) => `word${index} and some prose.`).join("\n");
    const pieces = splitForCounting(prose);
    expect(pieces.join("")).toBe(prose);
    expect(pieces.length).toBeGreaterThanOrEqual(Math.ceil(prose.length / MAX_PIECE_CHARS));
    expect(pieces.length).toBeLessThanOrEqual(Math.ceil(prose.length / (MAX_PIECE_CHARS - MAX_RUN_CHARS - 1)));
    for (const piece of pieces.slice(1)) expect(piece).toMatch(/^\s/);
    expect(splitForCounting("hello world")).toEqual(["hello world"]);
    expect(splitForCounting(`hello ${"a".repeat(300)} world`)).toEqual(["hello ", "a".repeat(128), "a".repeat(128), "a".repeat(44), " world"]);
    expect(splitForCounting("")).toEqual([]);
  });

  // Under mutation testing (vitest.mutation.config.ts) the counter is instrumented, every
  // statement counted: the bound is 4 × wider there, still far under an unbounded encoder's seconds.
  const cpuBoundMs = process.env.MUTATION_RUN === "1" ? 200 : 50;

  it.each(PATHOLOGICAL)("%s costs at most 50 ms of CPU with a warm encoder (median of 5)", (_name, text) => {
    const counter = getTokenCounter("gpt-4o-mini");
    counter.countText("warm up");
    const cpuMs: number[] = [];
    for (let run = 0; run < 5; run += 1) {
      // A fresh copy each run; the merge cache is what it is in production (warm).
      const started = process.cpuUsage();
      counter.countText(`${run}${text}`);
      const used = process.cpuUsage(started);
      cpuMs.push((used.user + used.system) / 1000);
    }
    cpuMs.sort((a, b) => a - b);
    expect(cpuMs[2]).toBeLessThan(cpuBoundMs);
  });

  it("counts within 1% of the plain encoder on ordinary prose and code, exactly for almost every message", async () => {
    const { countTokens } = await import("gpt-tokenizer/encoding/o200k_base");
    const plain = (text: string) => countTokens(text, { disallowedSpecial: new Set() });
    // The cutting alone: on a loaded machine a 50,000-character slice can reach the CPU budget,
    // and the extrapolation is tested on its own below.
    const counter = buildTokenCounter("o200k_base", undefined, { budgetMs: Number.POSITIVE_INFINITY });
    const corpus = buildCorpus().text;
    let exact = 0;
    let total = 0;
    for (let start = 0; start + 3_000 <= corpus.length; start += 3_000) {
      const slice = corpus.slice(start, start + 3_000);
      total += 1;
      if (counter.countText(slice) === plain(slice)) exact += 1;
    }
    expect(exact / total).toBeGreaterThan(0.95);
    // A long tool output (the cap is 50,000 characters): still within 1%.
    for (let start = 0; start + 50_000 <= corpus.length; start += 50_000) {
      const slice = corpus.slice(start, start + 50_000);
      expect(Math.abs(counter.countText(slice) - plain(slice)) / plain(slice)).toBeLessThan(0.01);
    }
  });

  it("reads the CPU clock only once the wall clock says the budget may be spent, and never for a one-piece text", () => {
    let cpuReads = 0;
    let wall = 0;
    let cpu = 0;
    // Each piece: 1 ms of wall time; CPU time as the case sets it.
    let cpuPerPiece = 1;
    const encode = (piece: string) => ((wall += 1), (cpu += cpuPerPiece), piece.length);
    const counter = buildTokenCounter("o200k_base", () => encode, { now: () => ((cpuReads += 1), cpu), wallNow: () => wall });
    expect(counter.countText("a short message, one piece")).toBe(26);
    expect(cpuReads).toBe(0);
    // Ten pieces inside the budget: the CPU clock is read once, at the first piece's end.
    const tenPieces = "word ".repeat((MAX_PIECE_CHARS * 10) / 5);
    expect(counter.countText(tenPieces)).toBe(tenPieces.length);
    expect(cpuReads).toBe(1);
    // Past the budget in wall time but not in CPU time (other processes ran): nothing is
    // extrapolated, the CPU clock is asked at each piece from then on.
    cpuReads = 0;
    cpuPerPiece = 0;
    const hundredPieces = "word ".repeat((MAX_PIECE_CHARS * 100) / 5);
    expect(counter.countText(hundredPieces)).toBe(hundredPieces.length);
    const pieces = splitForCounting(hundredPieces).length;
    expect(pieces).toBeGreaterThanOrEqual(100);
    expect(cpuReads).toBe(1 + (pieces - 1 - ENCODE_BUDGET_MS));
  });

  it("stops encoding once its time budget is spent and extrapolates the rest", () => {
    let clock = 0;
    const pieces: string[] = [];
    // Every piece "takes" 1 ms on the fake clock and is one token per character.
    const encode = (piece: string) => ((clock += 1), pieces.push(piece), piece.length);
    const counter = buildTokenCounter("o200k_base", () => encode, { now: () => clock, wallNow: () => clock });
    const huge = "word ".repeat(200_000);
    expect(counter.countText(huge)).toBe(huge.length);
    // The budget runs from the end of the first piece.
    expect(pieces).toHaveLength(ENCODE_BUDGET_MS + 1);
    // Within the budget, everything is encoded.
    pieces.length = 0;
    expect(counter.countText("word ".repeat(1_000))).toBe(5_000);
    expect(pieces.join("")).toBe("word ".repeat(1_000));
    // The extrapolation uses the rate measured so far: half as many tokens per character.
    const halved = buildTokenCounter("o200k_base", () => (piece) => ((clock += 1), Math.ceil(piece.length / 2)), { now: () => clock, wallNow: () => clock });
    expect(halved.countText(huge)).toBeGreaterThanOrEqual(huge.length / 2);
    expect(halved.countText(huge)).toBeLessThanOrEqual(huge.length / 2 + ENCODE_BUDGET_MS);
  });
});
