/**
 * `npm run setup`: the first run in the terminal (src/setup/run-setup.ts). With `--yes` nothing
 * is asked: flags and the current files answer, and a question without an answer is an error.
 */
import { parseArgs } from "node:util";
import { ConfigError } from "../../config/index.js";
import { defaultsAsker, MissingAnswerError, PRESETS, runSetup, StepFailedError, terminalAsker } from "../setup/index.js";

const USAGE = `usage: npm run setup [-- options]

Asks for a model provider, its key and model (tested with one completion), optional Telegram and
Discord bot tokens (checked), pairs your own account, and writes the settings to
config/longhaul.yaml and the secrets to .env (mode 600). Running it again edits both files.

  --provider NAME          ${PRESETS.map((preset) => preset.id).join(" | ")}, or a dialect (azure, mistral, groq, xai, lmstudio)
  --base-url URL           the endpoint's OpenAI-compatible root (usually ends in /v1)
  --model NAME             the model
  --context-window N       tokens (local servers: the window they run with)
  --api-key-env VAR        read the API key from the environment variable VAR
  --telegram-token-env VAR read the Telegram bot token from VAR (--no-telegram: skip Telegram)
  --discord-token-env VAR  read the Discord bot token from VAR (--no-discord: skip Discord)
  --no-pair                do not pair an account
  --yes                    ask nothing: flags and the current files answer (for scripts)
  --config-file PATH       default: LONGHAUL_CONFIG_FILE, else config/longhaul.yaml
  --secrets-file PATH      the .env file; default: LONGHAUL_ENV_FILE, else .env
                           (not --env-file: Node 20 takes that flag for itself wherever it stands)
  --timeout-ms N           per check (default 30000)

Exit codes: 0 written; 1 quit; 2 a wrong flag or file; 4 the model check failed (--yes);
5 a bot token was refused (--yes).`;

async function main(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      provider: { type: "string" }, "base-url": { type: "string" }, model: { type: "string" }, "context-window": { type: "string" },
      "api-key-env": { type: "string" }, "telegram-token-env": { type: "string" }, "discord-token-env": { type: "string" },
      "no-telegram": { type: "boolean" }, "no-discord": { type: "boolean" }, "no-pair": { type: "boolean" },
      yes: { type: "boolean", short: "y" }, "config-file": { type: "string" }, "secrets-file": { type: "string" },
      "timeout-ms": { type: "string" }, help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const interactive = !values.yes && Boolean(process.stdin.isTTY) && Boolean(process.stdout.isTTY);
  if (!values.yes && !interactive) {
    process.stderr.write("setup: not a terminal; pass --yes (with --provider, --model, --api-key-env …) to run without questions\n");
    return 2;
  }
  const timeoutMs = Number(values["timeout-ms"] ?? 30_000);
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new UsageError("--timeout-ms: a positive number of milliseconds");
  await runSetup(interactive ? terminalAsker() : defaultsAsker(), {
    provider: values.provider, baseUrl: values["base-url"], model: values.model, contextWindow: values["context-window"],
    apiKeyEnv: values["api-key-env"], timeoutMs,
    configFile: values["config-file"] ?? process.env.LONGHAUL_CONFIG_FILE ?? "config/longhaul.yaml",
    envFile: values["secrets-file"] ?? process.env.LONGHAUL_ENV_FILE ?? ".env",
    telegram: values["no-telegram"] ? false : undefined, telegramTokenEnv: values["telegram-token-env"],
    discord: values["no-discord"] ? false : undefined, discordTokenEnv: values["discord-token-env"],
    pair: !values["no-pair"],
  }, process.env);
  return 0;
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof StepFailedError) {
      process.stderr.write(`setup: ${error.message}\n`);
      process.exit(error.exitCode);
    }
    // Ctrl-C at a question: inquirer's ExitPromptError.
    if (error instanceof Error && error.name === "ExitPromptError") process.exit(1);
    if (error instanceof MissingAnswerError || error instanceof UsageError || error instanceof ConfigError || (error instanceof Error && "code" in error && String(error.code).startsWith("ERR_PARSE_ARGS"))) {
      process.stderr.write(`setup: ${error.message}\n`);
      if (!(error instanceof ConfigError)) process.stderr.write(`${USAGE}\n`);
      process.exit(2);
    }
    process.stderr.write(`setup failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
