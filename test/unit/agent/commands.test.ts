import { describe, expect, it } from "vitest";
import { parseCommand } from "../../../src/agent/index.js";
import { compactNumber, contextMeter, duration, usd } from "../../../src/core/format.js";

describe("command parsing", () => {
  it("recognises the product's commands, with @bot suffixes and arguments", () => {
    expect(parseCommand("/status")).toEqual({ name: "status", args: "" });
    expect(parseCommand("/compress@longhaul_bot  the trip to Lisbon ")).toEqual({ name: "compress", args: "the trip to Lisbon" });
    expect(parseCommand("/RESET")).toEqual({ name: "reset", args: "" });
  });

  it("leaves ordinary text alone", () => {
    for (const text of ["/etc/hosts is broken", "/shrug", "please /status", "status"]) expect(parseCommand(text)).toBeUndefined();
  });
});

describe("command formatting", () => {
  it("draws the context meter", () => {
    expect(contextMeter(78_000, 128_000)).toBe("▓▓▓▓▓▓░░░░ 61% · 78K / 128K");
    expect(contextMeter(0, 8_192)).toBe("░░░░░░░░░░ 0% · 0 / 8K");
    expect(contextMeter(200_000, 128_000)).toBe("▓▓▓▓▓▓▓▓▓▓ 156% · 200K / 128K");
  });

  it("formats numbers, durations and money", () => {
    expect(compactNumber(1_250_000)).toBe("1.3M");
    expect(compactNumber(2_000_000)).toBe("2M");
    expect(compactNumber(950)).toBe("950");
    expect(duration(3 * 86_400_000 + 5 * 3_600_000)).toBe("3 d 5 h");
    expect(duration(90 * 60_000)).toBe("1 h 30 min");
    expect(usd(0.0183)).toBe("$0.0183");
    expect(usd(12.5)).toBe("$12.50");
  });
});
