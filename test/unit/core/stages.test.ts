/**
 * The turn's points (src/core/stages.ts) and the bench's reading of them (bench/stages.ts):
 * marks reach a subscriber only, and each message's span between points is its own.
 */
import { subscribe, unsubscribe } from "node:diagnostics_channel";
import { describe, expect, it } from "vitest";
import { markStage, turnStages, type StageMark } from "../../../src/core/stages.js";
import { stageTable, turnsOf } from "../../../bench/stages.js";

describe("turn stages", () => {
  it("publishes a mark, with the session and a wall-clock time, only while someone listens", () => {
    expect(turnStages.hasSubscribers).toBe(false);
    markStage("ingress", "console:a");
    const seen: StageMark[] = [];
    const listener = (mark: unknown) => seen.push(mark as StageMark);
    subscribe("longhaul:turn-stage", listener);
    try {
      const before = Date.now();
      markStage("begun", "console:a");
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ stage: "begun", sessionKey: "console:a" });
      expect(seen[0]!.at).toBeGreaterThanOrEqual(before - 1);
      expect(seen[0]!.at).toBeLessThanOrEqual(Date.now() + 1);
    } finally {
      unsubscribe("longhaul:turn-stage", listener);
    }
  });

  it("puts each session's marks with its latest message, first mark of a point only, answered messages only", () => {
    const mark = (stage: StageMark["stage"], sessionKey: string, at: number): StageMark => ({ stage, sessionKey, at });
    const turns = turnsOf([
      mark("sending", "s1", 10), mark("ingress", "s1", 1), mark("ingress", "s2", 2), mark("begun", "s1", 4), mark("begun", "s1", 6),
      mark("begun", "s2", 5), mark("sending", "s2", 9),
      // s1's next message: never answered, left out.
      mark("ingress", "s1", 20), mark("begun", "s1", 21),
    ]);
    expect(turns.map((turn) => [turn.sessionKey, Object.fromEntries(turn.at)])).toEqual([
      ["s1", { ingress: 1, begun: 4, sending: 10 }],
      ["s2", { ingress: 2, begun: 5, sending: 9 }],
    ]);
  });

  it("reports the spans between the points most messages passed, over the messages that passed them all", () => {
    const turn = (sessionKey: string, at: Record<string, number>) => ({ sessionKey, at: new Map(Object.entries(at)) }) as ReturnType<typeof turnsOf>[number];
    const table = stageTable("t", [
      turn("a", { ingress: 0, begun: 1, reserved: 2, sending: 4 }),
      ...Array.from({ length: 10 }, (_, index) => turn(`b${index}`, { ingress: 0, begun: 3, sending: 5 })),
    ]);
    // `reserved` was passed by 1 of 11: not a point of the path; all 11 passed the rest.
    expect(table).toContain("(11 of 11 messages answered)");
    expect(table).not.toContain("reserved");
    // p50, p90, mean, max, how many took a second or more: [1, 3 × 10], [3, 2 × 10], [4, 5 × 10].
    expect(table).toContain("| ingress → begun | 3 | 3 | 2.82 | 3 | 0 |");
    expect(table).toContain("| begun → sending | 2 | 2 | 2.09 | 3 | 0 |");
    expect(table).toContain("| whole path: ingress → sending | 5 | 5 | 4.91 | 5 | 0 |");
  });
});
