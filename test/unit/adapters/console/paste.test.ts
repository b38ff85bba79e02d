import { describe, expect, it } from "vitest";
import { PasteSplitter } from "../../../../src/adapters/console/paste.js";

const START = "\x1b[200~";
const END = "\x1b[201~";

describe("PasteSplitter", () => {
  it("passes typing through and returns a bracketed paste whole, newlines included", () => {
    const splitter = new PasteSplitter();
    expect(splitter.push(`ab${START}line 1\nline 2\r\n${END}c`)).toEqual([
      { kind: "typed", text: "ab" },
      { kind: "paste", text: "line 1\nline 2\r\n" },
      { kind: "typed", text: "c" },
    ]);
  });

  it("joins a paste that arrives over several reads, even with its markers cut in two", () => {
    const splitter = new PasteSplitter();
    const input = `x${START}def f():\n    return 1\n${END}\r`;
    // Every possible cut point, including inside both markers.
    for (let cut = 1; cut < input.length; cut++) {
      const parts = [...splitter.push(input.slice(0, cut)), ...splitter.push(input.slice(cut))];
      const typed = parts.filter((part) => part.kind === "typed").map((part) => part.text).join("");
      expect({ cut, typed, pastes: parts.filter((part) => part.kind === "paste") }).toEqual({
        cut, typed: "x\r", pastes: [{ kind: "paste", text: "def f():\n    return 1\n" }],
      });
    }
  });

  it("holds a trailing Escape until told it was a key, and passes other escape sequences through", () => {
    const splitter = new PasteSplitter();
    expect(splitter.push("a\x1b")).toEqual([{ kind: "typed", text: "a" }]);
    expect(splitter.holding).toBe(true);
    expect(splitter.flush()).toEqual([{ kind: "typed", text: "\x1b" }]);
    expect(splitter.holding).toBe(false);
    expect(splitter.push("\x1b[A")).toEqual([{ kind: "typed", text: "\x1b[A" }]);
  });
});
