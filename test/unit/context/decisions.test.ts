import { describe, expect, it } from "vitest";
import {
  autoCompactionAllowed,
  defaultHardLimit,
  initialAntiThrash,
  needsCompaction,
  needsHygiene,
  recordCompactionOutcome,
  thresholdTokens,
} from "../../../src/context/decisions.js";

describe("needsHygiene", () => {
  const window = 100_000;
  it("fires at ≥ 4 messages and ≥ threshold × window", () => {
    expect(needsHygiene({ messageCount: 4, tokens: 85_000, contextWindow: window, threshold: 0.85 })).toBe(true);
    expect(needsHygiene({ messageCount: 400, tokens: 99_000, contextWindow: window, threshold: 0.85 })).toBe(true);
  });
  it("does not fire below the threshold or on tiny sessions", () => {
    expect(needsHygiene({ messageCount: 50, tokens: 84_999, contextWindow: window, threshold: 0.85 })).toBe(false);
    expect(needsHygiene({ messageCount: 3, tokens: 99_000, contextWindow: window, threshold: 0.85 })).toBe(false);
  });
});

describe("needsCompaction", () => {
  it("fires at ≥ threshold × window", () => {
    expect(needsCompaction({ tokens: 64_000, contextWindow: 128_000, threshold: 0.5 })).toBe(true);
    expect(needsCompaction({ tokens: 63_999, contextWindow: 128_000, threshold: 0.5 })).toBe(false);
    expect(thresholdTokens(128_000, 0.5)).toBe(64_000);
  });
});

describe("defaultHardLimit", () => {
  it("keeps room for the reply: 10% of the window, at most 8,192", () => {
    expect(defaultHardLimit(8_192)).toBe(8_192 - 819);
    expect(defaultHardLimit(200_000)).toBe(200_000 - 8_192);
  });
});

describe("anti-thrash", () => {
  const window = 100_000;
  const threshold = 50_000;

  it("stops automatic compaction after two ineffective compactions in a row", () => {
    let state = initialAntiThrash();
    state = recordCompactionOutcome(state, { tokensAfter: 55_000, thresholdTokens: threshold });
    expect(state).toEqual({ ineffective: 1 });
    expect(autoCompactionAllowed(state, 56_000, window)).toBe(true);
    state = recordCompactionOutcome(state, { tokensAfter: 56_000, thresholdTokens: threshold });
    expect(state).toEqual({ ineffective: 2, suspendedAtTokens: 56_000 });
    expect(autoCompactionAllowed(state, 56_000, window)).toBe(false);
    expect(autoCompactionAllowed(state, 65_999, window)).toBe(false);
    // Resumes once the context has grown by 10% of the window.
    expect(autoCompactionAllowed(state, 66_000, window)).toBe(true);
  });

  it("counts a compaction that lands just under the threshold as ineffective (issue #31: fixed overhead)", () => {
    // 10K of tools and system in a 32K window: every compaction ended at 94% of the threshold.
    let state = recordCompactionOutcome(initialAntiThrash(), { tokensAfter: 15_040, thresholdTokens: 16_000 });
    expect(state).toEqual({ ineffective: 1 });
    state = recordCompactionOutcome(state, { tokensAfter: 15_100, thresholdTokens: 16_000 });
    expect(state).toEqual({ ineffective: 2, suspendedAtTokens: 15_100 });
    expect(recordCompactionOutcome(initialAntiThrash(), { tokensAfter: 13_599, thresholdTokens: 16_000 })).toEqual({ ineffective: 0 });
  });

  it("resets on an effective compaction", () => {
    const state = recordCompactionOutcome({ ineffective: 1 }, { tokensAfter: 20_000, thresholdTokens: threshold });
    expect(state).toEqual({ ineffective: 0 });
    expect(autoCompactionAllowed(state, 90_000, window)).toBe(true);
  });

  it("suspends again at once when a resumed compaction is still ineffective", () => {
    const state = recordCompactionOutcome({ ineffective: 2, suspendedAtTokens: 56_000 }, { tokensAfter: 67_000, thresholdTokens: threshold });
    expect(state).toEqual({ ineffective: 3, suspendedAtTokens: 67_000 });
    expect(autoCompactionAllowed(state, 67_000, window)).toBe(false);
  });

  it("is lifted by a manual /compress", () => {
    const suspended = { ineffective: 2, suspendedAtTokens: 56_000 };
    expect(recordCompactionOutcome(suspended, { tokensAfter: 30_000, thresholdTokens: threshold, manual: true })).toEqual({ ineffective: 0 });
    // A manual compaction that still cannot get under starts a fresh count instead of staying suspended.
    expect(recordCompactionOutcome(suspended, { tokensAfter: 57_000, thresholdTokens: threshold, manual: true })).toEqual({ ineffective: 1 });
  });
});
