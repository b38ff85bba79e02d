import { describe, expect, it } from "vitest";
import { renderForTerminal, stripControlCharacters } from "../../../../src/adapters/console/render.js";

const ESC = "\x1b";
const plain = (text: string) => renderForTerminal(text, { color: false });
const ansi = (text: string) => renderForTerminal(text, { color: true });

describe("renderForTerminal", () => {
  it("styles bold, italics, strikethrough and inline code with SGR codes", () => {
    expect(ansi("a **b** *c* ~~d~~ `e`")).toBe(`a ${ESC}[1mb${ESC}[22m ${ESC}[3mc${ESC}[23m ${ESC}[9md${ESC}[29m ${ESC}[36me${ESC}[39m`);
  });

  it("draws a fenced code block behind a gutter, without the fences, keeping its indentation", () => {
    const out = plain("Run this:\n\n```python\ndef f():\n    return 1\n```\n\nDone.");
    expect(out.split("\n")).toEqual(["Run this:", "", "╭ python", "│ def f():", "│     return 1", "", "Done."]);
    expect(out).not.toContain("```");
  });

  it("keeps Markdown inside code blocks literal", () => {
    expect(plain("```\n**not bold** <b>\n```")).toBe("│ **not bold** <b>");
    expect(ansi("```\n**x**\n```")).not.toContain(`${ESC}[1m`);
  });

  it("renders bullet and numbered lists, nested lists indented under their item", () => {
    expect(plain("- one\n- two\n  - inner\n- three").split("\n")).toEqual(["• one", "• two", "  ◦ inner", "• three"]);
    expect(plain("3. c\n4. d").split("\n")).toEqual(["3. c", "4. d"]);
    expect(plain("1. first\n\n   more of first\n2. second").split("\n")).toEqual(["1. first", "", "   more of first", "", "2. second"]);
  });

  it("renders headings, quotes, rules and links", () => {
    expect(ansi("## Plan")).toBe(`${ESC}[1mPlan${ESC}[22m`);
    expect(plain("> a\n> b")).toBe("▎ a\n▎ b");
    expect(plain("[docs](https://example.com/d)")).toBe("docs (https://example.com/d)");
    expect(plain("---")).toMatch(/^─{3,}$/);
  });

  it("lays a table out as aligned columns", () => {
    expect(plain("| name | n |\n|---|---|\n| alpha | 1 |\n| b | 22 |").split("\n")).toEqual([
      "name   n",
      "─────  ──",
      "alpha  1",
      "b      22",
    ]);
  });

  it("leaves unbalanced markup as the model wrote it", () => {
    expect(plain("**open and `tick")).toBe("**open and `tick");
  });

  it("without colours keeps backticks around inline code", () => {
    expect(plain("use `ls -la` here")).toBe("use `ls -la` here");
  });

  it("never lets a control sequence from the model reach the terminal", () => {
    const hostile = `title${ESC}]0;owned\x07 and ${ESC}[2J cleared\r\nline`;
    expect(stripControlCharacters(hostile)).toBe("title]0;owned and [2J cleared\nline");
    const out = ansi(hostile);
    // Our own SGR codes are the only escapes left.
    expect(out.replace(/\x1b\[[0-9;]*m/g, "")).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f]/);
  });
});
