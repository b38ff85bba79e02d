import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveRedis } from "../../src/embedded-redis.js";
import { silentLogger } from "../../src/logger.js";
import { createRedis } from "../../src/queue/index.js";
import { freePort } from "../helpers/redis-server.js";

describe("Redis resolution", () => {
  it("uses REDIS_URL when it is set, without starting anything", async () => {
    const resolved = await resolveRedis({ redisUrl: "redis://10.0.0.1:6379", dataDir: "/nonexistent", logger: silentLogger });
    expect(resolved.url).toBe("redis://10.0.0.1:6379");
    expect(resolved.explicit).toBe(true);
  });

  it("runs a private redis-server with AOF under DATA_DIR when nothing listens on the default port, and stops it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "longhaul-data-"));
    const [defaultPort, embeddedPort] = [await freePort(), await freePort()];
    try {
      const resolved = await resolveRedis({ dataDir, logger: silentLogger, defaultPort, embeddedPort });
      expect(resolved.url).toBe(`redis://127.0.0.1:${embeddedPort}`);
      const client = createRedis(resolved.url, { maxRetriesPerRequest: 1 });
      await client.set("k", "v");
      expect(await client.config("GET", "appendonly")).toEqual(["appendonly", "yes"]);
      expect(await client.config("GET", "appendfsync")).toEqual(["appendfsync", "everysec"]);
      expect(await client.config("GET", "maxmemory-policy")).toEqual(["maxmemory-policy", "noeviction"]);
      client.disconnect();
      expect(existsSync(join(dataDir, "redis"))).toBe(true);
      expect(readdirSync(join(dataDir, "redis")).some((name) => name.startsWith("appendonly"))).toBe(true);
      await resolved.stop();
      const probe = createRedis(resolved.url, { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
      probe.on("error", () => undefined);
      await expect(probe.connect()).rejects.toThrow();
      probe.disconnect();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
