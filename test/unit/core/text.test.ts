import { describe, expect, it } from "vitest";
import { wellFormed, wellFormedDeep, wellFormedJson } from "../../../src/core/text.js";

describe("well-formed text", () => {
  it("replaces each lone surrogate with U+FFFD and keeps whole pairs", () => {
    expect(wellFormed("a\ud83d")).toBe("a\ufffd");
    expect(wellFormed("\ude00b")).toBe("\ufffdb");
    expect(wellFormed("🦊 ok")).toBe("🦊 ok");
  });

  it("fixes strings deep in plain data, keys included, and returns the same object when nothing needs fixing", () => {
    const clean = { a: ["x", { b: "🦊" }], n: 1, z: null };
    expect(wellFormedDeep(clean)).toBe(clean);
    const dirty = { text: "cut \ud83d", list: ["ok", "\udc00"], nested: { ["k\ud800"]: "v" }, same: { s: "fine" } };
    const fixed = wellFormedDeep(dirty);
    expect(fixed).toEqual({ text: "cut \ufffd", list: ["ok", "\ufffd"], nested: { "k\ufffd": "v" }, same: { s: "fine" } });
    expect(fixed.same).toBe(dirty.same);
    // The input is left as it was.
    expect(dirty.text).toBe("cut \ud83d");
  });

  it("writes JSON with no surrogate escape (what Redis's cjson refuses), and the same JSON otherwise", () => {
    expect(JSON.stringify({ t: "a\ud83d" })).toBe('{"t":"a\\ud83d"}');
    expect(wellFormedJson({ t: "a\ud83d" })).toBe('{"t":"a\ufffd"}');
    const value = { t: "🦊 and a literal \\ud83d typed by a person" };
    expect(wellFormedJson(value)).toBe(JSON.stringify(value));
  });
});
