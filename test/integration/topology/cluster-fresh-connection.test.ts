/**
 * The operator CLIs on a Cluster, each as its process runs it: a new connection
 * (src/cli/redis.ts, withConfiguredRedis) whose first command is a SCAN over every master. A
 * Cluster client learns its masters from the seeds only once connected: a SCAN sent before that
 * walked no master at all — `admin sessions` listed nothing, `pairing list` no request, and
 * `migrate-to-cluster` found the Cluster empty when it was not.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAdmin } from "../../../src/cli/admin-commands.js";
import { withConfiguredRedis } from "../../../src/cli/redis.js";
import { AccessControl } from "../../../src/gateway/access.js";
import { createRedis, type Redis } from "../../../src/queue/index.js";
import { globalKeys } from "../../../src/session/keys.js";
import { scanAll } from "../../../src/session/scan.js";
import { newSessionState } from "../../../src/session/state.js";
import { testConfig, uniquePrefix } from "../../helpers/config.js";
import { startRedisCluster, type RedisClusterHandle } from "../../helpers/redis-cluster.js";
import { startRedisServer, type RedisServerHandle } from "../../helpers/redis-server.js";

describe("Redis Cluster: an operator CLI's first command on a new connection", () => {
  let cluster: RedisClusterHandle;
  let single: RedisServerHandle;
  let writer: Redis;
  const prefix = uniquePrefix("fresh");
  const chats = Array.from({ length: 12 }, (_, index) => `console:c${index}`);
  const config = () => testConfig({ REDIS_URL: "redis://127.0.0.1:1", REDIS_CLUSTER_NODES: cluster.nodeList, REDIS_PREFIX: prefix });

  beforeAll(async () => {
    [cluster, single] = await Promise.all([startRedisCluster(), startRedisServer()]);
    writer = createRedis({ kind: "cluster", nodes: cluster.nodes.map((node) => ({ host: "127.0.0.1", port: node.port })) });
    for (const chat of chats) await writer.set(`${prefix}:{${chat}}:state`, JSON.stringify(newSessionState(Date.now())));
    await writer.set(globalKeys(prefix).pairingCode("ABCD2345"), JSON.stringify({ code: "ABCD2345", platform: "telegram", userId: "7", userName: "Ann", requestedAt: Date.now() }));
    // The chats really are spread: a walk of one master would not find them all.
    const perMaster = cluster.nodes.map((node) => Number(cluster.cli(node.port, "DBSIZE").trim()));
    expect(perMaster.filter((count) => count > 0).length).toBeGreaterThan(1);
  }, 120_000);
  afterAll(async () => {
    writer?.disconnect();
    await cluster?.dispose();
    await single?.dispose();
  });

  it("a SCAN walks every master", async () => {
    const found = await withConfiguredRedis(config(), (redis) => scanAll(redis, `${prefix}:*`));
    expect(new Set(found).size).toBe(chats.length + 1);
  });

  it("npm run admin -- sessions lists the chats of every master", async () => {
    let out = "";
    const code = await withConfiguredRedis(config(), (redis) => runAdmin({ redis, config: config(), now: Date.now(), write: (text) => (out += text) }, ["sessions"]));
    expect(code).toBe(0);
    for (const chat of chats) expect(out).toContain(chat);
  });

  it("npm run pairing -- list shows the pending request", async () => {
    const requests = await withConfiguredRedis(config(), (redis) => new AccessControl(redis, prefix, { users: {}, chats: {} }).pendingRequests());
    expect(requests.map((request) => request.code)).toEqual(["ABCD2345"]);
  });

  it("npm run admin -- migrate-to-cluster refuses a Cluster that already holds keys of the prefix", async () => {
    let out = "";
    const code = await withConfiguredRedis(config(), (redis) => runAdmin({ redis, config: config(), now: Date.now(), write: (text) => (out += text) }, ["migrate-to-cluster", single.url]));
    expect(out).toMatch(/Refused: the Cluster already holds keys/);
    expect(code).toBe(1);
  });
});
