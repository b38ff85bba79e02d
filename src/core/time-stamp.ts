/**
 * When a message was sent, as the model reads it: `Tue 2026-12-01 10:44 Europe/Berlin`. Used for
 * the stamp a user message carries from its creation on (src/agent) and for the dates in the
 * transcript the summarizer reads (src/context). `Intl` only; an unknown zone reads as UTC.
 */

const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;
const formatters = new Map<string, Intl.DateTimeFormat>();
/** Zones the runtime refused: asked again for every message otherwise, each time a thrown RangeError. */
const unknownZones = new Set<string>();

function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/** The zone, or `UTC` when the runtime does not know it. */
export function knownTimeZone(zone: string | undefined): string {
  if (zone === undefined || zone.trim() === "" || unknownZones.has(zone)) return "UTC";
  try {
    formatterFor(zone);
    return zone;
  } catch {
    unknownZones.add(zone);
    return "UTC";
  }
}

/**
 * The canonical IANA name of a zone typed by a person in any case (`europe/berlin` →
 * `Europe/Berlin`), or undefined when the runtime does not know it. Offsets such as `+02:00`
 * are not zones (they know no daylight saving time) and are refused.
 */
export function canonicalTimeZone(input: string): string | undefined {
  const wanted = input.trim();
  if (wanted === "" || !/^[A-Za-z]/.test(wanted)) return undefined;
  try {
    return new Intl.DateTimeFormat(undefined, { timeZone: wanted }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** `Tue 2026-12-01 10:44 Europe/Berlin` (the zone's wall time, 24-hour clock). */
export function formatStamp(at: number, zone: string): string {
  const known = knownTimeZone(zone);
  const wall = new Date(at + offsetAt(at, known));
  const two = (value: number) => (value < 10 ? `0${value}` : String(value));
  const year = String(wall.getUTCFullYear()).padStart(4, "0");
  return `${WEEKDAYS[wall.getUTCDay()]} ${year}-${two(wall.getUTCMonth() + 1)}-${two(wall.getUTCDate())} ${two(wall.getUTCHours())}:${two(wall.getUTCMinutes())} ${known}`;
}

const SECOND = 1_000;
const UTC_DAY = 86_400_000;
/** Zone-days whose offset is remembered; past this the map starts over (a worker sees a few zones a day). */
const MAX_ZONE_DAYS = 4_096;
/** Per zone and UTC day: the zone's offset from UTC that whole day, or null when it changes during the day. */
const dayOffsets = new Map<string, number | null>();

/**
 * The zone's offset from UTC at `at`, in ms: its wall time read as UTC, minus the instant (both
 * to the second; zones once had offsets in seconds). Asking Intl costs ~10 µs a time
 * (formatToParts), so the offset is asked for at the first and the last second of the instant's
 * UTC day and, when the two agree, kept for that day: an offset changes at most once a day (a
 * daylight-saving change; never twice in one day, and back), so every instant between has it
 * too. On the day of a change each instant is asked for.
 */
function offsetAt(at: number, zone: string): number {
  if (zone === "UTC") return 0;
  const day = Math.floor(at / UTC_DAY);
  let offset: number | null | undefined;
  if (lastDay.zone === zone && lastDay.day === day) offset = lastDay.offset;
  else {
    const key = `${zone} ${day}`;
    offset = dayOffsets.get(key);
    if (offset === undefined) {
      const first = probeOffset(day * UTC_DAY, zone);
      offset = first === probeOffset((day + 1) * UTC_DAY - SECOND, zone) ? first : null;
      if (dayOffsets.size >= MAX_ZONE_DAYS) dayOffsets.clear();
      dayOffsets.set(key, offset);
    }
    lastDay = { zone, day, offset };
  }
  return offset ?? probeOffset(at, zone);
}

/** The zone-day asked for last: a batch's messages, a summarizer's transcript, mostly share one. */
let lastDay: { zone: string; day: number; offset: number | null } = { zone: "", day: Number.NaN, offset: null };

function probeOffset(at: number, zone: string): number {
  const parts: Record<string, string> = {};
  for (const part of formatterFor(zone).formatToParts(new Date(at))) parts[part.type] = part.value;
  const field = (name: string) => Number(parts[name] ?? 0);
  // Some runtimes print midnight as 24 under h23; it is 00 of the same day.
  const hour = field("hour") === 24 ? 0 : field("hour");
  const wall = Date.UTC(field("year"), field("month") - 1, field("day"), hour, field("minute"), field("second"));
  return wall - Math.floor(at / SECOND) * SECOND;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** A gap worth telling the model about (an hour or more), as `3 days` / `5 hours`; else undefined. */
export function describeGap(ms: number): string | undefined {
  if (!Number.isFinite(ms) || ms < HOUR) return undefined;
  if (ms < DAY) {
    const hours = Math.floor(ms / HOUR);
    return `${hours} hour${hours === 1 ? "" : "s"}`;
  }
  const days = Math.floor(ms / DAY);
  return `${days} day${days === 1 ? "" : "s"}`;
}
