/**
 * Wall-clock time in an IANA time zone, with nothing but `Intl` (Node 20 has no Temporal).
 * Everything else in this product works in UTC milliseconds; these functions are the only
 * place a local date and time is turned into an instant, or back.
 */

/** A local date and time as a person says it: month 1–12, hour 0–23. */
export interface WallTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const DAY_MS = 86_400_000;
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;
const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"] as const;

const formatters = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone: building one costs far more than using it. */
function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone, hourCycle: "h23",
      year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric",
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

export function isValidTimeZone(zone: string): boolean {
  if (zone.trim() === "") return false;
  try {
    formatterFor(zone);
    return true;
  } catch {
    return false;
  }
}

/** The wall time in `zone` at `instant` (seconds precision). */
export function wallTimeAt(instant: number, zone: string): WallTime {
  const fields: Record<string, number> = {};
  for (const part of formatterFor(zone).formatToParts(new Date(instant))) {
    if (part.type !== "literal") fields[part.type] = Number(part.value);
  }
  return {
    year: fields.year ?? 0, month: fields.month ?? 1, day: fields.day ?? 1,
    hour: fields.hour ?? 0, minute: fields.minute ?? 0, second: fields.second ?? 0,
  };
}

/** The wall time read as if it were UTC: plain arithmetic on dates without any zone. */
const asUtc = (wall: WallTime): number => Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute, wall.second);

/** The zone's offset from UTC at `instant`, in ms (Europe/Berlin in summer: +7,200,000). */
export function offsetAt(instant: number, zone: string): number {
  const whole = Math.floor(instant / 1_000) * 1_000;
  return asUtc(wallTimeAt(whole, zone)) - whole;
}

/**
 * The instant a wall time in `zone` names. A time that does not exist (skipped by a DST change,
 * 02:30 on the spring-forward night) moves forward by the gap; a time that exists twice (the
 * autumn night) is its earlier instant. That is Temporal's "compatible" choice, and what
 * cron-parser does for recurrences, so one-off and recurring items agree.
 */
export function wallTimeToInstant(wall: WallTime, zone: string): number {
  const local = asUtc(wall);
  // Offsets a day either side bracket any single transition near this wall time.
  const before = offsetAt(local - DAY_MS, zone);
  const after = offsetAt(local + DAY_MS, zone);
  const candidates = [...new Set([local - before, local - after])]
    .filter((instant) => instant + offsetAt(instant, zone) === local)
    .sort((a, b) => a - b);
  // In a gap no candidate shows the wall time: the offset from before the change moves it on.
  return candidates[0] ?? local - before;
}

/** The calendar date `days` after the wall time's date, same clock time (months and years roll over). */
export function addDays(wall: WallTime, days: number): WallTime {
  const date = new Date(Date.UTC(wall.year, wall.month - 1, wall.day + days));
  return { ...wall, year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() };
}

/** 0 = Sunday … 6 = Saturday, of the wall time's date. */
export const weekdayOf = (wall: WallTime): number => new Date(Date.UTC(wall.year, wall.month - 1, wall.day)).getUTCDay();

const pad = (value: number) => String(value).padStart(2, "0");

/** `UTC+02:00`, `UTC-03:30`, `UTC` */
export function formatOffset(offsetMs: number): string {
  if (offsetMs === 0) return "UTC";
  const minutes = Math.abs(Math.round(offsetMs / 60_000));
  return `UTC${offsetMs < 0 ? "-" : "+"}${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;
}

/** `09:00` */
export const clockOf = (wall: WallTime): string => `${pad(wall.hour)}:${pad(wall.minute)}`;

/** `Sun 29 Mar 2026` */
export const dateOf = (wall: WallTime): string =>
  `${WEEKDAYS[weekdayOf(wall)]} ${wall.day} ${MONTHS[wall.month - 1]} ${wall.year}`;

/**
 * The absolute form confirmations use, so nobody has to guess the zone:
 * `Sun 29 Mar 2026, 09:00 (Europe/Berlin, UTC+02:00)`, or `…, 09:00 UTC` in UTC.
 */
export function formatInstant(instant: number, zone: string): string {
  const wall = wallTimeAt(instant, zone);
  const offset = offsetAt(instant, zone);
  const where = zone === "UTC" || zone === "Etc/UTC" ? " UTC" : ` (${zone}, ${formatOffset(offset)})`;
  return `${dateOf(wall)}, ${clockOf(wall)}${where}`;
}

/** `09:00` when `instant` is on the same local day as `now`, else `Sat 28 Mar 09:00`. */
export function formatShort(instant: number, now: number, zone: string): string {
  const wall = wallTimeAt(instant, zone);
  const today = wallTimeAt(now, zone);
  const sameDay = wall.year === today.year && wall.month === today.month && wall.day === today.day;
  if (sameDay) return clockOf(wall);
  const date = dateOf(wall);
  return `${wall.year === today.year ? date.slice(0, -5) : date} ${clockOf(wall)}`;
}
