/**
 * One send budget per bot token, shared by every gateway process through Redis (issue 30 item
 * 3; docs/operator.md). Token buckets (the bot's global one, a chat's, a group's: the adapters'
 * policies say which) are checked and taken in one Lua script, on Redis's clock, so several
 * gateways on several machines draw from the same buckets.
 *
 * Priorities are floors: a final answer may take a bucket below empty (it borrows its slot and
 * is told how long to wait for it, so finals queue in the order they asked, across processes);
 * a notice needs a whole token; a preview needs the bucket at least half full after taking, a
 * typing call three quarters (a full bucket serves anyone, however small). Under load the finals keep the buckets low and the previews and
 * typing calls are refused first (skipped: a later preview supersedes), the notices next. A
 * bucket with a headroom (the bot's) also refuses previews and typing once everything sent
 * through it nears that lower rate, before the bucket itself runs at its limit and finals queue.
 *
 * A 429 is recorded as a penalty: on the chat it was answered for (only that chat waits), or on
 * the whole bot for a global one, where everything below final waits a little longer still so
 * the finals held back go first. A final whose wait passes `finalMaxWaitMs` is refused with the
 * wait: the delivery queue brings it back then, instead of holding a delivery slot.
 */
import type { Redis } from "ioredis";
import type { SendBudget, SendGrant, SendPriority, SendRequest } from "../core/send-budget.js";
import type { Logger } from "../logger.js";
import { globalKeys } from "../session/keys.js";
import { runScript } from "../session/run-script.js";

/**
 * KEYS: the buckets (hash: `l` level, `at` ms), the chat's penalty (string: until, ms), the
 *       bot's penalty (hash: `until` for finals, `low` for the rest).
 * ARGV: below-final (1/0), the longest wait a borrowing take may be given (ms), the floor (a
 *       fraction of capacity the bucket must keep after the take; negative: may borrow), then
 *       per bucket its capacity, refill per second and headroom refill per second (0: none).
 *       The headroom (`h`) is a second level of the same capacity refilled at that rate: every
 *       take drains it (never below −capacity, so it comes back within seconds once the load
 *       falls), and a take with a positive floor (preview, typing) must leave it that full too.
 * →     {1, delay ms} taken (send after the delay), or {0, wait ms} nothing taken.
 */
export const TAKE = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local belowFinal = ARGV[1] == '1'
local maxWait = tonumber(ARGV[2])
local floor = tonumber(ARGV[3])
local n = #KEYS - 2
local chatUntil = tonumber(redis.call('GET', KEYS[n + 1]) or '0')
local bot = redis.call('HMGET', KEYS[n + 2], 'until', 'low')
local botUntil = tonumber(bot[1] or '0')
if belowFinal then botUntil = math.max(botUntil, tonumber(bot[2] or '0')) end
local penalty = math.max(chatUntil, botUntil) - now
if penalty > 0 and (floor >= 0 or penalty > maxWait) then return {0, math.ceil(penalty)} end
local delay = math.max(penalty, 0)
local levels = {}
local heads = {}
for i = 1, n do
  local capacity = tonumber(ARGV[1 + 3 * i])
  local rate = tonumber(ARGV[2 + 3 * i])
  local headRate = tonumber(ARGV[3 + 3 * i])
  local state = redis.call('HMGET', KEYS[i], 'l', 'at', 'h')
  local level = capacity
  local head = capacity
  if state[1] then
    local elapsed = math.max(0, now - tonumber(state[2]))
    level = math.min(capacity, tonumber(state[1]) + elapsed * rate / 1000)
    if state[3] and headRate > 0 then head = math.min(capacity, tonumber(state[3]) + elapsed * headRate / 1000) end
  end
  local after = level - 1
  if floor >= 0 then
    -- A full bucket serves any priority, however small it is.
    local need = math.min(floor * capacity, capacity - 1)
    if after < need then return {0, math.ceil((need - after) * 1000 / rate)} end
    if floor > 0 and headRate > 0 and head - 1 < need then return {0, math.ceil((need - head + 1) * 1000 / headRate)} end
  elseif after < 0 then
    delay = math.max(delay, -after * 1000 / rate)
  end
  levels[i] = after
  heads[i] = math.max(head - 1, -capacity)
end
if delay > maxWait then return {0, math.ceil(delay)} end
for i = 1, n do
  local capacity = tonumber(ARGV[1 + 3 * i])
  local rate = tonumber(ARGV[2 + 3 * i])
  local headRate = tonumber(ARGV[3 + 3 * i])
  local ttl = math.ceil((capacity - levels[i]) * 1000 / rate)
  if headRate > 0 then
    redis.call('HSET', KEYS[i], 'l', tostring(levels[i]), 'at', tostring(now), 'h', tostring(heads[i]))
    ttl = math.max(ttl, math.ceil((capacity - heads[i]) * 1000 / headRate))
  else
    redis.call('HSET', KEYS[i], 'l', tostring(levels[i]), 'at', tostring(now))
  end
  redis.call('PEXPIRE', KEYS[i], ttl + 1000)
