import type { Config } from "../../../config/index.js";

/**
 * - `off`: no console (a worker, CONSOLE=off, or CONSOLE=auto with a platform token);
 * - `terminal`: stdin and stdout are a terminal: the chat owns the screen, logs go to a file;
 * - `plain`: piped or redirected: one line per message, replies on stdout, JSON logs on stderr.
 */
export type ConsoleMode = "off" | "plain" | "terminal";

export function consoleMode(
  config: Config,
  streams: { stdin: { isTTY?: boolean }; stdout: { isTTY?: boolean } },
  env: NodeJS.ProcessEnv,
): ConsoleMode {
  if (config.LONGHAUL_ROLE === "worker") return "off";
  const platforms = Boolean(config.TELEGRAM_BOT_TOKEN) || Boolean(config.DISCORD_BOT_TOKEN);
  if (config.CONSOLE === "off" || (config.CONSOLE === "auto" && platforms)) return "off";
  return streams.stdin.isTTY && streams.stdout.isTTY && env.TERM !== "dumb" ? "terminal" : "plain";
}
