/**
 * Budgets (issue #17): per user and per chat, per UTC day and per UTC month, in money and/or
 * tokens. Every LLM call reserves its estimated cost first and settles what it really cost
 * after, both as one Lua script over the counters of the chat and the user, so any number of
 * workers share one truth:
 *
 *   reserve: refused when, on any limited counter, used + reserved + this estimate > limit;
 *            else every counter's `reserved` grows by the estimate (checked and taken at once);
 *   settle:  `reserved` shrinks by the estimate, `used` grows by the real cost, and the highest
 *            warning threshold (50/75/90%) newly crossed is recorded, so each is told once.
 *
 * Reservations are what make it hold under concurrency: two workers racing for the last dollar
 * cannot both take it. A real cost above its estimate (the estimate of input tokens is
 * conservative, output is bounded by max_tokens) is the only way past a limit.
 */
import type { Redis } from "ioredis";
import type { BudgetPeriods, BudgetsSection } from "../../config/operator-sections.js";
import { BudgetExhaustedError } from "../errors.js";
import { globalKeys } from "../session/keys.js";
import { runScript } from "../session/run-script.js";
import { scanAll } from "../session/scan.js";

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

export interface Cost {
  usd: number;
  tokens: number;
}

interface Slot {
  kind: "chat" | "user";
  id: string;
  period: Period;
  key: string;
  limit: Limit;
}

export interface Reservation {
  slots: Slot[];
  estimate: Cost;
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

const RESERVE = `
local estCost = tonumber(ARGV[1])
local estTokens = tonumber(ARGV[2])
for i, key in ipairs(KEYS) do
  local limitCost = tonumber(ARGV[3 + (i - 1) * 3])
  local limitTokens = tonumber(ARGV[4 + (i - 1) * 3])
  local v = redis.call('HMGET', key, 'uc', 'ut', 'rc', 'rt')
  local cost = (tonumber(v[1]) or 0) + (tonumber(v[3]) or 0)
  local tokens = (tonumber(v[2]) or 0) + (tonumber(v[4]) or 0)
  -- Used up, or no room for this call (an estimate of 0 still needs something left).
  if (limitCost >= 0 and (cost >= limitCost or cost + estCost > limitCost))
    or (limitTokens >= 0 and (tokens >= limitTokens or tokens + estTokens > limitTokens)) then
    return i
  end
end
for i, key in ipairs(KEYS) do
  redis.call('HINCRBY', key, 'rc', estCost)
  redis.call('HINCRBY', key, 'rt', estTokens)
  redis.call('PEXPIRE', key, ARGV[5 + (i - 1) * 3])
end
return 0
`;

const SETTLE = `
local estCost = tonumber(ARGV[1])
local estTokens = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local tokens = tonumber(ARGV[4])
local crossed = {}
for i, key in ipairs(KEYS) do
  local limitCost = tonumber(ARGV[5 + (i - 1) * 3])
  local limitTokens = tonumber(ARGV[6 + (i - 1) * 3])
  redis.call('HINCRBY', key, 'rc', 0 - estCost)
  redis.call('HINCRBY', key, 'rt', 0 - estTokens)
  local usedCost = redis.call('HINCRBY', key, 'uc', cost)
  local usedTokens = redis.call('HINCRBY', key, 'ut', tokens)
  redis.call('PEXPIRE', key, ARGV[7 + (i - 1) * 3])
  local share = 0
  if limitCost > 0 then share = math.max(share, usedCost * 100 / limitCost) end
  if limitTokens > 0 then share = math.max(share, usedTokens * 100 / limitTokens) end
  local warned = tonumber(redis.call('HGET', key, 'w') or '0')
  local reached = 0
  for _, threshold in ipairs({50, 75, 90}) do
    if share >= threshold then reached = threshold end
  end
  if reached > warned then
    redis.call('HSET', key, 'w', reached)
    crossed[i] = reached
  else
    crossed[i] = 0
  end
end
return crossed
`;

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

/** A limit the config or an admin set, `null` for "no limit here" (an admin's `off`). */
type LimitOverride = Partial<Record<`${Period}.${"usd" | "tokens"}`, number | null>>;

export class BudgetMeter {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #config: BudgetsSection | undefined;
  readonly #now: () => number;

  constructor(redis: Redis, prefix: string, config: BudgetsSection | undefined, now: () => number = Date.now) {
    this.#redis = redis;
    this.#prefix = prefix;
    this.#config = config;
    this.#now = now;
  }

