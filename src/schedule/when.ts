/**
 * "When" as the model (or a /reminders command) states it → the first run instant and the
 * recurrence. Three structured forms, read in the chat's time zone:
 *   at:    "2026-03-30T09:00" (local), "2026-03-30T07:00Z" (absolute), "09:00", "tomorrow 9am",
 *          "friday 09:00";
 *   in:    a duration, "2h30m", "90s", "3 days", "PT2H" (days and weeks are calendar days:
 *          "in 1 day" at 09:00 is 09:00 tomorrow, also across a DST change);
 *   every: a fixed interval ("30m"), first run `at`/`in` or one interval from now;
 *   cron:  "0 9 * * 1" (Mondays 09:00 in the chat's zone), alone.
 */
import { cronProblem, minimumGap, nextOccurrence, type Recurrence } from "./recurrence.js";
import { addDays, formatInstant, wallTimeAt, wallTimeToInstant, weekdayOf, type WallTime } from "./zone.js";

export interface WhenInput {
  at?: string | undefined;
  in?: string | undefined;
  every?: string | undefined;
  cron?: string | undefined;
}

export interface Timing {
  firstRunAt: number;
  recurrence?: Recurrence;
}

export type TimingResult = { ok: true; timing: Timing } | { ok: false; problem: string };

export interface TimingRules {
  zone: string;
  now: number;
  /** Recurrences may not fire more often than this (SCHEDULE_MIN_INTERVAL_S). */
  minIntervalMs: number;
}

/** A duration split the way people mean it: calendar days, then exact milliseconds. */
export interface Duration {
  days: number;
  ms: number;
}

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000 };
const UNIT_NAMES: Array<[RegExp, "w" | "d" | "h" | "m" | "s"]> = [
  [/^(w|wk|wks|week|weeks)$/, "w"],
  [/^(d|day|days)$/, "d"],
  [/^(h|hr|hrs|hour|hours)$/, "h"],
  [/^(m|min|mins|minute|minutes)$/, "m"],
  [/^(s|sec|secs|second|seconds)$/, "s"],
];

/** "2h30m", "90 s", "3 days and 2 hours", "PT2H", "P1W" → a Duration; undefined if not one. */
export function parseDuration(text: string): Duration | undefined {
  const source = text.trim().toLowerCase();
  const iso = /^p(?:(\d+)w)?(?:(\d+)d)?(?:t(?:(\d+)h)?(?:(\d+)m)?(?:(\d+(?:\.\d+)?)s)?)?$/.exec(source);
  if (iso && source !== "p" && source !== "pt" && !source.endsWith("t")) {
    const [, weeks, days, hours, minutes, seconds] = iso;
    return {
      days: Number(weeks ?? 0) * 7 + Number(days ?? 0),
      ms: Number(hours ?? 0) * 3_600_000 + Number(minutes ?? 0) * 60_000 + Math.round(Number(seconds ?? 0) * 1_000),
    };
  }
  const duration: Duration = { days: 0, ms: 0 };
  let rest = source;
  let parts = 0;
  while (rest.length > 0) {
    const match = /^(\d+(?:\.\d+)?)\s*([a-z]+)[\s,]*(?:and\s+)?/.exec(rest);
    if (!match?.[1] || !match[2]) return undefined;
    const unit = UNIT_NAMES.find(([pattern]) => pattern.test(match[2]!))?.[1];
    if (!unit) return undefined;
    const value = Number(match[1]);
    if (unit === "w" || unit === "d") {
      if (!Number.isInteger(value)) return undefined;
      duration.days += value * (unit === "w" ? 7 : 1);
    } else {
      duration.ms += Math.round(value * UNIT_MS[unit]!);
    }
    rest = rest.slice(match[0].length);
    parts++;
  }
  return parts > 0 ? duration : undefined;
}

/** `now` moved on by a duration in `zone`: calendar days first (same wall time), then exact time. */
export function addDuration(now: number, duration: Duration, zone: string): number {
  if (duration.days === 0) return now + duration.ms;
  const wall = wallTimeAt(now, zone);
  const subSecond = now - Math.floor(now / 1_000) * 1_000;
  return wallTimeToInstant(addDays(wall, duration.days), zone) + subSecond + duration.ms;
}

const WEEKDAY_WORDS: Array<[RegExp, number]> = [
  [/^sun(day)?$/, 0], [/^mon(day)?$/, 1], [/^tue(s|sday)?$/, 2], [/^wed(nesday)?$/, 3],
  [/^thu(rs|rsday)?$/, 4], [/^fri(day)?$/, 5], [/^sat(urday)?$/, 6],
];

const AT_FORMS = `"2026-03-30T09:00" (local time), "2026-03-30T07:00Z" (absolute), "09:00", "tomorrow 09:00" or "friday 9am"`;

function validWall(wall: WallTime): boolean {
  if (wall.month < 1 || wall.month > 12 || wall.day < 1 || wall.hour > 23 || wall.minute > 59 || wall.second > 59) return false;
  const daysInMonth = new Date(Date.UTC(wall.year, wall.month, 0)).getUTCDate();
  return wall.day <= daysInMonth;
}

