/**
 * Firings across processes: worker processes take the alarms (BullMQ delayed jobs), two gateway
 * replicas in this process deliver. Each occurrence must reach the chat exactly once: with two
 * workers and two gateways, with the firing worker killed at the moment it fires, and with the
 * firing worker frozen (SIGSTOP) past its lock while another takes the alarm over.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { silentLogger } from "../../../src/logger.js";
import { createFiringQueue, createRedis, type FiringQueue, type Redis } from "../../../src/queue/index.js";
import { ScheduleService, ScheduleStore, type Requester } from "../../../src/schedule/index.js";
import { SessionStore } from "../../../src/session/store.js";
import { startFakeLlm, type FakeLlm } from "../../fakes/fake-llm.js";
import { spawnApp, type AppProcess } from "../../helpers/app-process.js";
import { testConfig, testEnv } from "../../helpers/config.js";
import { startPipeline, type Pipeline } from "../../helpers/pipeline.js";
import { RecordingAdapter } from "../../helpers/recording-adapter.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LOCK_MS = 1_500;

const console_ = (name: string): Requester => ({
  platform: "console", chatId: name, chatType: "private", sessionKey: `console:${name}`, userId: name, userName: name, timeZone: "UTC",
});

interface Fleet {
  redisServer: RedisServerHandle;
  llm: FakeLlm;
  env: Record<string, string>;
  gateways: Array<{ adapter: RecordingAdapter; pipeline: Pipeline }>;
  workers: AppProcess[];
  redis: Redis;
  alarms: FiringQueue;
  service: ScheduleService;
  startWorker(): AppProcess;
  /** Every reply any gateway delivered. */
  delivered(): string[];
}

let fleet: Fleet | undefined;
afterEach(async () => {
  if (!fleet) return;
  const { gateways, workers, alarms, redis, llm, redisServer } = fleet;
  fleet = undefined;
  const pid = redisServer.pid();
  if (pid) process.kill(pid, "SIGCONT");
  for (const { pipeline } of gateways) await pipeline.close();
  await Promise.all(workers.map((worker) => worker.kill("SIGKILL")));
  await alarms.close();
  redis.disconnect();
  await llm.close();
  await redisServer.dispose();
});

async function startFleet(gatewayCount: number): Promise<Fleet> {
  // A Redis of this file's own: the kill test freezes it.
  const redisServer = await startRedisServer();
  const llm = await startFakeLlm();
  const env = testEnv({ REDIS_URL: redisServer.url, LLM_BASE_URL: llm.url, LOG_LEVEL: "debug", JOB_LOCK_MS: String(LOCK_MS), SCHEDULE_MIN_INTERVAL_S: "1" });
  const gateways: Fleet["gateways"] = [];
  for (let index = 0; index < gatewayCount; index++) {
    const adapter = new RecordingAdapter("console");
    gateways.push({ adapter, pipeline: await startPipeline(testConfig({ ...env, LONGHAUL_ROLE: "gateway" }), [adapter], { worker: false }) });
  }
  const redis = createRedis(redisServer.url);
  const alarms = createFiringQueue(redis, env.REDIS_PREFIX!);
  const service = new ScheduleService({ store: new ScheduleStore(redis, env.REDIS_PREFIX!), alarms, settings: { maxItems: 50, minIntervalMs: 1_000, admins: {} } });
  const workers: AppProcess[] = [];
  fleet = {
    redisServer, llm, env, gateways, workers, redis, alarms, service,
    startWorker() {
      const worker = spawnApp({ ...env, LONGHAUL_ROLE: "worker" });
      workers.push(worker);
      return worker;
    },
    delivered: () => gateways.flatMap(({ adapter }) => adapter.sent.map((entry) => `${entry.reply.sessionKey} ${entry.reply.text}`)),
  };
  return fleet;
}

async function remind(service: ScheduleService, requester: Requester, text: string, when: { in?: string; every?: string }) {
  const result = await service.create(requester, { kind: "reminder", text, when });
  if (!result.ok) throw new Error(result.text);
  return result.item;
}

/** Runs `act` synchronously, inside the stderr 'data' handler, when `pattern` first appears. */
function onStderr(worker: AppProcess, pattern: RegExp, act: () => void): Promise<void> {
  return new Promise((resolve) => {
    let seen = "";
    const listener = (chunk: string) => {
      seen += chunk;
      if (!pattern.test(seen)) return;
      worker.child.stderr.off("data", listener);
      act();
      resolve();
    };
    worker.child.stderr.on("data", listener);
  });
}

const transcriptOf = async (redis: Redis, prefix: string, sessionKey: string) =>
  (await new SessionStore(redis, prefix).readTranscript(sessionKey)).map((message) => `${message.role}: ${message.content}`);

