/**
 * formatStamp reads a zone's offset once per UTC day instead of asking Intl for every message
 * (src/core/time-stamp.ts). Judged here against Intl's own answer for the very instant
 * (formatToParts, read as the stamp's fields), over random instants and around every offset
 * change of 2020–2031 in zones with unusual rules: half-hour and 45-minute offsets, a 30-minute
 * daylight-saving shift (Lord Howe), negative DST (Dublin), Ramadan changes (Casablanca), a
 * two-hour shift (Troll), southern-hemisphere DST (Santiago, Chatham).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatStamp } from "../../../src/core/time-stamp.js";
import { propertyRuns } from "../../helpers/property-runs.js";

const ZONES = [
  "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham", "Asia/Kathmandu", "America/St_Johns",
  "Europe/Dublin", "Africa/Casablanca", "Antarctica/Troll", "America/Santiago", "Asia/Kolkata", "Pacific/Kiritimati", "UTC",
];

const reference = new Map<string, Intl.DateTimeFormat>();
/** What Intl says the wall clock reads at `at` in `zone`, as `Www YYYY-MM-DD HH:MM zone`. */
function intlStamp(at: number, zone: string): string {
  let format = reference.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", weekday: "short", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit" });
    reference.set(zone, format);
  }
  const parts = Object.fromEntries(format.formatToParts(new Date(at)).map((part) => [part.type, part.value]));
  return `${parts.weekday} ${parts.year}-${parts.month}-${parts.day} ${parts.hour === "24" ? "00" : parts.hour}:${parts.minute} ${zone}`;
}

/** Instants where the zone's offset changes, 2020–2031, found day by day and then to the second. */
function offsetChanges(zone: string): number[] {
  const format = new Intl.DateTimeFormat("en-US", { timeZone: zone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" });
  const offset = (at: number) => {
    const parts = Object.fromEntries(format.formatToParts(new Date(at)).map((part) => [part.type, Number(part.value)]));
    return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour! % 24, parts.minute!, parts.second!) - Math.floor(at / 1000) * 1000;
  };
  const changes: number[] = [];
  const DAY = 86_400_000;
  for (let at = Date.UTC(2020, 0, 1); at < Date.UTC(2031, 0, 1); at += DAY) {
    if (offset(at) === offset(at + DAY)) continue;
    let low = at;
    let high = at + DAY;
    while (high - low > 1000) {
      const middle = low + Math.floor((high - low) / 2000) * 1000;
      if (offset(middle) === offset(low)) low = middle;
      else high = middle;
    }
    changes.push(high);
  }
  return changes;
}

describe("formatStamp", () => {
  it("matches Intl at random instants in every zone", () => {
    fc.assert(
      fc.property(fc.constantFrom(...ZONES), fc.integer({ min: Date.UTC(1971, 0, 1), max: Date.UTC(2099, 11, 31) }), (zone, at) => {
        expect(formatStamp(at, zone)).toBe(intlStamp(at, zone));
      }),
      { numRuns: propertyRuns(3_000) },
    );
  });

  it("matches Intl on both sides of every offset change of 2020–2031, to the second", () => {
    let checked = 0;
    for (const zone of ZONES.filter((name) => name !== "UTC" && name !== "Asia/Kolkata" && name !== "Asia/Kathmandu" && name !== "Pacific/Kiritimati")) {
      const changes = offsetChanges(zone);
      expect(changes.length, zone).toBeGreaterThan(0);
      for (const change of changes) {
        for (const delta of [-61_000, -1_000, -1, 0, 1, 59_999, 60_000, 3_600_000]) {
          expect(formatStamp(change + delta, zone), `${zone} ${new Date(change + delta).toISOString()}`).toBe(intlStamp(change + delta, zone));
          checked++;
        }
      }
    }
    // Twice a year in most of them, more often in Casablanca: 11 years, 8 instants around each change.
    expect(checked).toBeGreaterThan(9 * 11 * 2 * 8 * 0.9);
  });

  it("reads an unknown zone as UTC, every time", () => {
    const at = Date.UTC(2026, 11, 1, 9, 44);
    expect(formatStamp(at, "Not/AZone")).toBe("Tue 2026-12-01 09:44 UTC");
    expect(formatStamp(at + 60_000, "Not/AZone")).toBe("Tue 2026-12-01 09:45 UTC");
  });
});
