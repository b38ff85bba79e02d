/**
 * Runs the real pipeline in the test process: gateway (ingress, delivery) around a
 * RecordingAdapter, and optionally a worker, against the private redis-server and a fake LLM.
 */
import { Writable } from "node:stream";
import type { Config } from "../../config/index.js";
import { startGateway, type Gateway } from "../../src/gateway/gateway.js";
import { createLogger, type Logger } from "../../src/logger.js";
import { createMetrics, type Metrics } from "../../src/metrics.js";
import { startWorkerRole, type WorkerRole } from "../../workers/worker-role.js";
import type { ChannelAdapter } from "../../src/adapters/channel-adapter.js";
import type { Tool } from "../../src/tools/index.js";
import { redisLookupOf } from "../../src/embedded-redis.js";
import type { RedisAddress } from "../../src/queue/index.js";

export interface LogCapture {
  lines: string[];
  logger: Logger;
}

/** A real pino logger whose output the test can read. */
export function captureLogs(level = "debug", secrets: readonly string[] = []): LogCapture {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString("utf8"));
      done();
    },
  });
  return { lines, logger: createLogger({ level, destination, secrets }) };
}

export interface Pipeline {
  gateway: Gateway;
  /** The metrics the worker and the gateway count into. */
  metrics: Metrics;
  worker?: WorkerRole;
  logs: LogCapture;
  close(): Promise<void>;
}

/** The Redis a test's configuration names, composed as main.ts composes it (REDIS_CLUSTER_NODES, REDIS_SENTINELS or REDIS_URL). */
export function testRedisAddress(config: Config): RedisAddress {
  const lookup = redisLookupOf(config);
  const address = lookup.cluster ?? lookup.sentinel ?? lookup.redisUrl;
  if (!address) throw new Error("tests must set REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER_NODES");
  return address;
}

export async function startPipeline(
  config: Config,
  adapters: ChannelAdapter[],
  options: { worker?: boolean; logs?: LogCapture; tools?: readonly Tool[]; fetchTestAllow?: readonly string[] } = {},
): Promise<Pipeline> {
  const logs = options.logs ?? captureLogs("warn");
  const metrics = createMetrics();
  const redisAddress = testRedisAddress(config);
  const worker = options.worker === false ? undefined : await startWorkerRole({ config, redisAddress, logger: logs.logger, metrics, ...(options.tools ? { extraTools: options.tools } : {}), ...(options.fetchTestAllow ? { fetchTestAllow: options.fetchTestAllow } : {}) });
  const gateway = await startGateway({ config, redisAddress, adapters, logger: logs.logger, metrics });
  return {
    gateway,
    metrics,
    ...(worker ? { worker } : {}),
    logs,
    close: async () => {
      await gateway.stopIntake();
      await worker?.close();
      await gateway.close();
    },
  };
}

/** A sample's value in the text /metrics serves (`name{labels}`, labels in the order prom-client writes them); 0 when absent. */
export async function metricValue(metrics: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const wanted = `${name}{${Object.entries(labels).map(([key, value]) => `${key}="${value}"`).join(",")}}`;
  const line = (await metrics.registry.metrics()).split("\n").find((candidate) => candidate.startsWith(`${wanted} `));
  return line === undefined ? 0 : Number(line.slice(wanted.length + 1));
}
