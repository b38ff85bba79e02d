/**
 * Budgets (issue #17): per user and per chat, per UTC day and per UTC month, in money and/or
 * tokens. Every LLM call reserves its estimated cost first and settles what it really cost
 * after, each as one Lua script (one round trip) over the counters of the chat and the user, so
 * any number of workers share one truth:
 *
 *   reserve: reads the admin's limits (`/budget`) over the config's, then is refused when, on
 *            any limited counter, used + reserved + this estimate > limit; else every limited
 *            counter's `reserved` grows by the estimate (checked and taken at once);
 *   settle:  `reserved` shrinks by the estimate where it grew, `used` grows by the real cost on
 *            every counter, and the highest warning threshold (50/75/90%) newly crossed is
 *            recorded, so each is told once.
 *
 * Reservations are what make it hold under concurrency: two workers racing for the last dollar
 * cannot both take it. A real cost above its estimate (the estimate of input tokens is
 * conservative, output is bounded by max_tokens) is the only way past a limit.
 */
import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import type { CallCost } from "../core/llm.js";
import type { BudgetsSection } from "../../config/operator-sections.js";
import { BudgetExhaustedError } from "../errors.js";
import { silentLogger, type Logger } from "../logger.js";
import { globalKeys } from "../session/keys.js";
import { runScript } from "../session/run-script.js";
import { scanAll } from "../session/scan.js";
import type { LimitsCache } from "./limits-cache.js";
import { RESERVE, SETTLE } from "./scripts.js";

export type Period = "daily" | "monthly";
export const PERIODS: readonly Period[] = ["daily", "monthly"];

export interface Limit {
  usd?: number;
  tokens?: number;
}
export type Limits = Record<Period, Limit>;

/** Who pays for a call: the chat (its session key) and, when known, the user (`tg:42`). */
export interface BudgetAccounts {
  chat: string;
  user?: string;
}

/** What a call costs (src/core's CallCost). */
export type Cost = CallCost;

interface Slot {
  kind: "chat" | "user";
  id: string;
  period: Period;
  key: string;
  limit: Limit;
}

export interface Reservation {
  /** The call's id: its record in each limited counter (a re-sent reserve or settle finds it). */
  id: string;
  slots: ReservedSlot[];
  estimate: Cost;
  /** Per slot, its money (nano-dollars) and token limits as the reserve found them; -1: none. */
  limits: number[];
}

interface ReservedSlot {
  kind: "chat" | "user";
  period: Period;
  key: string;
}

export interface SlotStatus {
  kind: "chat" | "user";
  id: string;
  period: Period;
  limit: Limit;
  used: Cost;
  reserved: Cost;
  resetsAt: number;
}

/** Money is counted in nano-dollars: integers, exact in Lua's doubles up to $9M. */
const NANO = 1e9;
const toNano = (usd: number) => Math.ceil(usd * NANO);
const THRESHOLDS = [50, 75, 90] as const;

/** How long a period's counters are kept after it began (a day's for /usage of yesterday). */
const KEEP_MS: Record<Period, number> = { daily: 3 * 86_400_000, monthly: 63 * 86_400_000 };

export function periodId(period: Period, at: number): string {
  const iso = new Date(at).toISOString();
  return period === "daily" ? `d:${iso.slice(0, 10)}` : `m:${iso.slice(0, 7)}`;
}

/** When the period containing `at` ends (00:00 UTC of the next day, or of the 1st of next month). */
export function periodEnd(period: Period, at: number): number {
  const date = new Date(at);
  return period === "daily"
    ? Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1)
    : Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

export function resetText(period: Period, at: number): string {
  if (period === "daily") return "it resets at 00:00 UTC";
  const end = new Date(periodEnd(period, at));
  return `it resets on ${end.getUTCDate()} ${MONTHS[end.getUTCMonth()]} at 00:00 UTC`;
}

const periodWords = (period: Period) => (period === "daily" ? "today's" : "this month's");
const whose = (kind: "chat" | "user") => (kind === "chat" ? "this chat" : "you");

export function exhaustedNotice(kind: "chat" | "user", period: Period, at: number): string {
  const text = `${periodWords(period)} budget for ${whose(kind)} is used up; ${resetText(period, at)}.`;
  return text[0]!.toUpperCase() + text.slice(1);
}

export function warningText(kind: "chat" | "user", period: Period, percent: number): string {
  return `${kind === "chat" ? "This chat has" : "You have"} used ${percent}% of ${periodWords(period)} budget.`;
}