  /** The limits of one account: config defaults, then the config's per-account entry, then an admin's /budget. */
  async limitsOf(kind: "chat" | "user", id: string): Promise<Limits> {
    const fromConfig = (periods: BudgetPeriods | undefined): LimitOverride => {
      const out: LimitOverride = {};
      for (const period of PERIODS) {
        const limit = periods?.[period];
        if (!limit) continue;
        // A period named in an override replaces the default's whole period.
        out[`${period}.usd`] = limit.usd ?? null;
        out[`${period}.tokens`] = limit.tokens ?? null;
      }
      return out;
    };
    const defaults = fromConfig(kind === "chat" ? this.#config?.chat : this.#config?.user);
    const own = fromConfig(kind === "chat" ? this.#config?.chats[id] : this.#config?.users[id]);
    const admin = await this.adminLimits(kind, id);
    const merged: LimitOverride = { ...defaults, ...own, ...admin };
    const limits: Limits = { daily: {}, monthly: {} };
    for (const period of PERIODS) {
      const usd = merged[`${period}.usd`];
      const tokens = merged[`${period}.tokens`];
      if (usd !== undefined && usd !== null) limits[period].usd = usd;
      if (tokens !== undefined && tokens !== null) limits[period].tokens = tokens;
    }
    return limits;
  }

  async adminLimits(kind: "chat" | "user", id: string): Promise<LimitOverride> {
    const raw = await this.#redis.hgetall(globalKeys(this.#prefix).budgetLimits(`${kind}:${id}`));
    const out: LimitOverride = {};
    for (const [field, value] of Object.entries(raw)) {
      if (!/^(daily|monthly)\.(usd|tokens)$/.test(field)) continue;
      out[field as keyof LimitOverride] = value === "off" ? null : Number(value);
    }
    return out;
  }

  /** An admin's limit for an account: a number, or `off` (no limit, whatever the config says), or `default` (the config's). */
  async setLimit(kind: "chat" | "user", id: string, period: Period, unit: "usd" | "tokens", value: number | "off" | "default"): Promise<void> {
    const key = globalKeys(this.#prefix).budgetLimits(`${kind}:${id}`);
    if (value === "default") await this.#redis.hdel(key, `${period}.${unit}`);
    else await this.#redis.hset(key, `${period}.${unit}`, String(value));
  }

  async #slots(accounts: BudgetAccounts): Promise<Slot[]> {
    const now = this.#now();
    const owners: Array<["chat" | "user", string]> = [["chat", accounts.chat]];
    if (accounts.user !== undefined) owners.push(["user", accounts.user]);
    // Both accounts' limits in one round trip: this runs before every metered call.
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

  #limitArgs(slots: readonly Slot[]): Array<string | number> {
    return slots.flatMap((slot) => [
      slot.limit.usd === undefined ? -1 : toNano(slot.limit.usd),
      slot.limit.tokens === undefined ? -1 : slot.limit.tokens,
      KEEP_MS[slot.period],
    ]);
  }

  /** Takes `estimate` from every counter of the accounts, or throws BudgetExhaustedError naming the first that has no room. */
  async reserve(accounts: BudgetAccounts, estimate: Cost): Promise<Reservation> {
    const slots = await this.#slots(accounts);
    const keys = slots.map((slot) => slot.key);
    const refused = (await runScript(this.#redis, RESERVE, keys.length, ...keys, toNano(estimate.usd), Math.ceil(estimate.tokens), ...this.#limitArgs(slots))) as number;
    if (refused > 0) {
      const slot = slots[refused - 1]!;
      throw new BudgetExhaustedError(exhaustedNotice(slot.kind, slot.period, this.#now()));
    }
    return { slots, estimate };
  }

  /** Books the real cost of a reserved call. → warnings newly due (50/75/90%, once each). */
  async settle(reservation: Reservation, actual: Cost): Promise<string[]> {
    const { slots, estimate } = reservation;
    const keys = slots.map((slot) => slot.key);
    const crossed = (await runScript(
      this.#redis, SETTLE, keys.length, ...keys, toNano(estimate.usd), Math.ceil(estimate.tokens), toNano(actual.usd), Math.ceil(actual.tokens), ...this.#limitArgs(slots),
    )) as number[];
    const warnings: string[] = [];
    // The stricter period speaks first; one line per account and period.
    crossed.forEach((percent, index) => {
      const slot = slots[index]!;
      if (percent > 0) warnings.push(warningText(slot.kind, slot.period, percent));
    });
    return warnings;
  }

  /** Whether the accounts could pay for a call now (used by fired tasks before they enter the chat). */
  async check(accounts: BudgetAccounts): Promise<{ allowed: true } | { allowed: false; reason: string }> {
    const status = await this.status(accounts);
    for (const slot of status) {
      const overCost = slot.limit.usd !== undefined && slot.used.usd + slot.reserved.usd >= slot.limit.usd;
      const overTokens = slot.limit.tokens !== undefined && slot.used.tokens + slot.reserved.tokens >= slot.limit.tokens;
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
