import { describe, expect, it } from "vitest";
import { containsTerm, normalize, scoreAnswer } from "../../../src/eval/score.js";

describe("eval scoring", () => {
  it("ignores case, accents, markdown emphasis, typographic quotes and dashes, thousands separators", () => {
    expect(normalize("**Tomás** said “OK” – the total is €4,380.50 or 12 000")).toBe('tomas said "ok" - the total is €4380.50 or 12000');
    expect(containsTerm("The order is `PO-48213-KX`.", "po-48213-kx")).toBe(true);
    expect(containsTerm("It was TOMÁS.", "Tomas")).toBe(true);
    expect(containsTerm("Invoice: €4,380.50", "4380.50")).toBe(true);
  });

  it("needs a non-alphanumeric neighbour on both sides", () => {
    expect(containsTerm("140 testers", "40")).toBe(false);
    expect(containsTerm("40 testers", "40")).toBe(true);
    expect(containsTerm("build 2120", "212")).toBe(false);
    expect(containsTerm("(build 212)", "212")).toBe(true);
    expect(containsTerm("the flag checkout_v2_enabled.", "checkout_v2_enabled")).toBe(true);
    expect(containsTerm("anything", "")).toBe(false);
  });

  it("passes when every item appears and no rejected value does", () => {
    const probe = { items: [["release notes"], ["twilio", "messagebird"], ["checklist"]], reject: [] };
    expect(scoreAnswer(probe, "- Release notes for build 214\n- compare MessageBird and others\n- the checklist")).toEqual({ pass: true, missing: [], rejected: [] });
    expect(scoreAnswer(probe, "- Release notes for build 214")).toEqual({ pass: false, missing: ["twilio", "checklist"], rejected: [] });
  });

  it("fails a correction that still gives the old value, even beside the new one", () => {
    const probe = { items: [["2026-11-24", "24 november"]], reject: ["2026-11-19", "19 november"] };
    expect(scoreAnswer(probe, "Tuesday 24 November.").pass).toBe(true);
    expect(scoreAnswer(probe, "It moved from 19 November to 24 November.")).toEqual({ pass: false, missing: [], rejected: ["19 november"] });
    expect(scoreAnswer(probe, "19 November")).toEqual({ pass: false, missing: ["2026-11-24"], rejected: ["19 november"] });
  });
});
