import type { TestProject } from "vitest/node";
import { startRedisServer, type RedisServerHandle } from "./redis-server.js";
import { buildForChildProcesses } from "./test-build.js";

let redis: RedisServerHandle | undefined;
let build: ReturnType<typeof buildForChildProcesses> | undefined;

export async function setup(project: TestProject): Promise<void> {
  build = buildForChildProcesses();
  redis = await startRedisServer();
  project.provide("redisUrl", redis.url);
}

export async function teardown(): Promise<void> {
  await redis?.dispose();
  build?.remove();
}
