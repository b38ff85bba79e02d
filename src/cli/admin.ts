/**
 * Operator CLI: `npm run admin -- sessions | show SESSION | export SESSION | reset SESSION |
 * delete-user PLATFORM:ID | budgets`. Reads the same configuration as the bot (REDIS_URL,
 * REDIS_PREFIX, the config file); what each command does: admin-commands.ts.
 */
import { ConfigError, loadConfig } from "../../config/index.js";
import { resolveRedis } from "../embedded-redis.js";
import { silentLogger } from "../logger.js";
import { createRedis } from "../queue/index.js";
import { ADMIN_USAGE, AdminUsageError, runAdmin } from "./admin-commands.js";

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  if (!command || command === "help" || command === "--help") {
    process.stdout.write(`${ADMIN_USAGE}\n`);
    return command ? 0 : 1;
  }
  const config = loadConfig(process.env);
  const redisHandle = await resolveRedis({ ...(config.REDIS_URL ? { redisUrl: config.REDIS_URL } : {}), dataDir: config.DATA_DIR, logger: silentLogger });
  const redis = createRedis(redisHandle.url, { maxRetriesPerRequest: 3 });
  try {
    return await runAdmin({ redis, config, now: Date.now(), write: (text) => process.stdout.write(text) }, argv);
  } finally {
    await redis.quit().catch(() => redis.disconnect());
    await redisHandle.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof AdminUsageError) process.stderr.write(`${error.message}\n${ADMIN_USAGE}\n`);
    else if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`admin failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
