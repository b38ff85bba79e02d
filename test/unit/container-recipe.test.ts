/**
 * No Docker engine runs here, so the container recipe is checked by construction: what
 * compose.yaml and the Dockerfile promise (SPEC §9) is read back and asserted. The steps
 * themselves run in test/e2e/production-build.test.ts.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { configSchema } from "../../config/index.js";

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), "utf8");

interface Service {
  command?: string[];
  environment?: Record<string, string>;
  deploy?: { replicas?: number };
  healthcheck?: unknown;
  depends_on?: Record<string, { condition: string }>;
  stop_grace_period?: string;
  env_file?: Array<{ path: string; required: boolean }>;
  build?: string;
  ports?: string[];
}

describe("container recipe", () => {
  // compose applies YAML merge keys (`<<: *app`), as YAML 1.1 does.
  const compose = parse(read("compose.yaml"), { merge: true }) as { services: Record<string, Service> };
  const dockerfile = read("Dockerfile");

  it("runs Redis with AOF and noeviction, and health-checks it", () => {
    const redis = compose.services.redis!;
    expect(redis.command?.join(" ")).toMatch(/--appendonly yes/);
    expect(redis.command?.join(" ")).toMatch(/--maxmemory-policy noeviction/);
    expect(redis.healthcheck).toBeDefined();
  });

  it("runs one gateway and scalable workers from the same image, configured from .env", () => {
    const { gateway, worker } = compose.services;
    expect(gateway?.environment?.LONGHAUL_ROLE).toBe("gateway");
    expect(worker?.environment?.LONGHAUL_ROLE).toBe("worker");
    expect(worker?.deploy?.replicas).toBeGreaterThanOrEqual(2);
    for (const service of [gateway!, worker!]) {
      expect(service.build).toBe(".");
      expect(service.environment?.REDIS_URL).toBe("redis://redis:6379");
      expect(service.depends_on?.redis?.condition).toBe("service_healthy");
      expect(service.env_file?.[0]?.path).toBe(".env");
      // Outside a container /metrics and /healthz stay on loopback; in one they must be reachable.
      expect(service.environment?.HTTP_HOST).toBe("0.0.0.0");
      // Every variable compose sets is one the app knows.
      for (const key of Object.keys(service.environment ?? {})) expect(Object.keys(configSchema.shape)).toContain(key);
    }
  });

  it("the sentinel profile: two AOF, noeviction replicas of redis and three sentinels watching it as \"lh\", none started without the profile", () => {
    const inProfile = Object.entries(compose.services).filter(([, service]) => (service as { profiles?: string[] }).profiles?.includes("sentinel")).map(([name]) => name).sort();
    expect(inProfile).toEqual(["redis-replica-1", "redis-replica-2", "sentinel-1", "sentinel-2", "sentinel-3"]);
    for (const name of ["redis-replica-1", "redis-replica-2"]) {
      const command = compose.services[name]!.command!.join(" ");
      expect(command).toMatch(/--replicaof redis 6379/);
      expect(command).toMatch(/--appendonly yes/);
      expect(command).toMatch(/--maxmemory-policy noeviction/);
    }
    for (const name of ["sentinel-1", "sentinel-2", "sentinel-3"]) {
      const script = compose.services[name]!.command!.join(" ");
      // A quorum of 2 of 3, and the master name docs/operator.md tells the operator to set.
      expect(script).toMatch(/sentinel monitor lh redis 6379 2/);
      expect(script).toMatch(/exec redis-server \/data\/sentinel.conf --sentinel/);
      expect(compose.services[name]!.environment?.HOSTNAME_ANNOUNCE).toBe(name);
    }
    expect(read("docs/operator.md")).toContain("REDIS_SENTINEL_MASTER=lh");
  });

  it("publishes the HTTP port on the host's loopback only", () => {
    const published = Object.values(compose.services).flatMap((service) => service.ports ?? []);
    expect(published.length).toBeGreaterThan(0);
    for (const port of published) expect(port).toMatch(/^127\.0\.0\.1:\d+:\d+$/);
  });

  it("binds the HTTP server to loopback by default", () => {
    expect(configSchema.parse({}).HTTP_HOST).toBe("127.0.0.1");
  });

  it("gives a turn time to finish or be handed back before Docker kills the container", () => {
    const grace = Number(/^(\d+)s$/.exec(compose.services.worker?.stop_grace_period ?? "")?.[1]) * 1_000;
    const defaults = configSchema.parse({});
    expect(defaults.SHUTDOWN_TIMEOUT_MS).toBeLessThan(grace);
  });

  it("builds in two stages and runs the compiled entry point as a non-root user with production dependencies", () => {
    expect(dockerfile.match(/^FROM /gm)).toHaveLength(2);
    expect(dockerfile).toMatch(/^RUN npm ci --omit=dev/m);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^HEALTHCHECK .*\n?.*\/healthz/m);
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/src\/main\.js"\]$/m);
    expect(dockerfile).toMatch(/FROM node:20/);
  });
});
