/**
 * The worker's cache of accounts without limits (src/budget/limits-cache.ts), over real pub/sub:
 * a meter with the cache (a worker) and a plain one on another connection (an admin's `/budget`
 * in another worker). The cache's subscriber goes through a TCP proxy, so a test can stall its
 * connection (nothing arrives, nothing is lost) or cut it (publishes in between are lost).
 */
import type { Redis } from "ioredis";
import { afterEach, describe, expect, inject, it, vi } from "vitest";
import type { BudgetsSection } from "../../../config/operator-sections.js";
import { BudgetMeter, LimitsCache, unlimited } from "../../../src/budget/index.js";
import { BudgetExhaustedError } from "../../../src/errors.js";
import { silentLogger } from "../../../src/logger.js";
import { deleteUserData } from "../../../src/memory/index.js";
import { createRedis } from "../../../src/queue/index.js";
import { globalKeys } from "../../../src/session/keys.js";
import { uniquePrefix } from "../../helpers/config.js";
import { countRoundTrips } from "../../helpers/round-trips.js";
import { startTcpProxy, type TcpProxy } from "../../helpers/tcp-proxy.js";

const accounts = { chat: "tg:1", user: "tg:2" };
const estimate = { usd: 0.001, tokens: 100 };

describe("the limits cache", () => {
  const connections: Redis[] = [];
  const proxies: TcpProxy[] = [];
  const caches: LimitsCache[] = [];
  afterEach(async () => {
    for (const cache of caches.splice(0)) cache.close();
    for (const connection of connections.splice(0)) connection.disconnect();
    for (const proxy of proxies.splice(0)) await proxy.close();
  });

  const connection = (url = inject("redisUrl")) => {
    const redis = createRedis(url);
    connections.push(redis);
    return redis;
  };

  /** A worker's meter with its cache (subscriber behind a proxy), and an admin's meter on its own connection. */
  const start = async (config?: BudgetsSection, options: { mainThroughProxy?: boolean; pingMs?: number } = {}) => {
    const prefix = uniquePrefix("limits");
    const subscriberProxy = await startTcpProxy(inject("redisUrl"));
    proxies.push(subscriberProxy);
    const mainProxy = options.mainThroughProxy ? await startTcpProxy(inject("redisUrl")) : undefined;
    if (mainProxy) proxies.push(mainProxy);
    const subscriber = createRedis(subscriberProxy.url, { autoResubscribe: false });
    connections.push(subscriber);
    const cache = new LimitsCache({ subscriber, channel: globalKeys(prefix).budgetLimitsChannel, logger: silentLogger, pingMs: options.pingMs ?? 1_000 });
    caches.push(cache);
    const main = connection(mainProxy?.url);
    const admin = connection();
    const worker = new BudgetMeter(main, prefix, config, Date.now, { limits: cache });
    const trips = countRoundTrips(main);
    // Learnt from a first reserve: the next one sends nothing. (Retried: on a loaded machine a
    // ping may go unanswered past `pingMs`, and a reserve under way then is not learnt.)
    await vi.waitFor(async () => {
      expect(cache.live).toBe(true);
      await worker.reserve(accounts, estimate);
      trips.reset();
      expect(unlimited(await worker.reserve(accounts, estimate))).toBe(true);
      expect(trips.sent).toEqual([]);
    });
    return {
      prefix, cache, subscriber, subscriberProxy, mainProxy, main, admin, worker, trips,
      adminMeter: new BudgetMeter(admin, prefix, config),
      /** Every publish before now has reached the cache: a PING's answer comes after them. */
      heard: async () => {
        await subscriber.ping();
      },
    };
  };

  it("an admin's limit set on another connection refuses the worker's next call once its publish arrived", async () => {
    const { worker, adminMeter, heard, trips } = await start();
    await adminMeter.setLimit("chat", accounts.chat, "daily", "tokens", 1);
    await heard();
    await expect(worker.reserve(accounts, estimate)).rejects.toThrow(BudgetExhaustedError);
    expect(trips.sent.map((entry) => entry.name)).toEqual(["evalsha"]);
    // An account with a limit is not learnt: every call is reserved.
    await expect(worker.reserve(accounts, estimate)).rejects.toThrow("Today's budget for this chat is used up");
    expect(trips.sent).toHaveLength(2);
  });

  it("`off` over the config's limit is learnt as no limit; `default` brings the config's back at once, as does the user's data deletion", async () => {
    const config = { user: { daily: { tokens: 1 } }, chats: {}, users: {} };
    const prefix = uniquePrefix("limits");
    const admin = connection();
    // Before the worker starts: the config limits the user, an admin lifted it.
    await new BudgetMeter(admin, prefix, config).setLimit("user", accounts.user, "daily", "tokens", "off");
    const subscriber = createRedis(inject("redisUrl"), { autoResubscribe: false });
    connections.push(subscriber);
    const cache = new LimitsCache({ subscriber, channel: globalKeys(prefix).budgetLimitsChannel, logger: silentLogger });
    caches.push(cache);
    const main = connection();
    const worker = new BudgetMeter(main, prefix, config, Date.now, { limits: cache });
    await vi.waitFor(() => expect(cache.live).toBe(true));
    const learn = async () => {
      await worker.reserve(accounts, estimate);
      expect(cache.unlimited(["chat:tg:1", "user:tg:2"])).toBe(true);
    };

    await learn();
    await new BudgetMeter(admin, prefix, config).setLimit("user", accounts.user, "daily", "tokens", "default");
    await subscriber.ping();
    await expect(worker.reserve(accounts, estimate)).rejects.toThrow("Today's budget for you is used up");

    await new BudgetMeter(admin, prefix, config).setLimit("user", accounts.user, "daily", "tokens", "off");
    await subscriber.ping();
    await learn();
    const deletion = countRoundTrips(admin);
    await deleteUserData(admin, prefix, { platform: "telegram", userId: "2" });
    deletion.restore();
    // Each account's limits go with their publish in one transaction: a deletion that dies half-way
    // can delete limits nobody hears of.
    const user = globalKeys(prefix).budgetLimits("user:tg:2");
    const at = deletion.sent.findIndex((entry) => entry.name === "del" && entry.args.includes(user));
    expect(deletion.sent.slice(at - 1, at + 3).map((entry) => [entry.name, String(entry.args[entry.name === "publish" ? 1 : 0] ?? "")]), JSON.stringify(deletion.sent.map((entry) => entry.name))).toEqual([
      ["multi", ""], ["del", user], ["publish", "user:tg:2"], ["exec", ""],
    ]);
    await subscriber.ping();
    await expect(worker.reserve(accounts, estimate)).rejects.toThrow("Today's budget for you is used up");
  });

  it("a cut subscriber: not used while it is away, and empty when subscribed again (the publish in between was lost)", async () => {
    const { cache, worker, adminMeter, subscriberProxy, trips, heard } = await start();
    subscriberProxy.cut();
    await vi.waitFor(() => expect(cache.live).toBe(false));
    // Nobody hears this publish.
    await adminMeter.setLimit("chat", accounts.chat, "daily", "tokens", 1);
    await expect(worker.reserve(accounts, estimate)).rejects.toThrow(BudgetExhaustedError);
    expect(trips.sent.map((entry) => entry.name)).toEqual(["evalsha"]);

    subscriberProxy.heal();
    await vi.waitFor(() => expect(cache.live).toBe(true), { timeout: 5_000 });
    await expect(worker.reserve(accounts, estimate)).rejects.toThrow(BudgetExhaustedError);
    // Lifted again while subscribed: learnt again, and skipped.
    await adminMeter.setLimit("chat", accounts.chat, "daily", "tokens", "default");
    await heard();
    await worker.reserve(accounts, estimate);
    trips.reset();
    await worker.reserve(accounts, estimate);
    expect(trips.sent).toEqual([]);
  });

  it("a stalled subscriber: not used once a ping goes unanswered; what it held back arrives before it is used again", async () => {
    const { cache, worker, adminMeter, subscriberProxy, trips } = await start(undefined, { pingMs: 50 });
    subscriberProxy.pause();
    await vi.waitFor(() => expect(cache.live).toBe(false));
    await adminMeter.setLimit("chat", accounts.chat, "daily", "tokens", 1);
    await vi.waitFor(() => expect(subscriberProxy.held()).toBeGreaterThan(0));
    // The account is still listed (nothing arrived), but the cache is not used.
    expect(cache.live).toBe(false);
    await expect(worker.reserve(accounts, estimate)).rejects.toThrow(BudgetExhaustedError);
    expect(trips.sent.map((entry) => entry.name)).toEqual(["evalsha"]);

    subscriberProxy.resume();
    await vi.waitFor(() => expect(cache.live).toBe(true));
    await expect(worker.reserve(accounts, estimate)).rejects.toThrow(BudgetExhaustedError);
  });

  it("a publish that overtakes a reserve's answer: what that reserve found is not learnt", async () => {
    const { cache, worker, adminMeter, mainProxy, heard } = await start(undefined, { mainThroughProxy: true });
    // Forget the accounts (a limit set and lifted), then hold the next reserve's answer back.
    await adminMeter.setLimit("chat", accounts.chat, "daily", "tokens", 1);
    await adminMeter.setLimit("chat", accounts.chat, "daily", "tokens", "default");
    await heard();
    expect(cache.unlimited(["chat:tg:1", "user:tg:2"])).toBe(false);
    mainProxy!.pause();
    const reserved = worker.reserve(accounts, estimate);
    // Redis ran it (no limit then) and answered; the answer waits in the proxy.
    await vi.waitFor(() => expect(mainProxy!.held()).toBeGreaterThan(0));
    await adminMeter.setLimit("chat", accounts.chat, "daily", "tokens", 1);
    await heard();
    mainProxy!.resume();
    expect(unlimited(await reserved)).toBe(true);
    expect(cache.unlimited(["chat:tg:1", "user:tg:2"])).toBe(false);
    await expect(worker.reserve(accounts, estimate)).rejects.toThrow(BudgetExhaustedError);
  });
});
