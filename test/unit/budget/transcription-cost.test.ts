import { describe, expect, it } from "vitest";
import { transcriptionCost, transcriptionEstimate } from "../../../src/budget/index.js";

describe("the price of a transcription", () => {
  it("is its minutes at the per-minute price, and its transcript's tokens", () => {
    const cost = transcriptionCost({ durationS: 90 }, "x".repeat(400), 0.006);
    expect(cost.usd).toBeCloseTo(0.009, 12);
    expect(cost.tokens).toBe(100);
    expect(transcriptionCost({ durationS: 90 }, "anything", 0)).toMatchObject({ usd: 0 });
  });

  it("without a length from the platform, takes the transcript's at 150 words a minute", () => {
    const words = Array.from({ length: 300 }, () => "word").join(" ");
    expect(transcriptionCost({}, words, 0.5).usd).toBeCloseTo(1, 10);
  });

  it("is reserved by the length, or by the size at 16 kbit/s", () => {
    expect(transcriptionEstimate({ bytes: 1, durationS: 120 }, 0.5).usd).toBeCloseTo(1, 10);
    expect(transcriptionEstimate({ bytes: 240_000 }, 0.5).usd).toBeCloseTo(1, 10);
    expect(transcriptionEstimate({ bytes: 240_000 }, 0.5).tokens).toBeGreaterThan(0);
  });
});