/** An `at` value → the instant it names, after `now`. */
export function parseAt(text: string, zone: string, now: number): { ok: true; instant: number } | { ok: false; problem: string } {
  const source = text.trim();
  const past = (instant: number) => ({ ok: false as const, problem: `${formatInstant(instant, zone)} is in the past (it is now ${formatInstant(now, zone)}).` });

  if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(source)) {
    const instant = Date.parse(source.replace(" ", "T"));
    if (Number.isNaN(instant)) return { ok: false, problem: `"${text}" is not a valid date and time.` };
    return instant > now ? { ok: true, instant } : past(instant);
  }
  const local = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{1,2}):(\d{2})(?::(\d{2}))?$/.exec(source);
  if (local) {
    const [, year, month, day, hour, minute, second] = local.map(Number) as number[];
    const wall: WallTime = { year: year!, month: month!, day: day!, hour: hour!, minute: minute!, second: Number.isNaN(second) ? 0 : second! };
    if (!validWall(wall)) return { ok: false, problem: `"${text}" is not a valid date and time.` };
    const instant = wallTimeToInstant(wall, zone);
    return instant > now ? { ok: true, instant } : past(instant);
  }
  const relative = /^(?:([a-z]+)\s+)?(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$/i.exec(source);
  if (relative && (relative[3] !== undefined || relative[4] !== undefined)) {
    const dayWord = relative[1]?.toLowerCase();
    let hour = Number(relative[2]);
    const minute = Number(relative[3] ?? 0);
    const meridiem = relative[4]?.toLowerCase();
    if (meridiem) {
      if (hour < 1 || hour > 12) return { ok: false, problem: `"${text}" is not a valid time.` };
      hour = (hour % 12) + (meridiem === "pm" ? 12 : 0);
    }
    if (hour > 23 || minute > 59) return { ok: false, problem: `"${text}" is not a valid time.` };
    const today = { ...wallTimeAt(now, zone), hour, minute, second: 0 };
    const on = (days: number) => wallTimeToInstant(addDays(today, days), zone);
    if (dayWord === undefined) return { ok: true, instant: on(0) > now ? on(0) : on(1) };
    if (dayWord === "today") return on(0) > now ? { ok: true, instant: on(0) } : past(on(0));
    if (dayWord === "tomorrow") return { ok: true, instant: on(1) };
    const weekday = WEEKDAY_WORDS.find(([pattern]) => pattern.test(dayWord))?.[1];
    if (weekday !== undefined) {
      const ahead = (weekday - weekdayOf(today) + 7) % 7;
      return { ok: true, instant: ahead === 0 && on(0) <= now ? on(7) : on(ahead) };
    }
  }
  return { ok: false, problem: `I can't read "${text}" as a time. Use ${AT_FORMS}.` };
}

/** "5 minutes", "2 hours", "90 seconds", "1 day" */
export function describeInterval(ms: number): string {
  const units: Array<[number, string]> = [[86_400_000, "day"], [3_600_000, "hour"], [60_000, "minute"], [1_000, "second"]];
  for (const [size, name] of units) {
    if (ms >= size && ms % size === 0) {
      const count = ms / size;
      return `${count} ${name}${count === 1 ? "" : "s"}`;
    }
  }
  return `${Math.round(ms / 1_000)} seconds`;
}

/** Reads the structured "when" of a create or edit. */
export function resolveTiming(input: WhenInput, rules: TimingRules): TimingResult {
  const { zone, now } = rules;
  const given = (value: string | undefined): value is string => typeof value === "string" && value.trim() !== "";
  if (given(input.cron)) {
    if (given(input.at) || given(input.in) || given(input.every)) return { ok: false, problem: "Give a cron expression alone, without at, in or every." };
    const expression = input.cron.trim();
    const problem = cronProblem(expression, zone, now);
    if (problem) return { ok: false, problem };
    const recurrence: Recurrence = { type: "cron", expression };
    return withinMinimum(recurrence, nextOccurrence(recurrence, now, zone, now), rules);
  }
  if (given(input.at) && given(input.in)) return { ok: false, problem: "Give either at or in, not both." };

  let firstRunAt: number | undefined;
  if (given(input.at)) {
    const at = parseAt(input.at, zone, now);
    if (!at.ok) return at;
    firstRunAt = at.instant;
  } else if (given(input.in)) {
    const duration = parseDuration(input.in);
    if (!duration || (duration.days === 0 && duration.ms <= 0)) {
      return { ok: false, problem: `I can't read "${input.in}" as a duration. Use e.g. "2h30m", "90s", "3 days" or "PT2H".` };
    }
    firstRunAt = addDuration(now, duration, zone);
  }

  if (given(input.every)) {
    const interval = parseDuration(input.every);
    const intervalMs = interval ? interval.days * 86_400_000 + interval.ms : 0;
    if (intervalMs <= 0) return { ok: false, problem: `I can't read "${input.every}" as an interval. Use e.g. "30m", "2h" or "1d"; for calendar times such as "Mondays at 9" use a cron expression.` };
    const recurrence: Recurrence = { type: "every", intervalMs };
    return withinMinimum(recurrence, firstRunAt ?? now + intervalMs, rules);
  }
  if (firstRunAt === undefined) return { ok: false, problem: "Say when: at (a date and time), in (a duration), every (an interval) or cron (a recurrence)." };
  return { ok: true, timing: { firstRunAt } };
}

function withinMinimum(recurrence: Recurrence, firstRunAt: number, rules: TimingRules): TimingResult {
  if (minimumGap(recurrence, rules.now, rules.zone) < rules.minIntervalMs) {
    return { ok: false, problem: `Recurring reminders and tasks may run at most once every ${describeInterval(rules.minIntervalMs)}; choose a longer interval.` };
  }
  return { ok: true, timing: { firstRunAt, recurrence } };
}
