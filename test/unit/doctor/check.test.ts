import { describe, expect, it } from "vitest";
import { EXIT_CODES, exitCodeOf, fail, formatResult, hostOf, ok, warn } from "../../../src/doctor/check.js";

describe("doctor reports", () => {
  it("exits 0 when all passed, 1 with warnings only, else with the first failing group's code", () => {
    expect(exitCodeOf([ok("redis", "fine")])).toBe(EXIT_CODES.ok);
    expect(exitCodeOf([ok("redis", "fine"), warn("redis", "no AOF", "turn it on")])).toBe(EXIT_CODES.warnings);
    expect(exitCodeOf([fail("platform", "bad token", "fix it"), fail("llm", "bad key", "fix it"), warn("redis", "x", "y")])).toBe(EXIT_CODES.llm);
    expect(exitCodeOf([fail("mcp", "server down", "start it")])).toBe(EXIT_CODES.mcp);
    expect(new Set(Object.values(EXIT_CODES)).size).toBe(Object.keys(EXIT_CODES).length);
  });

  it("prints each result on one line, with the fix on problems only", () => {
    expect(formatResult(fail("llm", "key\nrejected", "set\r\nLLM_API_KEY"), { color: false })).toBe("FAIL  llm       key rejected → fix: set LLM_API_KEY");
    expect(formatResult({ ...ok("redis", "reachable"), fix: "ignored" }, { color: false })).toBe("ok    redis     reachable");
    expect(formatResult(warn("redis", "no AOF", "x"), { color: true })).toBe("\x1b[33mWARN\x1b[0m  redis     no AOF → fix: x");
  });

  it("names hosts without credentials, paths or queries", () => {
    expect(hostOf("redis://:s3cret@db.internal:6380/2")).toBe("db.internal:6380");
    expect(hostOf("https://api.telegram.org/bot123:ABC/getMe?x=1")).toBe("api.telegram.org");
  });
});