/** The chat, then the user when known. */
function ownersOf(accounts: BudgetAccounts): Array<["chat" | "user", string]> {
  return accounts.user === undefined ? [["chat", accounts.chat]] : [["chat", accounts.chat], ["user", accounts.user]];
}

/** A limit the config or an admin set, `null` for "no limit here" (an admin's `off`). */
type LimitOverride = Partial<Record<`${Period}.${"usd" | "tokens"}`, number | null>>;

/** Whether a reservation found no limit on any of its counters: its settle can only count. */
export const unlimited = (reservation: Reservation) => reservation.limits.every((limit) => limit < 0);

export interface BudgetMeterOptions {
  /** Where a settle nobody waits for reports its failure (`settleUnawaited`). Default: silent. */
  logger?: Logger;
  /**
   * Accounts known to have no limit: a call paid by them only is not reserved (limits-cache.ts).
   * One cache per meter: what it knows holds for this prefix and this config only.
   */
  limits?: LimitsCache;
  /**
   * How long a reservation holds before the next reserve of its counter releases it as left
   * behind (a worker killed during its call). Longer than a call can run with its retries.
   */
  reservationMs?: number;
}

/** Default reservation lifetime: ten minutes, past LLM_TIMEOUT_MS (120 s) × its three attempts. */
const DEFAULT_RESERVATION_MS = 10 * 60_000;

export class BudgetMeter {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #config: BudgetsSection | undefined;
  readonly #now: () => number;
  readonly #logger: Logger;
  readonly #limits: LimitsCache | undefined;
  readonly #reservationMs: number;

