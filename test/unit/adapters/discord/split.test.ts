import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planParts, splitMessage, type PlannedPart, type SplitOptions } from "../../../../src/adapters/discord/split.js";

const FENCE_LINE = /^ {0,3}```/;
/** Pinned so runs repeat; set FAST_CHECK_SEED to explore other inputs. */
const SEED = Number(process.env.FAST_CHECK_SEED ?? 20_261_130);
const RUNS = Number(process.env.FAST_CHECK_RUNS ?? 1);
const fenceLines = (part: string): string[] => part.split("\n").filter((line) => FENCE_LINE.test(line));

/** Every part fits, renders on its own, and together they are the source minus cut whitespace. */
function expectFaithfulSplit(text: string, parts: PlannedPart[], options: { maxLength: number; balanced: boolean }): void {
  let previousEnd = 0;
  for (const part of parts) {
    expect(part.text.length).toBeLessThanOrEqual(options.maxLength);
    expect(part.text).toBe(part.reopen + text.slice(part.start, part.end) + part.close);
    expect(part.reopen).toMatch(/^(```[\w+\-.#]*\n)?$/);
    expect(["", "```", "\n```"]).toContain(part.close);
    expect(text.slice(previousEnd, part.start).trim()).toBe("");
    expect(text.slice(part.start, part.end).trim()).not.toBe("");
    if (options.balanced) expect(fenceLines(part.text).length % 2).toBe(0);
    previousEnd = part.end;
  }
  expect(text.slice(previousEnd).trim()).toBe("");
}

const words = (count: number, word = "lorem"): string => Array.from({ length: count }, (_, i) => `${word}${i % 10}`).join(" ");

