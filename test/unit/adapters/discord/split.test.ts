import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planParts, splitMessage, type PlannedPart, type SplitOptions } from "../../../../src/adapters/discord/split.js";
import { renderTables } from "../../../../src/adapters/discord/tables.js";
import { hasUnsplittableCode, renderModel } from "../../../helpers/discord-render-model.js";

/** Pinned so runs repeat; set FAST_CHECK_SEED to explore other inputs. */
const SEED = Number(process.env.FAST_CHECK_SEED ?? 20_261_130);
const RUNS = Number(process.env.FAST_CHECK_RUNS ?? 1);
const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });
const boundariesOf = (text: string): Set<number> => new Set([...segmenter.segment(text)].map((segment) => segment.index).concat(text.length));

/**
 * Every part fits and, rendered on its own by the model of Discord's client, shows each
 * character of its stretch of the source as the whole message would: code as code (same
 * language), inline code as inline code, prose as prose. Parts together are the source minus
 * whitespace at the cuts, and every cut falls on a grapheme boundary.
 */
function expectFaithfulSplit(text: string, parts: PlannedPart[], maxLength: number): void {
  const whole = renderModel(text);
  const boundaries = boundariesOf(text);
  const mismatches: string[] = [];
  let previousEnd = 0;
  for (const [number, part] of parts.entries()) {
    expect(part.text.length).toBeLessThanOrEqual(maxLength);
    expect(part.text).toBe(part.reopen + text.slice(part.start, part.end) + part.close);
    expect(text.slice(previousEnd, part.start).trim()).toBe("");
    expect(part.text.trim()).not.toBe("");
    expect(boundaries.has(part.start) && boundaries.has(part.end)).toBe(true);
    const rendered = renderModel(part.text);
    for (let index = part.start; index < part.end && mismatches.length < 3; index += 1) {
      if (/\s/.test(text.charAt(index))) continue;
      const seen = rendered[part.reopen.length + index - part.start];
      if (seen !== whole[index]) {
        mismatches.push(`part ${number}, source index ${index} (${JSON.stringify(text.slice(Math.max(0, index - 12), index + 12))}): whole shows ${whole[index]}, part shows ${seen}`);
      }
    }
    previousEnd = part.end;
  }
  expect(text.slice(previousEnd).trim()).toBe("");
  expect(mismatches).toEqual([]);
}

const words = (count: number, word = "lorem"): string => Array.from({ length: count }, (_, i) => `${word}${i % 10}`).join(" ");