  constructor(redis: Redis, prefix: string, config: BudgetsSection | undefined, now: () => number = Date.now, options: BudgetMeterOptions = {}) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#config = config;
    this.#now = now;
    this.#logger = options.logger ?? silentLogger;
    this.#limits = options.limits;
    this.#reservationMs = options.reservationMs ?? DEFAULT_RESERVATION_MS;
  }

  /** The limits of one account: config defaults, then the config's per-account entry, then an admin's /budget. */
  async limitsOf(kind: "chat" | "user", id: string): Promise<Limits> {
    const merged: LimitOverride = { ...this.#configured(kind, id), ...(await this.adminLimits(kind, id)) };
    const limits: Limits = { daily: {}, monthly: {} };
    for (const period of PERIODS) {
      const usd = merged[`${period}.usd`];
      const tokens = merged[`${period}.tokens`];
      if (usd !== undefined && usd !== null) limits[period].usd = usd;
      if (tokens !== undefined && tokens !== null) limits[period].tokens = tokens;
    }
    return limits;
  }

  /** The config's limits of an account: its defaults, then its own entry (a period named there replaces the default's whole period). */
  #configured(kind: "chat" | "user", id: string): LimitOverride {
    const out: LimitOverride = {};
    for (const periods of kind === "chat" ? [this.#config?.chat, this.#config?.chats[id]] : [this.#config?.user, this.#config?.users[id]]) {
      for (const period of PERIODS) {
        const limit = periods?.[period];
        if (!limit) continue;
        out[`${period}.usd`] = limit.usd ?? null;
        out[`${period}.tokens`] = limit.tokens ?? null;
      }
    }
    return out;
  }

  /** What an admin set with /budget (the reserve script reads the same hash itself: RESERVE). */
  async adminLimits(kind: "chat" | "user", id: string): Promise<LimitOverride> {
    const raw = await this.#redis.hgetall(globalKeys(this.#prefix).budgetLimits(`${kind}:${id}`));
    const out: LimitOverride = {};
    for (const [field, value] of Object.entries(raw)) {
      if (!/^(daily|monthly)\.(usd|tokens)$/.test(field)) continue;
      if (value === "off") out[field as keyof LimitOverride] = null;
      // A value that is not a number is passed over (the config's applies), as RESERVE does.
      else if (value.trim() !== "" && Number.isFinite(Number(value))) out[field as keyof LimitOverride] = Number(value);
    }
    return out;
  }

  /** An admin's limit for an account: a number, or `off` (no limit, whatever the config says), or `default` (the config's). */
  async setLimit(kind: "chat" | "user", id: string, period: Period, unit: "usd" | "tokens", value: number | "off" | "default"): Promise<void> {
    const keys = globalKeys(this.#prefix);
    const account = `${kind}:${id}`;
    const write = this.#redis.multi();
    if (value === "default") write.hdel(keys.budgetLimits(account), `${period}.${unit}`);
    else write.hset(keys.budgetLimits(account), `${period}.${unit}`, String(value));
    // In the same transaction, after the write: every worker forgets what it knew of the account
    // (limits-cache.ts), and a reserve it sends from then on reads the new limit.
    write.publish(keys.budgetLimitsChannel, account);
    await write.exec();
  }

  async #slots(accounts: BudgetAccounts): Promise<Slot[]> {
    const now = this.#now();
    const owners = ownersOf(accounts);
    // Both accounts' limits at once (/usage, /budget and fired tasks; a call's reserve reads them itself).
    const limitsOf = await Promise.all(owners.map(([kind, id]) => this.limitsOf(kind, id)));
    const slots: Slot[] = [];
    for (const [index, [kind, id]] of owners.entries()) {
      const limits = limitsOf[index]!;
      for (const period of PERIODS) {
        slots.push({ kind, id, period, key: globalKeys(this.#prefix).budget(`${kind}:${id}`, periodId(period, now)), limit: limits[period] });
      }
    }
    return slots;
  }

  /**
   * Takes `estimate` from every limited counter of the accounts, or throws BudgetExhaustedError
   * naming the first that has no room: one script, one round trip (RESERVE). Accounts the limits
   * cache knows to have no limit are not asked: their reservation holds nothing and says so.
   */
  async reserve(accounts: BudgetAccounts, estimate: Cost): Promise<Reservation> {
    const now = this.#now();
    const keys = globalKeys(this.#prefix);
    const owners = ownersOf(accounts);
    const names = owners.map(([kind, id]) => `${kind}:${id}`);
    if (this.#limits?.unlimited(names)) {
      const slots = owners.flatMap(([kind, id]) => PERIODS.map((period) => ({ kind, period, key: keys.budget(`${kind}:${id}`, periodId(period, now)) })));
      return { id: randomUUID(), slots, estimate, limits: slots.flatMap(() => [-1, -1]) };
    }
    const mark = this.#limits?.mark();
    const counters: string[] = [];
    const slots: ReservedSlot[] = [];
    const args: Array<string | number> = [toNano(estimate.usd), Math.ceil(estimate.tokens)];
    for (const [index, [kind, id]] of owners.entries()) {
      const configured = this.#configured(kind, id);
      for (const period of PERIODS) {
        const key = keys.budget(`${kind}:${id}`, periodId(period, now));
        counters.push(key);
        slots.push({ kind, period, key });
        const usd = configured[`${period}.usd`];
        const tokens = configured[`${period}.tokens`];
        args.push(owners.length * PERIODS.length + index + 1, period === "daily" ? 1 : 3, usd === undefined || usd === null ? -1 : toNano(usd), tokens ?? -1, KEEP_MS[period]);
      }
    }
    const id = randomUUID();
    args.push(id, now, now + this.#reservationMs);
    const limitKeys = names.map((name) => keys.budgetLimits(name));
    const reply = (await runScript(this.#redis, RESERVE, counters.length + limitKeys.length, ...counters, ...limitKeys, ...args)) as number[];
    const refused = reply[0]!;
    if (refused > 0) {
      const slot = slots[refused - 1]!;
      throw new BudgetExhaustedError(exhaustedNotice(slot.kind, slot.period, now));
    }
    const limits = reply.slice(1);
    // Per account, its counters' money and token limits: the day's, then the month's.
    const width = PERIODS.length * 2;
    names.forEach((name, index) => this.#limits?.learn(mark, name, limits.slice(index * width, (index + 1) * width).every((limit) => limit < 0)));
    return { id, slots, estimate, limits };
  }

  /** Books the real cost of a reserved call. → warnings newly due (50/75/90%, once each). */
  async settle(reservation: Reservation, actual: Cost): Promise<string[]> {
    const { slots, estimate, limits } = reservation;
    const args: Array<string | number> = [toNano(estimate.usd), Math.ceil(estimate.tokens), toNano(actual.usd), Math.ceil(actual.tokens)];
    slots.forEach((slot, index) => args.push(limits[2 * index]!, limits[2 * index + 1]!, KEEP_MS[slot.period]));
    args.push(reservation.id);
    const crossed = (await runScript(this.#redis, SETTLE, slots.length, ...slots.map((slot) => slot.key), ...args)) as number[];
    const warnings: string[] = [];
    // The stricter period speaks first; one line per account and period.
    crossed.forEach((percent, index) => {
      const slot = slots[index]!;
      if (percent > 0) warnings.push(warningText(slot.kind, slot.period, percent));
    });
    return warnings;
  }

  /**
   * Books the real cost of a call whose reservation found no limit (`unlimited`), without
   * waiting: such a settle only adds to `used` and cannot cross a warning threshold (SETTLE warns
   * only on a counter with a limit), so there is nothing to wait for. A zero cost (a failed call)
   * sends nothing: with nothing reserved, that settle would write nothing.
   *
   * Ordering: the settle is written to this meter's connection now, before anything the caller
   * sends on it afterwards. The worker gives the meter the connection its session store commits
   * on (workers/worker-role.ts), so Redis runs a call's settle before the turn's END_TURN, and a
   * reply is delivered only after its usage is counted. One exception, as for the early delivery
   * job (workers/process-turn.ts): the first run of the script after a SCRIPT FLUSH (a restarted
   * Redis on the same socket) is answered NOSCRIPT and re-sent as EVAL, possibly after the commit;
   * the usage is then counted a moment later. A failure is logged, never thrown: the turn goes on
   * and this call's cost is not counted.
   */
  settleUnawaited(reservation: Reservation, actual: Cost): void {
    if (actual.usd === 0 && actual.tokens === 0) return;
    this.settle(reservation, actual).catch((error: unknown) => {
      this.#logger.warn({ err: error, accounts: reservation.slots.map((slot) => slot.key) }, "budget-settle-failed");
    });
  }

  /** Whether the accounts could pay for a call now (used by fired tasks before they enter the chat). */
  /** `headroom`: the share of each limit that must be left (0: refused only once spent; 0.1: from 90% on). */
  async check(accounts: BudgetAccounts, headroom = 0): Promise<{ allowed: true } | { allowed: false; reason: string }> {
    const status = await this.status(accounts);
    const share = 1 - headroom;
    for (const slot of status) {
      const overCost = slot.limit.usd !== undefined && slot.used.usd + slot.reserved.usd >= slot.limit.usd * share;
      const overTokens = slot.limit.tokens !== undefined && slot.used.tokens + slot.reserved.tokens >= slot.limit.tokens * share;
      if (overCost || overTokens) return { allowed: false, reason: exhaustedNotice(slot.kind, slot.period, this.#now()) };
    }
    return { allowed: true };
  }

  async status(accounts: BudgetAccounts): Promise<SlotStatus[]> {
    const slots = await this.#slots(accounts);
    const now = this.#now();
    const pipeline = this.#redis.pipeline();
    for (const slot of slots) pipeline.hmget(slot.key, "uc", "ut", "rc", "rt");
    const results = (await pipeline.exec()) ?? [];
    return slots.map((slot, index) => {
      const values = ((results[index]?.[1] ?? []) as Array<string | null>).map((value) => Number(value ?? 0));
      return {
        kind: slot.kind, id: slot.id, period: slot.period, limit: slot.limit,
        used: { usd: (values[0] ?? 0) / NANO, tokens: values[1] ?? 0 },
        reserved: { usd: (values[2] ?? 0) / NANO, tokens: values[3] ?? 0 },
        resetsAt: periodEnd(slot.period, now),
      };
    });
  }

  /** Every account with counters in the current periods (`npm run admin -- budgets`). */
  async accounts(): Promise<Array<{ kind: "chat" | "user"; id: string }>> {
    const now = this.#now();
    const pattern = globalKeys(this.#prefix).budget("*", periodId("monthly", now));
    const found = new Map<string, { kind: "chat" | "user"; id: string }>();
    const head = globalKeys(this.#prefix).budget("", "").replace(/:$/, "");
    for (const key of await scanAll(this.#redis, pattern)) {
      const account = key.slice(head.length).replace(/:m:\d{4}-\d{2}$/, "");
      const match = /^(chat|user):(.+)$/.exec(account);
      if (match) found.set(account, { kind: match[1] as "chat" | "user", id: match[2]! });
    }
    return [...found.values()].sort((a, b) => `${a.kind}:${a.id}`.localeCompare(`${b.kind}:${b.id}`));
  }
}

export { THRESHOLDS as WARNING_THRESHOLDS };
