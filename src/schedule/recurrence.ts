/**
 * Recurrences: a cron expression read in the item's time zone (cron-parser, the library BullMQ's
 * own job schedulers use, so DST is handled the same way), or a fixed interval counted from the
 * item's first run. All answers are UTC milliseconds.
 */
import { CronExpressionParser } from "cron-parser";

export type Recurrence =
  | { type: "cron"; expression: string }
  | { type: "every"; intervalMs: number };

/** Occurrences looked at to find the smallest gap of a cron expression (see `minimumGap`). */
const GAP_SAMPLES = 60;

function cron(expression: string, zone: string, currentDate: number) {
  return CronExpressionParser.parse(expression, { currentDate: new Date(currentDate), tz: zone, strict: false });
}

/**
 * Checks that `expression` is a cron expression with 5 fields (or 6, seconds first) that ever
 * fires. → an error text for the user, or undefined when it is fine.
 */
export function cronProblem(expression: string, zone: string, now: number): string | undefined {
  const fields = expression.trim().split(/\s+/);
  if (!expression.trim().startsWith("@") && (fields.length < 5 || fields.length > 6)) {
    return `"${expression}" is not a cron expression: it needs 5 fields (minute hour day-of-month month day-of-week), e.g. "0 9 * * 1" for Mondays at 09:00.`;
  }
  try {
    cron(expression, zone, now).next();
    return undefined;
  } catch (error) {
    return `"${expression}" is not a valid cron expression (${error instanceof Error ? error.message : String(error)}).`;
  }
}

/** The first occurrence strictly after `after`. `anchor` is the first run of an interval. */
export function nextOccurrence(recurrence: Recurrence, after: number, zone: string, anchor: number): number {
  if (recurrence.type === "cron") return cron(recurrence.expression, zone, after).next().getTime();
  if (after < anchor) return anchor;
  const steps = Math.floor((after - anchor) / recurrence.intervalMs) + 1;
  return anchor + steps * recurrence.intervalMs;
}

/** The latest occurrence at or before `atOrBefore`, not earlier than `notBefore` (else undefined). */
export function latestOccurrence(recurrence: Recurrence, atOrBefore: number, zone: string, anchor: number, notBefore: number): number | undefined {
  let latest: number | undefined;
  if (recurrence.type === "cron") {
    try {
      // `prev()` is strict, hence the extra millisecond.
      latest = cron(recurrence.expression, zone, atOrBefore + 1).prev().getTime();
    } catch {
      latest = undefined;
    }
  } else if (atOrBefore >= anchor) {
    latest = anchor + Math.floor((atOrBefore - anchor) / recurrence.intervalMs) * recurrence.intervalMs;
  }
  return latest !== undefined && latest >= notBefore ? latest : undefined;
}

/**
 * The smallest gap between consecutive occurrences from `from` on. For a cron expression it is
 * measured over the next GAP_SAMPLES occurrences: enough to see "0,1 9 * * *" (60 s once a day)
 * or "* 9 * * 1" (every minute, Mondays), cheap enough to run on every create and edit.
 */
export function minimumGap(recurrence: Recurrence, from: number, zone: string): number {
  if (recurrence.type === "every") return recurrence.intervalMs;
  const iterator = cron(recurrence.expression, zone, from);
  let previous = iterator.next().getTime();
  let smallest = Number.POSITIVE_INFINITY;
  for (let index = 1; index < GAP_SAMPLES; index++) {
    let next: number;
    try {
      next = iterator.next().getTime();
    } catch {
      break;
    }
    smallest = Math.min(smallest, next - previous);
    previous = next;
  }
  return smallest;
}
