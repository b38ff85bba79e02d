/**
 * Operator CLI for access: `npm run pairing -- approve CODE`, `deny CODE`, `list`, `revoke <platform> <userId>`.
 * Approve and deny are src/operator's, the same functions the web console calls (logged with the operator).
 * Reads the same configuration as the bot (REDIS_URL, REDIS_PREFIX, allowlists).
 */
import { pino } from "pino";
import { ConfigError, loadConfig, withSecretsFile } from "../../config/index.js";
import { createLogger } from "../logger.js";
import { approvePairing, cliOperator, denyPairing } from "../operator/index.js";
import { AccessControl, accessListsFrom } from "../gateway/access.js";
import { createFiringQueue } from "../queue/index.js";
import { withConfiguredRedis } from "./redis.js";
import { scheduleSettingsFrom, ScheduleService, ScheduleStore } from "../schedule/index.js";
import type { Platform } from "../core/channel.js";

const USAGE = `usage:
  npm run pairing -- approve CODE          let the user who got CODE talk to the bot
  npm run pairing -- deny CODE             refuse it (the user hears nothing more for the code's hour)
  npm run pairing -- list                  pending pairing requests and approved users
  npm run pairing -- revoke PLATFORM ID    remove an approved user (telegram | discord) and
                                           what they scheduled in private chats with the bot`;

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  if (!command || command === "help" || command === "--help") {
    process.stdout.write(`${USAGE}\n`);
    return command ? 0 : 1;
  }
  const config = loadConfig(withSecretsFile(process.env));
  return withConfiguredRedis(config, async (redis) => {
    const access = new AccessControl(redis, config.REDIS_PREFIX, accessListsFrom(config));
    // JSON lines on stderr, as the bot logs: approvals and denials are logged with who made them.
    const logger = createLogger({ level: "info", destination: pino.destination({ fd: 2, sync: true }) });
    switch (command) {
      case "approve": {
        const code = args[0];
        if (!code) throw new UsageError("approve needs the CODE the user received");
        const request = await approvePairing({ access, logger }, cliOperator(), code);
        if (!request) {
          process.stderr.write(`No pending pairing request with code ${code} (codes expire after an hour).\n`);
          return 1;
        }
        process.stdout.write(`Approved ${request.userName} (${request.platform} user ${request.userId}). They can talk to the bot now.\n`);
        return 0;
      }
      case "deny": {
        const code = args[0];
        if (!code) throw new UsageError("deny needs the CODE the user received");
        const request = await denyPairing({ access, logger }, cliOperator(), code);
        if (!request) {
          process.stderr.write(`No pending pairing request with code ${code} (codes expire after an hour).\n`);
          return 1;
        }
        process.stdout.write(`Denied ${request.userName} (${request.platform} user ${request.userId}).\n`);
        return 0;
      }
      case "list": {
        const pending = await access.pendingRequests();
        process.stdout.write(pending.length === 0 ? "No pending pairing requests.\n" : "Pending:\n");
        for (const request of pending) {
          process.stdout.write(`  ${request.code}  ${request.platform} user ${request.userId} (${request.userName}), ${new Date(request.requestedAt).toISOString()}\n`);
        }
        for (const platform of ["telegram", "discord"] as const) {
          const approved = await access.approvedUsers(platform);
          if (approved.length > 0) process.stdout.write(`Approved on ${platform}: ${approved.join(", ")}\n`);
        }
        return 0;
      }
      case "revoke": {
        const [platform, userId] = args;
        if ((platform !== "telegram" && platform !== "discord") || !userId) throw new UsageError("revoke needs PLATFORM (telegram | discord) and a user ID");
        const removed = await access.revoke(platform as Platform, userId);
        process.stdout.write(removed ? `Revoked ${platform} user ${userId}.\n` : `${platform} user ${userId} was not approved.\n`);
        // Their private chat is no longer served: its reminders and tasks go too.
        const firingQueue = createFiringQueue(redis, config.REDIS_PREFIX);
        try {
          const schedule = new ScheduleService({ store: new ScheduleStore(redis, config.REDIS_PREFIX), alarms: firingQueue, settings: scheduleSettingsFrom(config) });
          const cancelled = await schedule.removeUserPrivateItems(platform as Platform, userId);
          if (cancelled > 0) process.stdout.write(`Cancelled ${cancelled} reminder(s) and scheduled task(s) of their private chat.\n`);
        } finally {
          await firingQueue.close();
        }
        return 0;
      }
      default:
        throw new UsageError(`unknown command: ${command}`);
    }
  });
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof UsageError) process.stderr.write(`${error.message}\n${USAGE}\n`);
    else if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`pairing failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
