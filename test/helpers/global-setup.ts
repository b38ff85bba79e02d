import type { TestProject } from "vitest/node";
import { startRedisServer, type RedisServerHandle } from "./redis-server.js";

let redis: RedisServerHandle | undefined;

export async function setup(project: TestProject): Promise<void> {
  redis = await startRedisServer();
  project.provide("redisUrl", redis.url);
}

export async function teardown(): Promise<void> {
  await redis?.dispose();
}
