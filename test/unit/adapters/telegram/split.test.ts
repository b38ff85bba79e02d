import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { escapeHtml, htmlToPlainText, renderMarkdown } from "../../../../src/adapters/telegram/render.js";
import { splitHtml, TELEGRAM_MESSAGE_LIMIT } from "../../../../src/adapters/telegram/split.js";
import { parseTelegramHtml, type ParsedHtml } from "../../../fakes/fake-telegram.js";

/** Telegram's view of a part (the fake's independent parser): its text, or the 400. */
function parsed(html: string): ParsedHtml {
  const result = parseTelegramHtml(html);
  if ("error" in result) throw new Error(`${result.error} in ${JSON.stringify(html.slice(0, 200))}`);
  return result;
}

function expectValidParts(parts: string[], maxLength: number): void {
  for (const part of parts) expect(parsed(part).text.length).toBeLessThanOrEqual(maxLength);
}

/** Text as Telegram reads it, never our own decoder. */
const plain = (html: string) => parsed(html).text;
const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });
const graphemeBoundaries = (text: string) => new Set([...segmenter.segment(text)].map((segment) => segment.index).concat(text.length));

/** A long model answer: prose paragraphs, lists and several code blocks, ~10,000 characters. */
function longAnswer(): { markdown: string; codeBlocks: string[] } {
  const codeBlocks: string[] = [];
  const sections: string[] = [];
  for (let section = 0; section < 6; section++) {
    sections.push(`## Step ${section + 1}`);
    sections.push(`This step explains why the cache <key> & value stay consistent. `.repeat(8).trim());
    sections.push(["- first point", "- second point with `inline <code>`", "- third point"].join("\n"));
    const code = Array.from({ length: 17 }, (_, line) => `    if (items[${line}] < limit && ok) { total += items[${line}]; } // step ${section}`).join("\n");
    codeBlocks.push(code);
    sections.push("```typescript\n" + code + "\n```");
  }
  return { markdown: sections.join("\n\n"), codeBlocks };
}

