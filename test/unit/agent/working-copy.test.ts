/**
 * The turn's working copy of the state (working-copy.ts): everything but the live messages copied
 * deeply by `copyPlain` (it replaced structuredClone, ~5× the cost), so a failed segment leaves
 * the loaded state as it was; the live messages shared, as they are only ever replaced.
 */
import { describe, expect, it } from "vitest";
import { copyPlain, workingCopy } from "../../../src/agent/working-copy.js";
import { newSessionState } from "../../../src/session/state.js";

describe("workingCopy", () => {
  it("copies every nested field, so changing the copy leaves the original as loaded", () => {
    const state = newSessionState(1_000, 4);
    state.live = [{ id: "m1", role: "system", content: "system" }, { id: "m2", role: "user", content: "hi", tokens: { encoding: "o200k_base", count: 5 } }];
    state.engine = { calibration: { ratio: 1.2, samples: 3 }, notices: ["one"], lastRequest: { model: "m", promptTokens: 10, estimatedTokens: 9, messageCount: 2, lastId: "m2" } };
    state.chat = { timeZone: "Europe/Berlin", model: undefined } as never;
    const original = JSON.parse(JSON.stringify(state)) as typeof state;

    const copy = workingCopy(state);
    expect(copy).toEqual(state);
    // A key whose value is undefined stays (as structuredClone kept it).
    expect(Object.keys(copy.chat!)).toEqual(["timeZone", "model"]);
    (copy.engine.calibration as { ratio: number }).ratio = 9;
    (copy.engine.notices as string[]).push("two");
    copy.stats.turns += 1;
    copy.chat!.timeZone = "UTC";
    copy.live.push({ id: "m3", role: "assistant", content: "hello" });
    expect(JSON.parse(JSON.stringify(state))).toEqual(original);
    // The live messages themselves are shared: never changed in place, only replaced.
    expect(copy.live[1]).toBe(state.live[1]);
  });

  it("copyPlain copies arrays and objects at every depth and keeps primitives", () => {
    const value = { a: [1, { b: ["x", null, true] }], c: { d: { e: 2 } }, f: "text" };
    const copy = copyPlain(value);
    expect(copy).toEqual(value);
    expect(copy.a).not.toBe(value.a);
    expect(copy.a[1]).not.toBe(value.a[1]);
    expect(copy.c.d).not.toBe(value.c.d);
    expect(copyPlain(null)).toBe(null);
    expect(copyPlain(7)).toBe(7);
  });
});
