import type { Config } from "../../config/index.js";
import { AccessControl, accessListsFrom } from "../gateway/access.js";
import type { RouteHandler } from "../gateway/http-server.js";
import type { Logger } from "../logger.js";
import { CONNECTION_NAMES, createProducers, createRedis, type RedisAddress } from "../queue/index.js";
import { createWebConsole } from "./console.js";

/** The console with its own Redis connection and queue handles (main.ts starts it when CONSOLE_WEB_TOKEN is set). */
export function startWebConsole(options: { config: Config; token: string; redisAddress: RedisAddress; logger: Logger; health(): Promise<Record<string, boolean>> }): { handler: RouteHandler; close(): Promise<void> } {
  const redis = createRedis(options.redisAddress, { connectionName: CONNECTION_NAMES.console });
  redis.on("error", (error) => options.logger.warn({ err: error, component: "web-console" }, "redis-error"));
  const producers = createProducers(redis, options.config.REDIS_PREFIX);
  const access = new AccessControl(redis, options.config.REDIS_PREFIX, accessListsFrom(options.config));
  const handler = createWebConsole({ config: options.config, token: options.token, redis, producers, access, health: options.health, logger: options.logger });
  return {
    handler,
    async close() {
      await producers.close();
      await redis.quit().catch(() => redis.disconnect());
    },
  };
}
