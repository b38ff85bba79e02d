import { describe, expect, it } from "vitest";
import {
  autoCompactionAllowed,
  compactionThreshold,
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

describe("the compaction threshold after fixed overhead (issue #31)", () => {
  // 10K of tools and system prompt in a 32K window: the threshold is the 10K plus half of the 22K left.
  const heavy = { contextWindow: 32_000, threshold: 0.5, fixedTokens: 10_000 };

  it("counts COMPACTION_THRESHOLD on the window the fixed overhead leaves", () => {
    expect(thresholdTokens(32_000, 0.5, { fixedTokens: 10_000 })).toBe(21_000);
    expect(needsCompaction({ ...heavy, tokens: 16_500 })).toBe(false);
    expect(needsCompaction({ ...heavy, tokens: 20_999 })).toBe(false);
    expect(needsCompaction({ ...heavy, tokens: 21_000 })).toBe(true);
    expect(thresholdTokens(100_000, 0.6, { fixedTokens: 20_000 })).toBe(68_000);
  });

  it("stops the raise at the hard limit: the request and the reply's room still fit the window", () => {
    // 90% of the window fixed: 28,800 + half of 3,200 would be 30,400; the default hard limit is 28,800.
    expect(thresholdTokens(32_000, 0.5, { fixedTokens: 28_800 })).toBe(defaultHardLimit(32_000));
    expect(needsCompaction({ ...heavy, fixedTokens: 28_800, tokens: 28_800 })).toBe(true);
    expect(needsCompaction({ ...heavy, fixedTokens: 28_800, tokens: 28_799 })).toBe(false);
    // A caller's own hard limit (a large max_tokens) caps it lower; overhead larger than the window too.
    expect(thresholdTokens(32_000, 0.5, { fixedTokens: 10_000, hardLimitTokens: 19_000 })).toBe(19_000);
    expect(thresholdTokens(32_000, 0.5, { fixedTokens: 40_000 })).toBe(28_800);
  });

  it("is never over the hard limit, even one under threshold × window (a max_tokens over half the window)", () => {
    // Above it, every compaction worked towards a result the request could not carry and ran again at the next step.
    expect(thresholdTokens(8_192, 0.5, { fixedTokens: 2_000, hardLimitTokens: 3_000 })).toBe(3_000);
    expect(thresholdTokens(8_192, 0.5, { fixedTokens: 0, hardLimitTokens: 3_000 })).toBe(3_000);
    expect(needsCompaction({ tokens: 3_000, contextWindow: 8_192, threshold: 0.5, hardLimitTokens: 3_000 })).toBe(true);
    expect(needsCompaction({ tokens: 2_999, contextWindow: 8_192, threshold: 0.5, hardLimitTokens: 3_000 })).toBe(false);
    // Never under threshold × window otherwise.
    expect(thresholdTokens(8_192, 0.5, { fixedTokens: 0, hardLimitTokens: 4_096 })).toBe(4_096);
  });

  it("without overhead is exactly threshold × window, unrounded in the trigger, as before", () => {
    for (const contextWindow of [4_097, 8_191, 32_000, 128_000, 200_001]) {
      for (const threshold of [0.3, 0.5, 0.6, 0.95]) {
        for (const overhead of [{}, { fixedTokens: 0 }, { fixedTokens: 0, hardLimitTokens: contextWindow }] as Array<{ fixedTokens?: number; hardLimitTokens?: number }>) {
          // Up to the hard limit (0.95 of a window passes the default one: 90% at most).
          const expected = Math.min(threshold * contextWindow, overhead.hardLimitTokens ?? defaultHardLimit(contextWindow));
          expect(compactionThreshold({ contextWindow, threshold, ...overhead })).toBe(expected);
          expect(thresholdTokens(contextWindow, threshold, overhead)).toBe(Math.floor(expected));
        }
      }
    }
    // 8,191 × 0.5 = 4,095.5: 4,095 tokens are still under it.
    expect(needsCompaction({ tokens: 4_095, contextWindow: 8_191, threshold: 0.5 })).toBe(false);
    expect(needsCompaction({ tokens: 4_096, contextWindow: 8_191, threshold: 0.5 })).toBe(true);
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

  it("judges a compaction against the threshold after overhead: 15K with 10K fixed in 32K is effective", () => {
    const threshold = thresholdTokens(32_000, 0.5, { fixedTokens: 10_000 });
    expect(recordCompactionOutcome({ ineffective: 1 }, { tokensAfter: 15_000, thresholdTokens: threshold })).toEqual({ ineffective: 0 });
    // 85% of 21,000 is 17,850.
    expect(recordCompactionOutcome({ ineffective: 1 }, { tokensAfter: 17_850, thresholdTokens: threshold })).toEqual({ ineffective: 2, suspendedAtTokens: 17_850 });
    expect(recordCompactionOutcome({ ineffective: 1 }, { tokensAfter: 17_849, thresholdTokens: threshold })).toEqual({ ineffective: 0 });
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
