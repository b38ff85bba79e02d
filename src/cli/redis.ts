/** The Redis the operator CLIs work on: the bot's own (REDIS_URL, else the embedded one under DATA_DIR). */
import type { Redis } from "ioredis";
import type { Config } from "../../config/index.js";
import { redisLookupOf, resolveRedis } from "../embedded-redis.js";
import { silentLogger } from "../logger.js";
import { createRedis } from "../queue/index.js";

/** Runs `run` on a connection to the configured Redis, closed (and an embedded server stopped) afterwards. */
export async function withConfiguredRedis<T>(config: Config, run: (redis: Redis) => Promise<T>): Promise<T> {
  const handle = await resolveRedis({ ...redisLookupOf(config), logger: silentLogger });
  const redis = createRedis(handle.address, { maxRetriesPerRequest: 3 });
  try {
    return await run(redis);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
    await handle.stop();
  }
}