describe("splitHtml", () => {
  it("returns short text as one part, untouched", () => {
    expect(splitHtml("<b>hi</b> there")).toEqual(["<b>hi</b> there"]);
  });

  it("splits a 10,000-character answer into valid parts with every code block intact", () => {
    const { markdown, codeBlocks } = longAnswer();
    expect(markdown.length).toBeGreaterThan(10_000);
    const html = renderMarkdown(markdown);
    const parts = splitHtml(html);
    expect(parts.length).toBeGreaterThanOrEqual(3);
    expectValidParts(parts, 4096);
    for (const code of codeBlocks) {
      const rendered = `<pre><code class="language-typescript">${escapeHtml(code)}</code></pre>`;
      expect(parts.filter((part) => part.includes(rendered))).toHaveLength(1);
    }
    expect(parts.map(plain).join("")).toBe(plain(html));
  });

  it("prefers a blank line, then a line break, then a space", () => {
    const paragraph = "word ".repeat(150).trim();
    const parts = splitHtml([paragraph, paragraph, paragraph].join("\n\n"), { maxLength: 1600 });
    expect(parts[0]?.endsWith(`${paragraph}\n\n${paragraph}\n\n`)).toBe(true);

    const lines = Array.from({ length: 40 }, (_, index) => `line ${index} ${"x".repeat(30)}`).join("\n");
    for (const part of splitHtml(lines, { maxLength: 500 }).slice(0, -1)) expect(part.endsWith("\n")).toBe(true);

    const words = "lorem ipsum ".repeat(200);
    for (const part of splitHtml(words, { maxLength: 300 }).slice(0, -1)) expect(part.endsWith(" ")).toBe(true);
  });

  it("closes and reopens a code block that cannot fit, keeping its language", () => {
    const code = Array.from({ length: 300 }, (_, index) => `print(${index} < ${index + 1})`).join("\n");
    const html = renderMarkdown("Intro\n\n```python\n" + code + "\n```\n\nOutro");
    const parts = splitHtml(html);
    expectValidParts(parts, 4096);
    const inside = parts.filter((part) => part.includes("print("));
    expect(inside.length).toBeGreaterThan(1);
    for (const part of inside) {
      expect(part).toContain('<pre><code class="language-python">');
      expect(part).toContain("</code></pre>");
    }
    // Lines of code are never cut in the middle.
    for (const part of inside.slice(0, -1)) expect(part.endsWith("\n</code></pre>") || part.endsWith("\n\n")).toBe(true);
    expect(parts.map(plain).join("")).toBe(plain(html));
  });

  it("never cuts an entity, a tag, a flag or a ZWJ emoji, even with no break at all", () => {
    const html = `<b>${escapeHtml("<&>😀🇺🇦👩‍👩‍👧‍👦".repeat(800))}</b>`;
    const parts = splitHtml(html);
    expectValidParts(parts, 4096);
    const whole = plain(html);
    const boundaries = graphemeBoundaries(whole);
    let offset = 0;
    for (const part of parts) {
      offset += plain(part).length;
      expect(boundaries.has(offset)).toBe(true);
    }
    for (const part of parts) {
      expect(part).toMatch(/^<b>/);
      expect(part).toMatch(/<\/b>$/);
      expect(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(part)).toBe(false);
    }
    expect(parts.map(plain).join("")).toBe(plain(html));
  });

  it("measures a part as Telegram does, after parsing: escapes count one unit", () => {
    const code = "a<b && c>d;\n".repeat(600);
    const html = renderMarkdown("```\n" + code + "```");
    expect(html.length).toBeGreaterThan(10_000);
    const parts = splitHtml(html);
    expect(parts).toHaveLength(2);
    expectValidParts(parts, 4096);
    expect(parts.map(plain).join("")).toBe(plain(html));
  });

  it("moves a code block that fits whole to the next part instead of cutting it", () => {
    const block = "```sh\n" + "echo hello world\n".repeat(100) + "```";
    const html = renderMarkdown(["Intro line.", "x".repeat(2900), block, "Outro"].join("\n\n"));
    const parts = splitHtml(html);
    expect(parts.filter((part) => part.includes("echo"))).toHaveLength(1);
  });

  it("keeps every part valid for Telegram, within the limit, on grapheme boundaries, losing nothing (property)", () => {
    const piece = fc.oneof(
      fc.constantFrom("**", "*", "_", "~~", "`", "\n```js\n", "\n```\n", "\n    code\n", "\n> ", "\n- ", "\n| a | b |\n|---|---|\n| c | d |\n", "\n\n", "\n", " ", "<", "&", "[a](https://e.com/x)", "[l](http://localhost:1)", "😀", "🇺🇦", "👩‍👩‍👧‍👦", "é"),
      fc.string({ minLength: 1, maxLength: 40 }),
      fc.string({ minLength: 1, maxLength: 3 }).map((word) => word.repeat(90)),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 80 }), fc.integer({ min: 200, max: 1500 }), (pieces, maxLength) => {
        const html = renderMarkdown(pieces.join(""));
        const parts = splitHtml(html, { maxLength });
        expectValidParts(parts, maxLength);
        const whole = plain(html);
        expect(parts.map(plain).join("")).toBe(whole);
        const boundaries = graphemeBoundaries(whole);
        let offset = 0;
        for (const part of parts) {
          offset += plain(part).length;
          expect(boundaries.has(offset)).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("never exceeds Telegram's limit whatever is asked", () => {
    const parts = splitHtml("a".repeat(20_000), { maxLength: 10_000 });
    for (const part of parts) expect(plain(part).length).toBeLessThanOrEqual(TELEGRAM_MESSAGE_LIMIT);
  });
  it("keeps at most 100 formatting entities per part, reopened ones counted, losing no formatting", () => {
    const html = renderMarkdown(Array.from({ length: 250 }, (_, index) => `**w${index}** _i${index}_`).join(" "));
    const parts = splitHtml(html);
    expect(parts.length).toBeGreaterThanOrEqual(5);
    for (const part of parts) expect(parsed(part).entities.length).toBeLessThanOrEqual(100);
    expect(parts.flatMap((part) => parsed(part).entities).length).toBe(500);
    expect(parts.map(plain).join("")).toBe(plain(html));
  });

  it("keeps each part's markup source under Telegram's entity size (link-heavy text)", () => {
    const url = `https://example.com/${"x".repeat(150)}`;
    const html = renderMarkdown(Array.from({ length: 90 }, (_, index) => `[r${index}](${url}${index})`).join(" "));
    expect(html.length).toBeGreaterThan(9_500);
    const parts = splitHtml(html);
    expect(parts.length).toBeGreaterThanOrEqual(2);
    for (const part of parts) expect(part.length).toBeLessThanOrEqual(9_000);
    expect(parts.flatMap((part) => parsed(part).entities).filter((entity) => entity.type === "text_link")).toHaveLength(90);
  });
});
