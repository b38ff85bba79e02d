/**
 * `npm run bench -- budget`: the Redis work and the CPU of one LLM call's budget (issue #18):
 * a reserve and its settle, with the chat and the user paying (four counters), on a private
 * redis-server. For each configuration: Redis commands per call (INFO commandstats, the commands
 * inside scripts counted), the round trips the caller waits for before the call and after it,
 * and the CPU µs of the process per reserve+settle pair (median over `pairs`); then the same
 * pairs alternately without and with an AsyncLocalStorage that has run (promise hooks on, as the
 * budget scope had them in every worker). Uses only the meter's public calls, so the same file
 * measures an older build (docs/benchmarks.md).
 *
 *   npx tsx bench/budget.ts [pairs=2000]
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Redis } from "ioredis";
import { BudgetMeter } from "../src/budget/index.js";
import type { BudgetsSection } from "../config/operator-sections.js";
import { countRoundTrips } from "../test/helpers/round-trips.js";
import { isMain, median, table } from "./stats.js";
import { withPrivateRedis } from "./store-session.js";

const CONFIGS: Array<{ label: string; budgets: BudgetsSection | undefined }> = [
  { label: "no budgets: section (every call still counted)", budgets: undefined },
  { label: "chat daily $ + tokens, user monthly $", budgets: { chat: { daily: { usd: 1e6, tokens: 1e12 } }, user: { monthly: { usd: 1e6 } }, chats: {}, users: {} } },
];

async function commandTotal(redis: Redis): Promise<number> {
  let calls = 0;
  for (const match of (await redis.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (match[1] !== "info") calls += Number(match[2]);
  }
  return calls;
}

/** CPU µs of this process per call of `run` (median over `count` calls, one after the other). */
async function cpuPerPair(count: number, run: () => Promise<unknown>): Promise<number> {
  const cpu: number[] = [];
  for (let index = 0; index < count; index++) {
    const start = process.cpuUsage();
    await run();
    const used = process.cpuUsage(start);
    cpu.push(used.user + used.system);
  }
  return median(cpu);
}

export async function main(args: string[] = []): Promise<string> {
  const pairs = Number(args[0] ?? 2_000);
  return withPrivateRedis({}, async (redis) => {
    const rows: Array<Array<string | number>> = [];
    for (const [index, { label, budgets }] of CONFIGS.entries()) {
      const meter = new BudgetMeter(redis, `bench${index}`, budgets);
      const accounts = { chat: "tg:-100123", user: "tg:42" };
      const estimate = { usd: 0.002, tokens: 3_000 };
      const actual = { usd: 0.001, tokens: 1_500 };
      // Warm-up: scripts loaded, the JIT at work.
      for (let warm = 0; warm < 1_000; warm++) await meter.settle(await meter.reserve(accounts, estimate), actual);

      const trips = countRoundTrips(redis);
      const start = await commandTotal(redis);
      trips.reset();
      const reservation = await meter.reserve(accounts, estimate);
      const reserveTrips = trips.roundTrips();
      const afterReserve = await commandTotal(redis);
      trips.reset();
      await meter.settle(reservation, actual);
      const settleTrips = trips.roundTrips();
      const afterSettle = await commandTotal(redis);
      trips.restore();
      rows.push([label, "reserve", afterReserve - start, reserveTrips, ""]);
      rows.push([label, "settle", afterSettle - afterReserve, settleTrips, ""]);

      const before = await commandTotal(redis);
      const cpu = await cpuPerPair(pairs, async () => meter.settle(await meter.reserve(accounts, estimate), actual));
      const perPair = (await commandTotal(redis) - before) / pairs;
      rows.push([label, `reserve + settle (${pairs} pairs)`, perPair, "", cpu]);
    }
    // What promise hooks add to the same pairs (the budget scope's AsyncLocalStorage turned them
    // on for the whole worker): alternately without and with an AsyncLocalStorage that has run.
    const meter = new BudgetMeter(redis, "benchhooks", undefined);
    const call = async () => meter.settle(await meter.reserve({ chat: "tg:1", user: "tg:2" }, { usd: 0.002, tokens: 3_000 }), { usd: 0.001, tokens: 1_500 });
    const plain: number[] = [];
    const hooked: number[] = [];
    for (let round = 0; round < 4; round++) {
      plain.push(await cpuPerPair(pairs / 4, call));
      const storage = new AsyncLocalStorage<boolean>();
      hooked.push(await storage.run(true, () => cpuPerPair(pairs / 4, call)));
      storage.disable();
    }
    rows.push(["no budgets: section, no promise hooks", `reserve + settle (4 × ${pairs / 4} pairs)`, "", "", median(plain)]);
    rows.push(["no budgets: section, an AsyncLocalStorage has run", `reserve + settle (4 × ${pairs / 4} pairs)`, "", "", median(hooked)]);
    return table(["budgets", "step", "Redis commands", "round trips", "CPU µs per pair (median)"], rows);
  });
}

if (isMain(import.meta.url)) console.log(await main(process.argv.slice(2)));
