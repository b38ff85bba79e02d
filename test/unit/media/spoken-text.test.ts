/**
 * What a voice reply says of an answer (src/media/spoken-text.ts): Markdown read as sentences;
 * code blocks, tables and bare links left out with a mark saying where they are; a long answer
 * cut at a sentence end.
 */
import { describe, expect, it } from "vitest";
import { CODE_MARK, LINK_MARK, REST_MARK, spokenText, TABLE_MARK } from "../../../src/media/spoken-text.js";

describe("spoken text", () => {
  it("reads Markdown as its words: emphasis, inline code and named links keep their words, headings end as sentences", () => {
    const spoken = spokenText("# Plan for Lisbon\n\nTake the **28 tram** at *nine*; the stop is `Martim Moniz`.\n\nSee [the timetable](https://carris.pt/28) first.", 2_000);
    expect(spoken).toEqual({ text: "Plan for Lisbon.\nTake the 28 tram at nine; the stop is Martim Moniz.\nSee the timetable first.", omitted: false, cut: false });
  });

  it("leaves code blocks out and says where they are, once for blocks in a row", () => {
    const answer = "Run this:\n\n```sh\nnpm ci\nnpm test\n```\n\n```js\nconsole.log(1)\n```\n\n    indented code\n\nThen restart.";
    const spoken = spokenText(answer, 2_000);
    expect(spoken.text).toBe(`Run this:\n${CODE_MARK}\nThen restart.`);
    expect(spoken.omitted).toBe(true);
    expect(spoken.text).not.toMatch(/npm|console|indented/);
  });

  it("leaves tables out, and bare links, with their marks", () => {
    const answer = "Prices:\n\n| item | price |\n|---|---|\n| tea | 2 |\n| cake | 4 |\n\nDetails at https://example.com/menu today.";
    const spoken = spokenText(answer, 2_000);
    expect(spoken.text).toBe(`Prices:\n${TABLE_MARK}\nDetails at ${LINK_MARK} today.`);
    expect(spoken.text).not.toMatch(/tea|cake|example/);
    expect(spoken.omitted).toBe(true);
  });

  it("an answer of code alone has nothing to speak", () => {
    expect(spokenText("```python\nprint('hi')\n```", 2_000)).toEqual({ text: "", omitted: true, cut: false });
  });

  it("cuts a long answer at a sentence end within the limit and says the rest is in the text", () => {
    const sentence = "This sentence is about forty characters. ";
    const spoken = spokenText(sentence.repeat(40).trim(), 300);
    expect(spoken.cut).toBe(true);
    expect(spoken.text.length).toBeLessThanOrEqual(300);
    expect(spoken.text.endsWith(`characters. ${REST_MARK}`)).toBe(true);
  });

  it("cuts text without sentence ends at a word, and never inside a surrogate pair", () => {
    const spoken = spokenText("😀a".repeat(300), 120);
    expect(spoken.cut).toBe(true);
    expect(spoken.text.isWellFormed()).toBe(true);
    expect(spoken.text.length).toBeLessThanOrEqual(120);
  });
});

describe("spoken text of a very long answer", () => {
  it("parses only four times what it may speak: a huge answer is cut and says the rest is in the text", () => {
    const answer = `Short start.\n\n\`\`\`\n${"code line\n".repeat(1_000)}\`\`\`\n\n${"More words after the code. ".repeat(400)}`;
    const spoken = spokenText(answer, 500);
    expect(spoken.cut).toBe(true);
    expect(spoken.omitted).toBe(true);
    expect(spoken.text).toBe(`Short start.\n${CODE_MARK} ${REST_MARK}`);
  });
});
