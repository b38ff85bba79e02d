/**
 * Who owns the process's screen. In a terminal chat (stdin and stdout a TTY, console on) the
 * chat does: logs go to DATA_DIR/logs/longhaul.log, warnings and errors also show as one
 * dimmed line above the prompt, and stray console.* calls from libraries are routed into the
 * log instead of tearing the prompt. Otherwise logs are JSON lines on stderr, as always.
 */
import { relative, resolve } from "node:path";
import { format } from "node:util";
import { configSecrets, type Config } from "../config/index.js";
import { consoleMode, TerminalChat } from "./adapters/console/index.js";
import { COMMAND_NAMES } from "./agent/commands/parse.js";
import { createLogger, terminalLogDestination, type Logger } from "./logger.js";

export interface ProcessIo {
  logger: Logger;
  /** Present when the terminal chat owns the screen; hand it to createAdapters. */
  terminal?: TerminalChat;
}

export function createProcessIo(
  config: Config,
  streams: { stdin: NodeJS.ReadStream; stdout: NodeJS.WriteStream } = process,
  env: NodeJS.ProcessEnv = process.env,
): ProcessIo {
  const secrets = configSecrets(config);
  if (consoleMode(config, streams, env) !== "terminal") return { logger: createLogger({ level: config.LOG_LEVEL, secrets }) };

  const file = resolve(config.DATA_DIR, "logs", "longhaul.log");
  const terminal = new TerminalChat({
    input: streams.stdin,
    output: streams.stdout,
    userName: config.CONSOLE_USER,
    // /start is Telegram's greeting, not something to type here.
    commands: COMMAND_NAMES.filter((name) => name !== "start"),
    color: !env.NO_COLOR,
    banner: [
      `longhaul · ${config.LLM_MODEL} · Tab completes /commands (/help) · a paste is one message · Ctrl-D quits`,
      `logs: ${relative(process.cwd(), file).startsWith("..") ? file : relative(process.cwd(), file)}`,
    ],
  });
  const logger = createLogger({
    level: config.LOG_LEVEL,
    secrets,
    destination: terminalLogDestination({ file, echo: (summary, level) => terminal.echoLog(summary, level) }),
  });
  routeConsoleToLog(logger);
  return { logger, terminal };
}

/** Libraries that print (BullMQ's eviction notice, Node's warnings) would tear the prompt. */
function routeConsoleToLog(logger: Logger): void {
  const log = (level: "debug" | "info" | "warn" | "error") => (...args: unknown[]) => logger[level]({ source: "console" }, format(...args));
  console.debug = log("debug");
  console.log = log("info");
  console.info = log("info");
  console.warn = log("warn");
  console.error = log("error");
  process.removeAllListeners("warning");
  process.on("warning", (warning) => logger.warn({ err: warning }, "node-warning"));
}
