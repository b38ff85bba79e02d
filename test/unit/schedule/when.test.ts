/**
 * "When" in the chat's time zone with a fixed clock: the case ("tomorrow 9:00" in
 * Europe/Berlin the day before the DST change lands at 07:00 UTC, not 08:00), relative days,
 * weekdays, durations, recurrences and the minimum interval. Expected instants are hand-written.
 */
import { describe, expect, it } from "vitest";
import { latestOccurrence, nextOccurrence } from "../../../src/schedule/recurrence.js";
import { parseAt, parseDuration, resolveTiming, type TimingResult, type WhenInput } from "../../../src/schedule/when.js";

const at = (iso: string) => Date.parse(iso);
const BERLIN = "Europe/Berlin";
const FIVE_MINUTES = 300_000;

function firstRun(input: WhenInput, now: string, zone = BERLIN): string {
  const result = resolveTiming(input, { zone, now: at(now), minIntervalMs: FIVE_MINUTES });
  if (!result.ok) throw new Error(result.problem);
  return new Date(result.timing.firstRunAt).toISOString();
}

function problem(input: WhenInput, now = "2026-03-28T09:00:00Z", zone = BERLIN, minIntervalMs = FIVE_MINUTES): string {
  const result: TimingResult = resolveTiming(input, { zone, now: at(now), minIntervalMs });
  if (result.ok) throw new Error(`expected a refusal, got ${new Date(result.timing.firstRunAt).toISOString()}`);
  return result.problem;
}

