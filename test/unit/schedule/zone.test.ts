/**
 * Wall time ↔ instant in IANA zones, across DST changes. Expected instants are written out by
 * hand from the zones' published rules (EU: last Sunday of March/October at 01:00 UTC; US: second
 * Sunday of March, first Sunday of November at 02:00 local; Sydney: first Sunday of April and
 * October), never computed with the code under test.
 */
import { describe, expect, it } from "vitest";
import { formatInstant, formatShort, offsetAt, wallTimeAt, wallTimeToInstant, type WallTime } from "../../../src/schedule/zone.js";

const wall = (text: string): WallTime => {
  const [date, time] = text.split(" ") as [string, string];
  const [year, month, day] = date.split("-").map(Number) as [number, number, number];
  const [hour, minute] = time.split(":").map(Number) as [number, number];
  return { year, month, day, hour, minute, second: 0 };
};
const at = (iso: string) => Date.parse(iso);

describe("wall time → instant", () => {
  it("reads the same clock time with the offset of its own date in Europe/Berlin", () => {
    expect(wallTimeToInstant(wall("2026-03-28 09:00"), "Europe/Berlin")).toBe(at("2026-03-28T08:00:00Z"));
    expect(wallTimeToInstant(wall("2026-03-29 09:00"), "Europe/Berlin")).toBe(at("2026-03-29T07:00:00Z"));
    expect(wallTimeToInstant(wall("2026-10-24 09:00"), "Europe/Berlin")).toBe(at("2026-10-24T07:00:00Z"));
    expect(wallTimeToInstant(wall("2026-10-25 09:00"), "Europe/Berlin")).toBe(at("2026-10-25T08:00:00Z"));
  });

  it("moves a time skipped by the spring change forward by the gap", () => {
    expect(wallTimeToInstant(wall("2026-03-29 02:30"), "Europe/Berlin")).toBe(at("2026-03-29T01:30:00Z"));
    expect(wallTimeToInstant(wall("2026-03-08 02:30"), "America/New_York")).toBe(at("2026-03-08T07:30:00Z"));
    expect(wallTimeToInstant(wall("2026-10-04 02:30"), "Australia/Sydney")).toBe(at("2026-10-03T16:30:00Z"));
  });

  it("takes the earlier of a time that happens twice in the autumn", () => {
    expect(wallTimeToInstant(wall("2026-10-25 02:30"), "Europe/Berlin")).toBe(at("2026-10-25T00:30:00Z"));
    expect(wallTimeToInstant(wall("2026-11-01 01:30"), "America/New_York")).toBe(at("2026-11-01T05:30:00Z"));
    expect(wallTimeToInstant(wall("2026-04-05 02:30"), "Australia/Sydney")).toBe(at("2026-04-04T15:30:00Z"));
  });

  it("handles zones with odd offsets and none at all", () => {
    expect(wallTimeToInstant(wall("2026-01-01 00:00"), "Asia/Kolkata")).toBe(at("2025-12-31T18:30:00Z"));
    expect(wallTimeToInstant(wall("2026-01-01 00:00"), "Asia/Kathmandu")).toBe(at("2025-12-31T18:15:00Z"));
    expect(wallTimeToInstant(wall("2026-01-15 12:00"), "Pacific/Chatham")).toBe(at("2026-01-14T22:15:00Z"));
    expect(wallTimeToInstant(wall("2026-06-30 23:59"), "UTC")).toBe(at("2026-06-30T23:59:00Z"));
  });
});

describe("instant → wall time and text", () => {
  it("reads midnight as 00, not 24", () => {
    expect(wallTimeAt(at("2026-03-28T23:00:00Z"), "Europe/Berlin")).toEqual(wall("2026-03-29 00:00"));
  });

  it("knows the offset on both sides of a change", () => {
    expect(offsetAt(at("2026-03-29T00:59:59Z"), "Europe/Berlin")).toBe(3_600_000);
    expect(offsetAt(at("2026-03-29T01:00:00Z"), "Europe/Berlin")).toBe(7_200_000);
  });

  it("states the absolute date, time, zone and offset", () => {
    expect(formatInstant(at("2026-03-29T07:00:00Z"), "Europe/Berlin")).toBe("Sun 29 Mar 2026, 09:00 (Europe/Berlin, UTC+02:00)");
    expect(formatInstant(at("2026-03-28T08:00:00Z"), "Europe/Berlin")).toBe("Sat 28 Mar 2026, 09:00 (Europe/Berlin, UTC+01:00)");
    expect(formatInstant(at("2026-03-29T07:00:00Z"), "America/St_Johns")).toBe("Sun 29 Mar 2026, 04:30 (America/St_Johns, UTC-02:30)");
    expect(formatInstant(at("2026-03-29T07:00:00Z"), "UTC")).toBe("Sun 29 Mar 2026, 07:00 UTC");
  });

  it("shortens to the clock time on the same local day, else names the day", () => {
    const now = at("2026-03-29T10:00:00Z");
    expect(formatShort(at("2026-03-29T07:00:00Z"), now, "Europe/Berlin")).toBe("09:00");
    expect(formatShort(at("2026-03-28T08:00:00Z"), now, "Europe/Berlin")).toBe("Sat 28 Mar 09:00");
    expect(formatShort(at("2025-12-31T08:00:00Z"), now, "Europe/Berlin")).toBe("Wed 31 Dec 2025 09:00");
  });
});