end
return {1, math.ceil(delay)}
`;

/**
 * KEYS: the penalty (the chat's string, or the bot's hash). ARGV: retry after (ms), the extra
 * wait of the priorities below final on the bot's penalty (ms), "chat" | "bot". Never shortens
 * a penalty already recorded.
 */
export const PENALIZE = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local untilMs = now + tonumber(ARGV[1])
if ARGV[3] == 'chat' then
  local current = tonumber(redis.call('GET', KEYS[1]) or '0')
  if untilMs > current then redis.call('SET', KEYS[1], tostring(untilMs), 'PX', tonumber(ARGV[1])) end
  return 1
end
local current = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if untilMs <= current then return 0 end
local low = untilMs + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'until', tostring(untilMs), 'low', tostring(low))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) + tonumber(ARGV[2]))
return 1
`;

/** The fraction of a bucket each priority must leave after its take; negative: may borrow. */
export const PRIORITY_FLOORS: Readonly<Record<SendPriority, number>> = { final: -1, notice: 0, preview: 0.5, typing: 0.75 };

export interface RedisSendBudgetOptions {
  redis: Redis;
  prefix: string;
  logger: Logger;
  /** A final waits at most this long for its slot here; longer, it is refused with the wait (the delivery queue retries then). @defaultValue 10000 */
  finalMaxWaitMs?: number;
  /** After a global 429, the priorities below final wait this much longer than the finals. @defaultValue 1000 */
  belowFinalExtraMs?: number;
  /** A Redis answer slower than this lets the call go without the budget (logged). @defaultValue 2000 */
  timeoutMs?: number;
  /** After such a failure, calls go without asking Redis for this long. @defaultValue 5000 */
  bypassMs?: number;
}

export class RedisSendBudget implements SendBudget {
  readonly #options: RedisSendBudgetOptions;
  #lastFailureLog = 0;
  /** After a failed or late answer, calls go without asking until then (Redis down: no 2 s wait per call). */
  #bypassUntil = 0;

  constructor(options: RedisSendBudgetOptions) {
    this.#options = options;
  }

  async take(request: SendRequest): Promise<SendGrant> {
    if (Date.now() < this.#bypassUntil) return this.#unmetered(request);
    const key = (name: string) => globalKeys(this.#options.prefix).sendBudget(request.platform, request.bot, name);
    const keys = [...request.buckets.map((bucket) => key(`b:${bucket.name}`)), key(`p:${request.chat ?? "-"}`), key("p:*")];
    const args = [
      request.priority === "final" ? "0" : "1",
      this.#options.finalMaxWaitMs ?? 10_000,
      PRIORITY_FLOORS[request.priority],
      ...request.buckets.flatMap((bucket) => [bucket.capacity, bucket.perSecond, bucket.headroomPerSecond ?? 0]),
    ];
    try {
      const [taken, ms] = (await this.#bounded(runScript(this.#options.redis, TAKE, keys.length, ...keys, ...args))) as [number, number];
      return taken === 1 ? { granted: true, delayMs: ms } : { granted: false, waitMs: Math.max(1, ms) };
    } catch (error) {
      // Without its Redis the budget must not stop replies: the platform's own 429s still hold.
      this.#logFailure(error);
      return this.#unmetered(request);
    }
  }

  async penalize(penalty: { platform: string; bot: string; chat?: string; retryAfterMs: number }): Promise<void> {
    const key = globalKeys(this.#options.prefix).sendBudget(penalty.platform, penalty.bot, `p:${penalty.chat ?? "*"}`);
    const retryAfterMs = Math.max(1, Math.ceil(penalty.retryAfterMs));
    try {
      await this.#bounded(runScript(this.#options.redis, PENALIZE, 1, key, retryAfterMs, this.#options.belowFinalExtraMs ?? 1_000, penalty.chat === undefined ? "bot" : "chat"));
    } catch (error) {
      this.#logFailure(error);
    }
  }

  /**
   * Without Redis's answer: a final or a notice goes (the platform's own limits still hold it);
   * a preview or typing call is skipped, as under load. Let through, the hundreds a second that
   * wait for a slot under load went at once when a starved gateway's Redis answer came late: a
   * 25/s Discord run at load average 17 got 85 requests into one second and 377 answers 429 (issue 32).
   */
  #unmetered(request: SendRequest): SendGrant {
    if (request.priority === "final" || request.priority === "notice") return { granted: true, delayMs: 0 };
    return { granted: false, waitMs: Math.max(1, this.#bypassUntil - Date.now()) };
  }

  #bounded<T>(call: Promise<T>): Promise<T> {
    const ms = this.#options.timeoutMs ?? 2_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`send budget: no answer from Redis within ${ms} ms`)), ms);
    });
    call.catch(() => undefined);
    return Promise.race([call, timeout]).finally(() => clearTimeout(timer));
  }

  #logFailure(error: unknown): void {
    const now = Date.now();
    this.#bypassUntil = now + (this.#options.bypassMs ?? 5_000);
    if (now - this.#lastFailureLog < 10_000) return;
    this.#lastFailureLog = now;
    this.#options.logger.warn({ err: error }, "send-budget-unavailable: sending without it");
  }
}
