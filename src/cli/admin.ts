/**
 * Operator CLI: `npm run admin -- sessions | show SESSION | export SESSION | reset SESSION |
 * delete-user PLATFORM:ID | budgets`. Reads the same configuration as the bot (REDIS_URL,
 * REDIS_PREFIX, the config file); what each command does: admin-commands.ts.
 */
import { pino } from "pino";
import { ConfigError, loadConfig, withSecretsFile } from "../../config/index.js";
import { ADMIN_USAGE, AdminUsageError, runAdmin } from "./admin-commands.js";
import { createLogger } from "../logger.js";
import { withConfiguredRedis } from "./redis.js";

async function main(argv: string[]): Promise<number> {
  const [command] = argv;
  if (!command || command === "help" || command === "--help") {
    process.stdout.write(`${ADMIN_USAGE}\n`);
    return command ? 0 : 1;
  }
  const config = loadConfig(withSecretsFile(process.env));
  return withConfiguredRedis(config, (redis) => runAdmin({ redis, config, now: Date.now(), write: (text) => process.stdout.write(text), logger: cliLogger() }, argv));
}

/** JSON lines on stderr, as the bot logs: an operator's changes are logged with who made them. */
const cliLogger = () => createLogger({ level: "info", destination: pino.destination({ fd: 2, sync: true }) });

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof AdminUsageError) process.stderr.write(`${error.message}\n${ADMIN_USAGE}\n`);
    else if (error instanceof ConfigError) process.stderr.write(`${error.message}\n`);
    else process.stderr.write(`admin failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