describe("at: in the chat's zone, across DST changes", () => {
  it("'tomorrow 9:00' on the day before the spring change is 07:00 UTC (CEST), not 08:00", () => {
    // Saturday 28 March 2026, 10:00 in Berlin (CET, UTC+1); the clocks go forward that night.
    expect(firstRun({ at: "tomorrow 09:00" }, "2026-03-28T09:00:00Z")).toBe("2026-03-29T07:00:00.000Z");
    expect(firstRun({ at: "tomorrow 9am" }, "2026-03-28T22:30:00Z")).toBe("2026-03-29T07:00:00.000Z");
    expect(firstRun({ at: "2026-03-29T09:00" }, "2026-03-28T09:00:00Z")).toBe("2026-03-29T07:00:00.000Z");
  });

  it("'tomorrow 9:00' on the day before the autumn change is 08:00 UTC (CET)", () => {
    expect(firstRun({ at: "tomorrow 09:00" }, "2026-10-24T10:00:00Z")).toBe("2026-10-25T08:00:00.000Z");
  });

  it("counts 'tomorrow' from the chat's date, not UTC's", () => {
    // 23:30 UTC on Saturday is already Sunday 00:30 in Berlin: tomorrow is Monday.
    expect(firstRun({ at: "tomorrow 09:00" }, "2026-03-28T23:30:00Z")).toBe("2026-03-30T07:00:00.000Z");
    expect(firstRun({ at: "tomorrow 09:00" }, "2026-03-28T23:30:00Z", "UTC")).toBe("2026-03-29T09:00:00.000Z");
  });

  it("takes a bare time today if it is still ahead, else tomorrow", () => {
    expect(firstRun({ at: "09:00" }, "2026-03-28T07:59:00Z")).toBe("2026-03-28T08:00:00.000Z");
    expect(firstRun({ at: "09:00" }, "2026-03-28T08:00:00Z")).toBe("2026-03-29T07:00:00.000Z");
    expect(firstRun({ at: "9:30pm" }, "2026-03-28T08:00:00Z")).toBe("2026-03-28T20:30:00.000Z");
    expect(firstRun({ at: "12am" }, "2026-03-28T08:00:00Z")).toBe("2026-03-28T23:00:00.000Z");
  });

  it("takes the next such weekday (today only while the time is ahead)", () => {
    expect(firstRun({ at: "monday 09:00" }, "2026-03-28T09:00:00Z")).toBe("2026-03-30T07:00:00.000Z");
    expect(firstRun({ at: "Saturday 09:00" }, "2026-03-28T09:00:00Z")).toBe("2026-04-04T07:00:00.000Z");
    expect(firstRun({ at: "sat 11:00" }, "2026-03-28T09:00:00Z")).toBe("2026-03-28T10:00:00.000Z");
  });

  it("takes absolute times as given, and refuses times in the past", () => {
    expect(firstRun({ at: "2026-03-30T07:00:00Z" }, "2026-03-28T09:00:00Z")).toBe("2026-03-30T07:00:00.000Z");
    expect(firstRun({ at: "2026-03-30 09:00+02:00" }, "2026-03-28T09:00:00Z")).toBe("2026-03-30T07:00:00.000Z");
    expect(problem({ at: "2026-03-27T09:00" })).toMatch(/^Fri 27 Mar 2026, 09:00 \(Europe\/Berlin, UTC\+01:00\) is in the past/);
    expect(problem({ at: "today 08:00" })).toMatch(/in the past/);
  });

  it("refuses what it cannot read, saying which forms work", () => {
    expect(problem({ at: "next week sometime" })).toMatch(/can't read "next week sometime" as a time.*tomorrow 09:00/);
    expect(problem({ at: "2026-02-30T09:00" })).toMatch(/not a valid date/);
    expect(problem({ at: "25:00" })).toMatch(/not a valid time/);
    expect(parseAt("13pm", BERLIN, at("2026-03-28T09:00:00Z")).ok).toBe(false);
  });
});

describe("in: durations", () => {
  it("reads compact, spelled-out and ISO 8601 durations", () => {
    expect(parseDuration("2h30m")).toEqual({ days: 0, ms: 9_000_000 });
    expect(parseDuration("1 hour and 30 minutes")).toEqual({ days: 0, ms: 5_400_000 });
    expect(parseDuration("1.5h")).toEqual({ days: 0, ms: 5_400_000 });
    expect(parseDuration("90s")).toEqual({ days: 0, ms: 90_000 });
    expect(parseDuration("3 days, 2 hours")).toEqual({ days: 3, ms: 7_200_000 });
    expect(parseDuration("PT2H")).toEqual({ days: 0, ms: 7_200_000 });
    expect(parseDuration("P1W")).toEqual({ days: 7, ms: 0 });
    expect(parseDuration("P1DT12H")).toEqual({ days: 1, ms: 43_200_000 });
    for (const bad of ["soon", "2x", "P", "PT", "P1DT", "1.5 days", "h", ""]) expect(parseDuration(bad)).toBeUndefined();
  });

  it("counts days as calendar days (same clock time across a DST change), hours as exact time", () => {
    // Saturday 28 March, 09:00 CET.
    expect(firstRun({ in: "1 day" }, "2026-03-28T08:00:00Z")).toBe("2026-03-29T07:00:00.000Z");
    expect(firstRun({ in: "24h" }, "2026-03-28T08:00:00Z")).toBe("2026-03-29T08:00:00.000Z");
    expect(firstRun({ in: "2s" }, "2026-03-28T08:00:00.250Z")).toBe("2026-03-28T08:00:02.250Z");
  });

  it("refuses nonsense and a zero duration", () => {
    expect(problem({ in: "a while" })).toMatch(/can't read "a while" as a duration/);
    expect(problem({ in: "0s" })).toMatch(/as a duration/);
  });
});

describe("recurrences", () => {
  it("runs a cron expression in the chat's zone, following DST", () => {
    const result = resolveTiming({ cron: "0 9 * * *" }, { zone: BERLIN, now: at("2026-03-27T12:00:00Z"), minIntervalMs: FIVE_MINUTES });
    expect(result.ok).toBe(true);
    if (!result.ok || !result.timing.recurrence) return;
    const first = result.timing.firstRunAt;
    const second = nextOccurrence(result.timing.recurrence, first, BERLIN, first);
    const third = nextOccurrence(result.timing.recurrence, second, BERLIN, first);
    expect([first, second, third].map((instant) => new Date(instant).toISOString())).toEqual([
      "2026-03-28T08:00:00.000Z", "2026-03-29T07:00:00.000Z", "2026-03-30T07:00:00.000Z",
    ]);
  });

  it("counts a fixed interval from the first run", () => {
    expect(firstRun({ every: "30m" }, "2026-03-28T09:00:00Z")).toBe("2026-03-28T09:30:00.000Z");
    expect(firstRun({ every: "1h", at: "tomorrow 09:00" }, "2026-03-28T09:00:00Z")).toBe("2026-03-29T07:00:00.000Z");
    const every = { type: "every" as const, intervalMs: 600_000 };
    const anchor = at("2026-03-28T09:00:00Z");
    expect(nextOccurrence(every, anchor, "UTC", anchor)).toBe(at("2026-03-28T09:10:00Z"));
    expect(nextOccurrence(every, at("2026-03-28T09:25:00Z"), "UTC", anchor)).toBe(at("2026-03-28T09:30:00Z"));
    expect(nextOccurrence(every, at("2026-03-28T08:00:00Z"), "UTC", anchor)).toBe(anchor);
    expect(latestOccurrence(every, at("2026-03-28T09:25:00Z"), "UTC", anchor, anchor)).toBe(at("2026-03-28T09:20:00Z"));
    expect(latestOccurrence(every, at("2026-03-28T09:25:00Z"), "UTC", anchor, at("2026-03-28T09:21:00Z"))).toBeUndefined();
  });

  it("finds the latest cron occurrence at or before a time", () => {
    const daily = { type: "cron" as const, expression: "0 9 * * *" };
    expect(latestOccurrence(daily, at("2026-03-29T07:00:00Z"), BERLIN, 0, 0)).toBe(at("2026-03-29T07:00:00Z"));
    expect(latestOccurrence(daily, at("2026-03-29T06:59:59Z"), BERLIN, 0, 0)).toBe(at("2026-03-28T08:00:00Z"));
  });

  it(`refuses recurrences more frequent than the minimum interval`, () => {
    expect(problem({ every: "1m" })).toBe("Recurring reminders and tasks may run at most once every 5 minutes; choose a longer interval.");
    expect(problem({ cron: "*/2 * * * *" })).toMatch(/at most once every 5 minutes/);
    // Only once a day, but two runs a minute apart.
    expect(problem({ cron: "0,1 9 * * *" })).toMatch(/at most once every 5 minutes/);
    expect(firstRun({ cron: "*/5 * * * *" }, "2026-03-28T09:01:00Z")).toBe("2026-03-28T09:05:00.000Z");
    expect(resolveTiming({ every: "2s" }, { zone: "UTC", now: 0, minIntervalMs: 1_000 }).ok).toBe(true);
  });

  it("refuses malformed cron and contradictory inputs", () => {
    expect(problem({ cron: "every monday" })).toMatch(/not a cron expression: it needs 5 fields/);
    expect(problem({ cron: "61 * * * *" })).toMatch(/not a valid cron expression/);
    expect(problem({ cron: "0 9 * * 1", at: "09:00" })).toBe("Give a cron expression alone, without at, in or every.");
    expect(problem({ at: "09:00", in: "2h" })).toBe("Give either at or in, not both.");
    expect(problem({})).toMatch(/^Say when/);
    expect(problem({ every: "often" })).toMatch(/as an interval/);
  });
});
