/**
 * When a message was sent, as the model reads it: `Tue 2026-12-01 10:44 Europe/Berlin`. Used for
 * the stamp a user message carries from its creation on (src/agent) and for the dates in the
 * transcript the summarizer reads (src/context). `Intl` only; an unknown zone reads as UTC.
 */

const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"] as const;
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/** The zone, or `UTC` when the runtime does not know it. */
export function knownTimeZone(zone: string | undefined): string {
  if (zone === undefined || zone.trim() === "") return "UTC";
  try {
    formatterFor(zone);
    return zone;
  } catch {
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
  const parts: Record<string, string> = {};
  for (const part of formatterFor(known).formatToParts(new Date(at))) parts[part.type] = part.value;
  const { year = "0000", month = "01", day = "01", minute = "00" } = parts;
  // Some runtimes print midnight as 24 under h23; it is 00.
  const hour = parts.hour === "24" ? "00" : (parts.hour ?? "00");
  const weekday = WEEKDAYS[new Date(Date.UTC(Number(year), Number(month) - 1, Number(day))).getUTCDay()];
  return `${weekday} ${year}-${month}-${day} ${hour}:${minute} ${known}`;
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
