/**
 * Operator CLI: `npm run admin -- delete-user <platform:id>` removes a user's sessions,
 * archives and memory (docs/memory.md, "Data rights"); `export-user <platform:id>` prints what
 * is kept about them as JSON. Reads the same configuration as the bot (REDIS_URL, REDIS_PREFIX).
 */
import { ConfigError, loadConfig } from "../../config/index.js";
import { resolveRedis } from "../embedded-redis.js";
import { silentLogger } from "../logger.js";
import { deleteUserData, exportUserData, parseUserRef } from "../memory/index.js";
import { createFiringQueue, createRedis } from "../queue/index.js";
import { scheduleSettingsFrom, ScheduleService, ScheduleStore } from "../schedule/index.js";

const USAGE = `usage:
  npm run admin -- delete-user PLATFORM:ID   delete a user's private conversations (transcripts,
                                             archives), memory, reminders and pairing data
  npm run admin -- export-user PLATFORM:ID   print a user's memory and private conversations as JSON`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  const [command, target] = argv;
  if (!command || command === "help" || command === "--help") {
    process.stdout.write(`${USAGE}\n`);
    return command ? 0 : 1;
  }
  if (command !== "delete-user" && command !== "export-user") throw new UsageError(`unknown command: ${command}`);
  const user = target ? parseUserRef(target) : undefined;
  if (!user) throw new UsageError(`${command} needs a user as PLATFORM:ID (telegram:123, discord:456)`);
  const config = loadConfig(process.env);
  const redisHandle = await resolveRedis({ ...(config.REDIS_URL ? { redisUrl: config.REDIS_URL } : {}), dataDir: config.DATA_DIR, logger: silentLogger });
  const redis = createRedis(redisHandle.url, { maxRetriesPerRequest: 3 });
  try {
    if (command === "export-user") {
      process.stdout.write(`${JSON.stringify(await exportUserData(redis, config.REDIS_PREFIX, user), null, 2)}\n`);
      return 0;
    }
    const firingQueue = createFiringQueue(redis, config.REDIS_PREFIX);
    try {
      const schedule = new ScheduleService({ store: new ScheduleStore(redis, config.REDIS_PREFIX), alarms: firingQueue, settings: scheduleSettingsFrom(config) });
      const report = await deleteUserData(redis, config.REDIS_PREFIX, user, schedule);
      process.stdout.write(`Deleted ${target}: ${report.sessions.length} private conversation(s) (${report.sessions.join(", ") || "none"}), ${report.keysDeleted} key(s), ${report.scheduledItems} reminder(s) or task(s).\n`);
    } finally {
      await firingQueue.close();
    }
    return 0;
  } finally {
    redis.disconnect();
    await redisHandle.stop();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`${error.message}\n${USAGE}\n`);
    else if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`admin failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