describe("splitMessage", () => {
  it("leaves a short reply alone and sends nothing for blank text", () => {
    expect(splitMessage("hello **world**")).toEqual(["hello **world**"]);
    expect(splitMessage("")).toEqual([]);
    expect(splitMessage(" \n\n  ")).toEqual([]);
  });

  it("cuts a 5,000-character reply with code blocks into parts ≤ 2,000 with balanced fences, reopening the language", () => {
    const python = Array.from({ length: 70 }, (_, i) => `    result_${i} = transform(records[${i}], strict=True)`).join("\n");
    const text = [
      words(120, "intro"),
      "```python\ndef main():\n" + python + "\n```",
      words(100, "middle"),
      "```\nplain block\n" + "x = 1\n".repeat(60) + "```",
      words(50, "outro"),
    ].join("\n\n");
    expect(text.length).toBeGreaterThan(5_000);

    const parts = planParts(text);
    expectFaithfulSplit(text, parts, { maxLength: 2000, balanced: true });
    expect(parts.length).toBeGreaterThanOrEqual(3);
    const continued = parts.filter((part) => part.reopen !== "");
    expect(continued.map((part) => part.reopen)).toContain("```python\n");
    // The continuation starts with code, not with a stray empty block.
    for (const part of continued) expect(part.text.split("\n")[1]).not.toMatch(FENCE_LINE);
  });

  it("prefers paragraph breaks, then line breaks, then spaces", () => {
    const paragraphs = Array.from({ length: 6 }, (_, i) => `P${i} ${"a".repeat(700)}`);
    expect(splitMessage(paragraphs.join("\n\n"))).toEqual([
      paragraphs.slice(0, 2).join("\n\n"), paragraphs.slice(2, 4).join("\n\n"), paragraphs.slice(4).join("\n\n"),
    ]);

    const lines = Array.from({ length: 60 }, (_, i) => `line ${i} ${"b".repeat(60)}`);
    const byLine = splitMessage(lines.join("\n"));
    expect(byLine.length).toBe(3);
    expect(byLine.join("\n")).toBe(lines.join("\n"));
    expect(byLine.every((part) => part.split("\n").every((line) => lines.includes(line)))).toBe(true);

    const sentence = words(600);
    const bySpace = splitMessage(sentence);
    expect(bySpace.join(" ")).toBe(sentence);
    expect(bySpace.every((part) => !part.startsWith(" ") && !part.endsWith(" "))).toBe(true);
  });

  it("cuts text without any break hard, and never between the halves of an emoji", () => {
    const letters = "x".repeat(4_500);
    expect(splitMessage(letters).join("")).toBe(letters);

    const emoji = "😀".repeat(3_000);
    const parts = splitMessage(emoji);
    expect(parts.join("")).toBe(emoji);
    for (const part of parts) {
      expect(part.length).toBeLessThanOrEqual(2000);
      expect(part.length % 2).toBe(0);
    }
  });

  it("moves a block's opening line to the next part instead of leaving an empty block", () => {
    // The cut budget (1,896) ends right after the opening line.
    const text = `${"a".repeat(1_885)}\n\`\`\`js\n${"console.log(1);\n".repeat(20)}\`\`\``;
    const parts = splitMessage(text);
    expect(parts).toEqual(["a".repeat(1_885), `\`\`\`js\n${"console.log(1);\n".repeat(20)}\`\`\``]);
  });

  it("keeps a block's closing line in the part instead of reopening an empty block", () => {
    // The cut budget (1,896) ends right before the closing line.
    const block = `\`\`\`py\n${"y = 2\n".repeat(315)}\`\`\``;
    expect(splitMessage(`${block}\n\nafter the block`)).toEqual([block, "after the block"]);
  });

  it("does not mistake three backticks in the middle of a line for a fence when cutting there", () => {
    const text = `${"word ".repeat(379)}\`\`\`inline\`\`\` and more ${"text ".repeat(100)}`;
    for (const part of splitMessage(text)) expect(fenceLines(part).length % 2).toBe(0);
  });

  it("rejects a target too small to hold the fences", () => {
    expect(() => splitMessage("x", { targetLength: 10 })).toThrow(RangeError);
  });

  describe("properties", () => {
    const optionsArbitrary: fc.Arbitrary<Required<SplitOptions>> = fc
      .record({ targetLength: fc.integer({ min: 64, max: 400 }), slack: fc.integer({ min: 0, max: 100 }) })
      .map(({ targetLength, slack }) => ({ targetLength, maxLength: targetLength + slack }));

    const word = fc.stringMatching(/^[a-zA-Z0-9_.,!?()*#>`-]{1,12}$/);
    const line = fc.array(word, { minLength: 0, maxLength: 40 }).map((items) => items.join(" "));
    const prose = fc.array(line, { minLength: 1, maxLength: 8 }).map((lines) => lines.join("\n"));
    const codeBlock = fc
      .record({ language: fc.constantFrom("", "ts", "python", "c++", "shell-session", "not a tag"), lines: fc.array(line, { maxLength: 40 }), closed: fc.boolean() })
      .map(({ language, lines, closed }) => `\`\`\`${language}\n${lines.join("\n")}${closed ? "\n```" : ""}`);
    const markdown = fc.array(fc.oneof(prose, prose, codeBlock), { minLength: 1, maxLength: 12 }).map((blocks) => blocks.join("\n\n"));

    it("markdown: parts fit, fences balance, nothing but cut whitespace is lost", () => {
      fc.assert(
        fc.property(markdown, optionsArbitrary, (text, options) => {
          expectFaithfulSplit(text, planParts(text, options), { maxLength: options.maxLength, balanced: true });
        }),
        { numRuns: 400 * RUNS, seed: SEED },
      );
    });

    it("default limits: every part ≤ 2,000 and balanced", () => {
      fc.assert(
        fc.property(fc.array(markdown, { minLength: 1, maxLength: 4 }).map((texts) => texts.join("\n\n")), (text) => {
          expectFaithfulSplit(text, planParts(text), { maxLength: 2000, balanced: true });
        }),
        { numRuns: 100 * RUNS, seed: SEED },
      );
    });

    it("arbitrary text with backticks, newlines and astral characters: parts fit and nothing is lost", () => {
      const token = fc.constantFrom("`", "```", "```ts", "\n", "\n\n", " ", "a", "word", "😀", "   ```", "é", "``````````");
      const adversarial = fc.array(token, { maxLength: 1_500 }).map((tokens) => tokens.join(""));
      fc.assert(
        fc.property(fc.oneof(adversarial, fc.string({ unit: "grapheme", maxLength: 1_000 })), optionsArbitrary, (text, options) => {
          const parts = planParts(text, options);
          // The one input that cannot balance: a run of backticks longer than a part.
          expectFaithfulSplit(text, parts, { maxLength: options.maxLength, balanced: !/`{20,}/.test(text) });
          for (const part of parts) expect(isHighSurrogate(part.text.charCodeAt(part.text.length - 1))).toBe(false);
        }),
        { numRuns: 400 * RUNS, seed: SEED },
      );
    });
  });
});

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
