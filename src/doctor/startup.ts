/**
 * The doctor's fast checks, run by main.ts before anything starts:
 *
 * - no model configured → refuse at once, with the guidance (`assertModelConfigured`, settings.ts,
 *   before Redis is even looked for);
 * - Redis unreachable (after a short wait) or someone else's → refuse; ours or empty → marked;
 *   one warning per way it can lose acknowledged messages or evict keys;
 * - a key or token the service rejects → refuse (waiting cannot fix it); an endpoint that does
 *   not answer → a warning (turns and adapters retry on their own).
 *
 * A refusal prints one line per failure with its fix and exits with the doctor's exit code.
 */
import type { Config } from "../../config/index.js";
import type { ResolvedRedis } from "../embedded-redis.js";
import type { Logger } from "../logger.js";
import type { Redis } from "../queue/index.js";
import { exitCodeOf, formatResult, StartupRefusedError, type CheckResult } from "./check.js";
import { checkModelList, llmEndpoints } from "./llm.js";
import { discordResults, telegramResults } from "./platforms.js";
import { connectForChecks, durabilityResults, markRedis, ownershipOf, ownershipResult, readRedisFacts, unreachableResult } from "./redis.js";

export interface StartupCheckOptions {
  config: Config;
  redis: ResolvedRedis;
  logger: Logger;
  /** How long Redis may take to answer (a container that starts beside it). @defaultValue 5000 */
  redisWaitMs?: number;
  /** Longest wait of one model or platform request. @defaultValue 3000 */
  timeoutMs?: number;
}

/** Refuses (StartupRefusedError, after stopping a private Redis) or returns, having logged the warnings. */
export async function checkBeforeStart(options: StartupCheckOptions): Promise<void> {
  const { config, logger } = options;
  const timeoutMs = options.timeoutMs ?? 3_000;
  const [redis, remote] = await Promise.all([redisAtStart(options), remoteAtStart(config, timeoutMs)]);
  const refusals = [...redis.filter((result) => result.status === "fail"), ...remote.filter((result) => result.status === "fail" && result.definitive)];
  if (refusals.length > 0) {
    await options.redis.stop();
    throw new StartupRefusedError(exitCodeOf(refusals), refusals.map((result) => `longhaul: ${formatResult(result, { color: false })}`));
  }
  for (const result of [...redis, ...remote]) {
    // Logged once per process; in a terminal chat each also shows as one dimmed line.
    if (result.status === "warn" || result.status === "fail") logger.warn({ check: result.group, fix: result.fix }, `${result.detail} (fix: ${result.fix ?? "see npm run doctor"})`);
  }
}

async function redisAtStart(options: StartupCheckOptions): Promise<CheckResult[]> {
  const { config, redis: target } = options;
  let redis: Redis | undefined;
  let lastError: unknown;
  const deadline = Date.now() + (options.redisWaitMs ?? 5_000);
  while (!redis) {
    try {
      redis = await connectForChecks(target.address, 1_000);
    } catch (error) {
      lastError = error;
      if (Date.now() >= deadline) return [unreachableResult(target.address, lastError, target.explicit)];
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  try {
    const facts = await readRedisFacts(redis, config.REDIS_PREFIX);
    const ownership = ownershipResult(facts, { url: target.url, explicit: target.explicit, prefix: config.REDIS_PREFIX });
    if (ownership.status === "fail") return [ownership];
    if (ownershipOf(facts) !== "ours") {
      await markRedis(redis, config.REDIS_PREFIX);
      options.logger.info({ keys: facts.keys, explicit: target.explicit }, "redis-marked");
    }
    return durabilityResults(facts);
  } finally {
    redis.disconnect();
  }
}

/** The model keys (worker side) and platform tokens (gateway side): one request each, side by side. */
async function remoteAtStart(config: Config, timeoutMs: number): Promise<CheckResult[]> {
  const checks: Array<Promise<CheckResult[]>> = [];
  if (config.LONGHAUL_ROLE !== "gateway") {
    for (const endpoint of llmEndpoints(config)) checks.push(checkModelList(endpoint, timeoutMs).then((result) => [result]));
  }
  if (config.LONGHAUL_ROLE !== "worker") {
    checks.push(telegramResults(config, { timeoutMs, webhook: false }), discordResults(config, { timeoutMs }));
  }
  return (await Promise.all(checks)).flat();
}