// Worker processes start, die and are replaced inside each test, with waits of up to 90 s for a
// firing: 60 s per test (the default) was less than the waits add up to on a loaded 2-core box.
describe("firings across worker processes and gateway replicas", { timeout: 300_000 }, () => {
  it("two workers and two gateways deliver each occurrence exactly once", async () => {
    const { service, startWorker, delivered, redis, env } = await startFleet(2);
    const workers = [startWorker(), startWorker()];
    await Promise.all(workers.map((worker) => worker.waitForStderr(/longhaul-ready/, 90_000)));

    const names = ["ann", "ben", "cat", "dan", "eve", "fay"];
    for (const name of names) await remind(service, console_(name), `once for ${name}`, { in: "2s" });
    const recurring = await remind(service, console_("rob"), "every two seconds", { every: "2s" });

    await vi.waitFor(() => expect(delivered().filter((line) => line.startsWith("console:rob "))).toHaveLength(3), { timeout: 90_000, interval: 20 });
    expect((await service.cancel(console_("rob"), recurring.id)).ok).toBe(true);
    await vi.waitFor(() => expect(delivered().length).toBeGreaterThanOrEqual(names.length + 3), { timeout: 90_000, interval: 50 });
    // Past any lock expiry and stall check that could let a second worker repeat something.
    await sleep(LOCK_MS * 3);

    const lines = delivered();
    expect(lines.filter((line) => !line.startsWith("console:rob ")).sort()).toEqual(names.map((name) => `console:${name} ⏰ Reminder: once for ${name}`));
    const robLines = lines.filter((line) => line.startsWith("console:rob "));
    expect(robLines.length === 3 || robLines.length === 4).toBe(true); // a 4th may fire before the cancel lands
    expect(new Set(robLines).size).toBe(1);
    for (const name of names) expect(await transcriptOf(redis, env.REDIS_PREFIX!, `console:${name}`)).toEqual([`assistant: ⏰ Reminder: once for ${name}`]);
    // Firings logged across both workers: one per delivered occurrence, none twice.
    const fired = workers.flatMap((worker) => worker.stderr().split("\n").filter((line) => line.includes('"msg":"schedule-fired"') && line.includes('"duplicate":false')));
    expect(fired).toHaveLength(lines.length);
  });

  it("a worker killed at the moment of firing: another takes the alarm over and the reminder arrives once", async () => {
    const { service, startWorker, delivered, redisServer, redis, env } = await startFleet(1);
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/, 90_000);
    await remind(service, console_("kim"), "take the cake out", { in: "2s" });

    // The moment the alarm reaches the worker: freeze Redis so the firing cannot finish,
    // kill the worker mid-firing, then let Redis go on (it still runs what it had received).
    const redisPid = redisServer.pid()!;
    await onStderr(first, /"msg":"schedule-firing"/, () => {
      process.kill(redisPid, "SIGSTOP");
      first.child.kill("SIGKILL");
    });
    expect(await first.exited()).toBeNull();
    process.kill(redisPid, "SIGCONT");

    const second = startWorker();
    await vi.waitFor(() => expect(delivered()).toHaveLength(1), { timeout: 90_000, interval: 20 });
    await sleep(LOCK_MS * 3);
    expect(delivered()).toEqual(["console:kim ⏰ Reminder: take the cake out"]);
    expect(await transcriptOf(redis, env.REDIS_PREFIX!, "console:kim")).toEqual(["assistant: ⏰ Reminder: take the cake out"]);
    expect(second.stderr()).toContain("schedule-firing");
  });

  it("a worker frozen past its lock while firing: the alarm is taken over, and the thawed worker adds nothing", async () => {
    const { service, startWorker, delivered, redis, env } = await startFleet(2);
    const first = startWorker();
    await first.waitForStderr(/longhaul-ready/, 90_000);
    const item = await remind(service, console_("liv"), "call back", { every: "3s" });

    await onStderr(first, /"msg":"schedule-firing"/, () => first.child.kill("SIGSTOP"));
    const second = startWorker();
    // The first occurrence arrives while the first worker is still frozen.
    await vi.waitFor(() => expect(delivered().length).toBeGreaterThanOrEqual(1), { timeout: 90_000, interval: 20 });
    first.child.kill("SIGCONT");
    await vi.waitFor(async () => expect((await new ScheduleStore(redis, env.REDIS_PREFIX!).get(item.id))?.fireCount).toBeGreaterThanOrEqual(2), { timeout: 90_000, interval: 20 });
    expect((await service.cancel(console_("liv"), item.id)).ok).toBe(true);
    await sleep(LOCK_MS * 3);

    const fireCount = delivered().length;
    const transcript = await transcriptOf(redis, env.REDIS_PREFIX!, "console:liv");
    // One delivery per occurrence the item counted (2, or 3 if one more fired before the cancel).
    expect(transcript).toEqual(Array.from({ length: fireCount }, () => "assistant: ⏰ Reminder: call back"));
    expect(fireCount === 2 || fireCount === 3).toBe(true);
    expect(second.stderr()).toContain("schedule-fired");
  });
});
