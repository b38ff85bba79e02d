/**
 * `/timezone`'s name check: IANA names in any case come back in their canonical spelling; what
 * the runtime does not know, offsets and empty input are refused.
 */
import { describe, expect, it } from "vitest";
import { canonicalTimeZone } from "../../../src/core/time-stamp.js";

describe("canonicalTimeZone", () => {
  it("accepts IANA names in any case and returns the canonical spelling", () => {
    expect(canonicalTimeZone("Europe/Berlin")).toBe("Europe/Berlin");
    expect(canonicalTimeZone("europe/berlin")).toBe("Europe/Berlin");
    expect(canonicalTimeZone("  AMERICA/NEW_YORK ")).toBe("America/New_York");
    expect(canonicalTimeZone("utc")).toBe("UTC");
    expect(canonicalTimeZone("Etc/GMT-9")).toBe("Etc/GMT-9");
  });

  it("refuses unknown names, offsets and empty input", () => {
    for (const wrong of ["", "   ", "Mars/Olympus_Mons", "Berlin", "Europe/Berlinn", "+02:00", "-0500", "GMT+25", "default", "Europe/../Berlin"]) {
      expect(canonicalTimeZone(wrong), wrong).toBeUndefined();
    }
  });
});
