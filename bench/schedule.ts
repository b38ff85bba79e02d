/**
 * Scheduled items on a private redis-server:
 *   1. the cost of one firing (load the item, append to the inbox, enqueue a turn, advance,
 *      arm the next alarm), against the baseline measured in the same run: what the ingress
 *      does for one chat message (append to the inbox + enqueue a turn);
 *   2. how late alarms ring: one-off reminders due over a few seconds, fired by the real
 *      schedule worker (BullMQ delayed jobs); lateness = firing time − due time.
 *
 *   npx tsx bench/schedule.ts [items=1000] [alarms=200]
 */
import { setTimeout as sleep } from "node:timers/promises";
import { silentLogger } from "../src/logger.js";
import { createFiringQueue, createProducers, createRedis } from "../src/queue/index.js";
import { fireOccurrence, ScheduleService, ScheduleStore, type FiringDeps, type Requester } from "../src/schedule/index.js";
import { SessionStore } from "../src/session/store.js";
import { startRedisServer } from "../test/helpers/redis-server.js";
import { startScheduleWorker } from "../workers/schedule-worker.js";
import { isMain, median, percentile, table } from "./stats.js";

const requester = (index: number): Requester => ({
  platform: "console", chatId: `b${index}`, chatType: "private", sessionKey: `console:b${index}`, userId: `b${index}`, userName: "bench", timeZone: "Europe/Berlin",
});

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const items = Number(args[0] ?? 1_000);
  const alarms = Number(args[1] ?? 200);
  const server = await startRedisServer();
  const redis = createRedis(server.url);
  const prefix = "bench";
  const store = new ScheduleStore(redis, prefix);
  const sessions = new SessionStore(redis, prefix);
  const queue = createFiringQueue(redis, prefix);
  const producers = createProducers(redis, prefix);
  const clock = { now: Date.now() };
  const service = new ScheduleService({ store, alarms: queue, settings: { maxItems: 50, minIntervalMs: 1_000, admins: {} }, now: () => clock.now });
  const deps: FiringDeps = {
    store, alarms: queue, inbox: sessions, turns: producers, chatAllowed: async () => true,
    missedGraceMs: 3_600_000, now: () => clock.now, logger: silentLogger,
  };
  try {
    // 1. Firing cost, recurring items (the longer path: advance + arm the next alarm).
    const created = [];
    for (let index = 0; index < items; index++) {
      const result = await service.create(requester(index), { kind: "reminder", text: `bench ${index}`, when: { every: "1h" } });
      if (!result.ok) throw new Error(result.text);
      created.push(result.item);
    }
    await queue.queue.obliterate({ force: true });
    clock.now += 3_600_000;
    const firing: number[] = [];
    for (const item of created) {
      const started = performance.now();
      await fireOccurrence(deps, { itemId: item.id, scheduledFor: item.nextRunAt });
      firing.push(performance.now() - started);
    }
    const baseline: number[] = [];
    for (let index = 0; index < items; index++) {
      const started = performance.now();
      await sessions.appendInbox({
        platform: "console", sessionKey: `console:c${index}`, messageId: `m${index}`, chatId: `c${index}`, userId: "u", userName: "u", chatType: "private", text: "hello", sentAt: 0,
      }, 0);
      await producers.enqueueTurn(`console:c${index}`);
      baseline.push(performance.now() - started);
    }
    const firingMedian = median(firing);
    const baselineMedian = median(baseline);

    // 2. Lateness of real alarms: due from 1 s to 4 s from now, fired by the schedule worker.
    await queue.queue.obliterate({ force: true });
    clock.now = Date.now();
    const live = new ScheduleService({ store, alarms: queue, settings: { maxItems: 50, minIntervalMs: 1_000, admins: {} } });
    const liveDeps: FiringDeps = { ...deps, now: () => Date.now() };
    const due: string[] = [];
    for (let index = 0; index < alarms; index++) {
      const who = requester(items + index);
      const result = await live.create(who, { kind: "reminder", text: "ring", when: { in: `${(1 + (3 * index) / alarms).toFixed(3)}s` } });
      if (!result.ok) throw new Error(result.text);
      due.push(who.sessionKey);
    }
    const worker = startScheduleWorker({ redisAddress: server.url, prefix, lockMs: 30_000, deps: liveDeps, service: live, logger: silentLogger, rearmIntervalMs: 3_600_000 });
    const lateness: number[] = [];
    const deadline = Date.now() + 30_000;
    while (lateness.length < alarms && Date.now() < deadline) {
      await sleep(200);
      lateness.length = 0;
      for (const sessionKey of due) {
        const raw = await redis.lindex(sessions.keys(sessionKey).inbox, 0);
        if (raw === null) continue;
        const message = JSON.parse(raw) as { sentAt: number; scheduled?: { scheduledFor: number } };
        if (message.scheduled) lateness.push(message.sentAt - message.scheduled.scheduledFor);
      }
    }
    await worker.close();
    lateness.sort((a, b) => a - b);

    return [
      `Firing cost, ${items} recurring items, one at a time (ms per firing):`,
      "",
      table(["path", "median ms", "p95 ms", "per s", "ratio to baseline"], [
        ["chat message: append inbox + enqueue turn (baseline)", baselineMedian.toFixed(2), percentile([...baseline].sort((a, b) => a - b), 95).toFixed(2), Math.round(1_000 / baselineMedian), "1.0"],
        ["firing: load, checks, append, enqueue, advance, arm next", firingMedian.toFixed(2), percentile([...firing].sort((a, b) => a - b), 95).toFixed(2), Math.round(1_000 / firingMedian), (firingMedian / baselineMedian).toFixed(1)],
      ]),
      "",
      `Alarm lateness, ${lateness.length} of ${alarms} one-off reminders due 1–4 s ahead, one schedule worker (concurrency 4):`,
      "",
      table(["median ms", "p95 ms", "max ms"], [[median(lateness).toFixed(0), percentile(lateness, 95).toFixed(0), (lateness[lateness.length - 1] ?? Number.NaN).toFixed(0)]]),
    ].join("\n");
  } finally {
    await queue.close();
    await producers.close();
    redis.disconnect();
    await server.dispose();
  }
}

if (isMain(import.meta.url)) console.log(await main());