describe("splitMessage", () => {
  it("leaves a short reply alone and sends nothing for blank text", () => {
    expect(splitMessage("hello **world**")).toEqual(["hello **world**"]);
    expect(splitMessage("")).toEqual([]);
    expect(splitMessage(" \n\n  ")).toEqual([]);
  });

  it("cuts a 5,000-character reply with code blocks into parts ≤ 2,000, reopening the language", () => {
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
    expectFaithfulSplit(text, parts, 2000);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    expect(parts.filter((part) => part.reopen !== "").map((part) => part.reopen)).toContain("```python\n");
  });

  it("treats a fence that does not start a line as Discord does: `Example: ```js` opens a block, reopened after the cut", () => {
    const code = Array.from({ length: 120 }, (_, i) => `  # step ${i}: keep going\n  run(${i})`).join("\n");
    const text = `Example: \`\`\`js\n${code}\n\`\`\` and that is all.`;
    const parts = planParts(text);
    expectFaithfulSplit(text, parts, 2000);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    // The continuation is code, not prose: "# step" would otherwise render as a heading.
    for (const part of parts.slice(1)) expect(part.text.startsWith("```js\n")).toBe(true);
    expect(parts[0]?.text.endsWith("\n```")).toBe(true);
  });

  it("treats a fence indented four spaces under a list item as a fence (CommonMark would not)", () => {
    const steps = Array.from({ length: 4 }, (_, i) => `${i + 1}. Step ${i}\n    \`\`\`bash\n${"    echo step && make build # not a heading\n".repeat(30)}    \`\`\``).join("\n");
    const parts = planParts(steps, { targetLength: 700, maxLength: 800 });
    expectFaithfulSplit(steps, parts, 800);
    expect(parts.some((part) => part.reopen === "```bash\n")).toBe(true);
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

    const sentence = words(600);
    const bySpace = splitMessage(sentence);
    expect(bySpace.join(" ")).toBe(sentence);
    expect(bySpace.every((part) => !part.startsWith(" ") && !part.endsWith(" "))).toBe(true);
  });

  it("cuts text without any break hard, never inside an emoji, a flag, a family or an accented letter", () => {
    const letters = "x".repeat(4_500);
    expect(splitMessage(letters).join("")).toBe(letters);
    for (const grapheme of ["😀", "🇫🇷", "👩‍👩‍👧‍👦", "é", "🏳️‍🌈"]) {
      const text = `x${grapheme.repeat(Math.ceil(4_500 / grapheme.length))}`;
      const parts = planParts(text);
      expectFaithfulSplit(text, parts, 2000);
      expect(parts.map((part) => part.text).join("")).toBe(text);
    }
  });

  it("never cuts inside inline code, even when a space there is the last one before the limit", () => {
    const text = `${"word ".repeat(370)}\`npm run build -- --watch --mode=development --no-color\` ${"tail ".repeat(200)}`;
    const parts = planParts(text);
    expectFaithfulSplit(text, parts, 2000);
    expect(parts.some((part) => part.text.includes("`npm run build -- --watch --mode=development --no-color`"))).toBe(true);
  });

  it("does not start a part with a heading, quote or list marker that was mid-line", () => {
    const text = `${"word ".repeat(378)}# not a heading > not a quote - not a list ${"word ".repeat(100)}`;
    for (const part of splitMessage(text).slice(1)) expect(part).not.toMatch(/^(#{1,3} |> |- )/);
  });

  it("moves a block's opening fence to the next part instead of leaving an empty block", () => {
    const text = `${"a".repeat(1_885)}\n\`\`\`js\n${"console.log(1);\n".repeat(20)}\`\`\``;
    expect(splitMessage(text)).toEqual(["a".repeat(1_885), `\`\`\`js\n${"console.log(1);\n".repeat(20)}\`\`\``]);
  });

  it("keeps a block's closing fence in the part instead of reopening an empty block", () => {
    const block = `\`\`\`py\n${"y = 2\n".repeat(315)}\`\`\``;
    expect(splitMessage(`${block}\n\nafter the block`)).toEqual([block, "after the block"]);
  });

  it("renders a Markdown table as an aligned monospace block", () => {
    const table = "Results:\n\n| Service | Latency | Status |\n|:--|--:|:-:|\n| **api** | 12 ms | ✅ |\n| `db` | 3 ms | ok |\n| 東京 | 120 ms | slow |\n\nDone.";
    expect(splitMessage(table)).toEqual([
      "Results:\n\n```\nService | Latency | Status\n--------+---------+-------\napi     |   12 ms |   ✅\ndb      |    3 ms |   ok\n東京    |  120 ms |  slow\n```\n\nDone.",
    ]);
  });

  it("leaves tables alone inside code, without a delimiter row, or after an unclosed fence", () => {
    for (const text of [
      "```\n| a | b |\n|---|---|\n| 1 | 2 |\n```",
      "| a | b |\n| 1 | 2 |",
      "Type ``` then:\n\n| a | b |\n|---|---|\n| 1 | 2 |",
    ]) expect(splitMessage(text)).toEqual([text]);
  });

  it("rejects a target too small to hold the fences", () => {
    expect(() => splitMessage("x", { targetLength: 10 })).toThrow(RangeError);
  });

  describe("properties against the model of Discord's renderer", () => {
    const optionsArbitrary: fc.Arbitrary<Required<SplitOptions>> = fc
      .record({ targetLength: fc.integer({ min: 64, max: 400 }), slack: fc.integer({ min: 0, max: 100 }) })
      .map(({ targetLength, slack }) => ({ targetLength, maxLength: targetLength + slack }));

    const word = fc.oneof(
      { weight: 8, arbitrary: fc.stringMatching(/^[a-zA-Z0-9_.,!?()*#>-]{1,12}$/) },
      { weight: 1, arbitrary: fc.constantFrom("🇫🇷", "👩‍👩‍👧", "é", "😀", "東京", "\\`", "\\*") },
      { weight: 1, arbitrary: fc.stringMatching(/^[a-z ]{1,20}$/).map((code) => `\`${code.trim() || "x"}\``) },
    );
    const line = fc.array(word, { minLength: 0, maxLength: 30 }).map((items) => items.join(" "));
    const prose = fc.array(line, { minLength: 1, maxLength: 8 }).map((lines) => lines.join("\n"));
    const codeLine = fc.oneof(line, line.map((text) => `# ${text}`), line.map((text) => `    ${text}`));
    const codeBlock = fc
      .record({
        language: fc.constantFrom("", "ts", "python", "c++", "shell-session", "not a tag", "JS"),
        lead: fc.constantFrom("", "Example: ", "1. Step\n    ", "- item\n  ", "> "),
        lines: fc.array(codeLine, { minLength: 1, maxLength: 40 }),
        closer: fc.constantFrom("\n```", "```", "\n    ```"),
      })
      .map(({ language, lead, lines, closer }) => `${lead}\`\`\`${language}\n${lines.join("\n")}x${closer}`);
    const table = fc.array(fc.tuple(word, word), { minLength: 1, maxLength: 6 })
      .map((rows) => `| name | value |\n|---|---|\n${rows.map(([a, b]) => `| ${a.replace(/[|`\\]/g, "")} | ${b.replace(/[|`\\]/g, "")} |`).join("\n")}`);
    const markdown = fc.array(fc.oneof(prose, prose, codeBlock, table), { minLength: 1, maxLength: 12 }).map((blocks) => blocks.join("\n\n"));

    it("markdown with fences anywhere, lists, tables, inline code and emoji: every part renders like its stretch of the whole", () => {
      fc.assert(
        fc.property(markdown, optionsArbitrary, (source, options) => {
          // What is split is the rendered text (tables already turned into blocks).
          const text = renderTables(source);
          fc.pre(!hasUnsplittableCode(text, options.targetLength / 2));
          expectFaithfulSplit(text, planParts(text, options), options.maxLength);
        }),
        { numRuns: 300 * RUNS, seed: SEED },
      );
    });

    it("default limits: every part ≤ 2,000 and renders like its stretch of the whole", () => {
      fc.assert(
        fc.property(fc.array(markdown, { minLength: 1, maxLength: 4 }).map((texts) => texts.join("\n\n")), (text) => {
          expectFaithfulSplit(text, planParts(text), 2000);
        }),
        { numRuns: 60 * RUNS, seed: SEED },
      );
    });

    it("adversarial backticks, escapes, newlines and astral characters: parts fit, nothing is lost, code stays code", () => {
      const token = fc.constantFrom("`", "``", "```", "```ts\n", "\n", "\n\n", " ", "a", "word", "😀", "🇫🇷", "   ```", "é", "\\", "\\`", "# ", "> ");
      const adversarial = fc.array(token, { maxLength: 1_500 }).map((tokens) => tokens.join(""));
      fc.assert(
        fc.property(fc.oneof(adversarial, fc.string({ unit: "grapheme", maxLength: 1_000 })), optionsArbitrary, (text, options) => {
          fc.pre(!hasUnsplittableCode(text, options.targetLength / 2));
          expectFaithfulSplit(text, planParts(text, options), options.maxLength);
        }),
        { numRuns: 400 * RUNS, seed: SEED },
      );
    });
  });
});
