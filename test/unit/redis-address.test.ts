import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, minReplicasAckOf } from "../../config/index.js";
import { redisLookupOf } from "../../src/embedded-redis.js";
import { describeRedisAddress, keySlot, parseHostPorts, queuePrefix } from "../../src/queue/index.js";

describe("Redis topology settings", () => {
  it("reads REDIS_SENTINELS as host:port pairs, IPv6 in brackets", () => {
    expect(parseHostPorts("10.0.0.1:26379, sentinel-b:26380,[::1]:26381")).toEqual([
      { host: "10.0.0.1", port: 26379 }, { host: "sentinel-b", port: 26380 }, { host: "::1", port: 26381 },
    ]);
    expect(() => parseHostPorts("10.0.0.1")).toThrow(/host:port/);
    expect(() => parseHostPorts("h:70000")).toThrow(/host:port/);
  });

  it("refuses REDIS_SENTINELS without REDIS_SENTINEL_MASTER, and a malformed list", () => {
    expect(() => loadConfig({ REDIS_SENTINELS: "127.0.0.1:26379" })).toThrow(ConfigError);
    expect(() => loadConfig({ REDIS_SENTINELS: "127.0.0.1:26379" })).toThrow(/REDIS_SENTINEL_MASTER/);
    expect(() => loadConfig({ REDIS_SENTINELS: "nohostport", REDIS_SENTINEL_MASTER: "m" })).toThrow(/REDIS_SENTINELS/);
  });

  it("the sentinels win over REDIS_URL's host; REDIS_URL's credentials go to the data nodes", () => {
    const config = loadConfig({
      REDIS_URL: "redis://app:s%40cret@ignored:6379", REDIS_SENTINELS: "10.0.0.1:26379,10.0.0.2:26379",
      REDIS_SENTINEL_MASTER: "main", REDIS_SENTINEL_PASSWORD: "sentinel-pass",
    });
    const lookup = redisLookupOf(config);
    expect(lookup.sentinel).toEqual({
      kind: "sentinel", master: "main", sentinelPassword: "sentinel-pass", username: "app", password: "s@cret",
      sentinels: [{ host: "10.0.0.1", port: 26379 }, { host: "10.0.0.2", port: 26379 }],
    });
    // Messages name the master and sentinels, never a password.
    const described = describeRedisAddress(lookup.sentinel!);
    expect(described).toBe('sentinel master "main" via 10.0.0.1:26379,10.0.0.2:26379');
    expect(described).not.toContain("s@cret");
  });

  it("without sentinels the lookup is REDIS_URL as before", () => {
    expect(redisLookupOf(loadConfig({ REDIS_URL: "redis://10.0.0.9:6380" }))).toEqual({ dataDir: "./data", redisUrl: "redis://10.0.0.9:6380" });
    expect(redisLookupOf(loadConfig({}))).toEqual({ dataDir: "./data" });
  });
});

describe("Redis Cluster settings", () => {
  it("REDIS_CLUSTER_NODES names the seeds; REDIS_URL gives the nodes' credentials and TLS", () => {
    const lookup = redisLookupOf(loadConfig({ REDIS_URL: "rediss://app:s%40cret@ignored:6379", REDIS_CLUSTER_NODES: "10.0.0.1:7000,10.0.0.2:7001" }));
    expect(lookup.cluster).toEqual({
      kind: "cluster", username: "app", password: "s@cret", tls: true,
      nodes: [{ host: "10.0.0.1", port: 7000 }, { host: "10.0.0.2", port: 7001 }],
    });
    const described = describeRedisAddress(lookup.cluster!);
    expect(described).toBe("cluster via 10.0.0.1:7000,10.0.0.2:7001");
    expect(described).not.toContain("s@cret");
  });

  it("refuses a Cluster and Sentinel together, and a malformed node list", () => {
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: "127.0.0.1:7000", REDIS_SENTINELS: "127.0.0.1:26379", REDIS_SENTINEL_MASTER: "m" })).toThrow(/REDIS_CLUSTER_NODES: not with REDIS_SENTINELS/);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: "nohostport" })).toThrow(/REDIS_CLUSTER_NODES/);
  });

  it("a Cluster takes REDIS_MIN_REPLICAS_ACK (WAIT per node written to), 0 unless set", () => {
    expect(minReplicasAckOf(loadConfig({ REDIS_CLUSTER_NODES: "127.0.0.1:7000", REDIS_MIN_REPLICAS_ACK: "1" }))).toBe(1);
    expect(minReplicasAckOf(loadConfig({ REDIS_CLUSTER_NODES: "127.0.0.1:7000" }))).toBe(0);
  });

  it("keySlot is Redis Cluster's HASH_SLOT (values from CLUSTER KEYSLOT of redis-server 7.0)", () => {
    const slots: Array<[string, number]> = [["foo", 12182], ["bar", 5061], ["somekey", 11058], ["{user1000}.following", 3443], ["{}x", 10595], ["a{}{b}", 15033], ["ключ", 10303], ["longhaul:{tg:123}:inbox", 11813]];
    for (const [key, slot] of slots) expect(keySlot(key)).toBe(slot);
  });

  it("BullMQ's prefix: one hash tag per queue on a Cluster, the plain prefix on one Redis", () => {
    expect(queuePrefix("lh", "turns", true)).toBe("lh:{turns}");
    expect(queuePrefix("lh", "deliveries-telegram", true)).toBe("lh:{deliveries-telegram}");
    expect(queuePrefix("lh", "turns", false)).toBe("lh");
  });
});
