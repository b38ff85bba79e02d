/**
 * `npm run doctor`: checks what longhaul needs before it can work — the settings, Redis
 * (reachable, whose, durable), the model endpoints (key, model, one token) and the platform
 * tokens — with the same configuration as the bot. One line per check; each problem carries
 * its fix. Exit codes: src/doctor/check.ts (EXIT_CODES), README "Doctor".
 */
import { ConfigError, loadConfig, type Config, withSecretsFile } from "../../config/index.js";
import { EXIT_CODES, exitCodeOf, fail, formatResult, runDoctor } from "../doctor/index.js";
import { mcpDoctorCheck } from "../tools/mcp/index.js";

const USAGE = `usage: npm run doctor [-- --timeout-ms N]
Checks the settings, Redis, the model endpoints, the Telegram/Discord tokens and the MCP servers.
Exit codes: 0 all passed, 1 warnings only, 2 configuration, 3 Redis, 4 LLM, 5 Telegram/Discord, 6 MCP servers
(70: the doctor itself crashed).`;

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${USAGE}\n`);
    return EXIT_CODES.ok;
  }
  const timeoutAt = argv.indexOf("--timeout-ms");
  const timeoutMs = timeoutAt === -1 ? undefined : Number(argv[timeoutAt + 1]);
  if (timeoutMs !== undefined && !(timeoutMs > 0)) {
    process.stderr.write(`--timeout-ms needs a positive number of milliseconds\n${USAGE}\n`);
    return EXIT_CODES.config;
  }
  const color = Boolean(process.stdout.isTTY) && !process.env.NO_COLOR;
  let config: Config;
  try {
    config = loadConfig(withSecretsFile(process.env));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    // One line per wrong setting: the loader lists them indented under a heading.
    const problems = error.message.split("\n").filter((line) => line.startsWith("  ")).map((line) => line.trim());
    for (const problem of problems.length > 0 ? problems : [error.message]) {
      process.stdout.write(`${formatResult(fail("config", problem, "correct it (config/example.env lists every setting with its allowed values)"), { color })}\n`);
    }
    return EXIT_CODES.config;
  }
  // MCP servers (mcp.servers in the config file): started or reached as a worker would, tools listed.
  // The gateway role runs no tools.
  const mcp = config.LONGHAUL_ROLE === "gateway" ? undefined : mcpDoctorCheck(config.mcp, { clientVersion: "0.1.0" });
  const results = await runDoctor(config, { ...(timeoutMs === undefined ? {} : { timeoutMs }), ...(mcp ? { extraChecks: [mcp] } : {}) });
  for (const result of results) process.stdout.write(`${formatResult(result, { color })}\n`);
  const code = exitCodeOf(results);
  const failed = results.filter((result) => result.status === "fail").length;
  const warned = results.filter((result) => result.status === "warn").length;
  process.stdout.write(`\n${failed === 0 && warned === 0 ? "All checks passed." : `${failed} failed, ${warned} ${warned === 1 ? "warning" : "warnings"}.`} Exit code ${code}.\n`);
  return code;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`doctor failed: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
    process.exit(70);
  },
);
