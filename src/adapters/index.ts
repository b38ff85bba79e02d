import { join } from "node:path";
import type { Config } from "../../config/index.js";
import type { Logger } from "../logger.js";
import type { ChannelAdapter } from "./channel-adapter.js";
import { ConsoleAdapter, consoleMode, PlainConsoleIo, type TerminalChat } from "./console/index.js";
import { createDiscordAdapter } from "./discord/index.js";
import { createTelegramAdapter } from "./telegram/index.js";

export type { BotIdentity, ChannelAdapter, InboundMessage, OutboundReply, ReplyTarget, TurnActivity, IngressPort, SubmitResult, Platform } from "./channel-adapter.js";
export { discordIdentity } from "./discord/identity.js";
export { telegramIdentity } from "./telegram/identity.js";
export { createDiscordAdapter } from "./discord/index.js";
export { createTelegramAdapter } from "./telegram/index.js";
export { consoleMode, type ConsoleMode } from "./console/index.js";

export interface AdapterHooks {
  /** Piped input ended and every line has been answered. */
  onConsoleDrained: () => void;
  /** The person left the terminal chat (Ctrl-D, Ctrl-C on an empty line). */
  onConsoleQuit?: () => void;
  /** The terminal chat, when stdin and stdout are a terminal (process-io.ts made it for the logger too). */
  terminal?: TerminalChat;
  /** A platform's intake failed for good (a Telegram 409 that never cleared): the process should exit non-zero. */
  onFatal?: (platform: string, error: Error) => void;
}

/** The adapters this gateway runs: each platform with a token, and the console when asked or when none has one. */
export function createAdapters(config: Config, logger: Logger, hooks: AdapterHooks): ChannelAdapter[] {
  const adapters: ChannelAdapter[] = [];
  const telegram = createTelegramAdapter(config, logger.child({ platform: "telegram" }), {
    ...(hooks.onFatal ? { onFatal: (error: Error) => hooks.onFatal?.("telegram", error) } : {}),
  });
  if (telegram) adapters.push(telegram);
  const discord = createDiscordAdapter(config, logger.child({ platform: "discord" }));
  if (discord) adapters.push(discord);
  if (hooks.terminal) {
    adapters.push(new ConsoleAdapter({ io: hooks.terminal, userName: config.CONSOLE_USER, exportDir: join(config.DATA_DIR, "exports"), ...(hooks.onConsoleQuit ? { onQuit: hooks.onConsoleQuit } : {}) }));
  } else if (consoleMode(config, process, process.env) !== "off") {
    const interactive = Boolean(process.stdin.isTTY);
    adapters.push(new ConsoleAdapter({
      io: new PlainConsoleIo({ input: process.stdin, output: process.stdout, prompt: `${config.CONSOLE_USER} › `, interactive }),
      userName: config.CONSOLE_USER,
      exportDir: join(config.DATA_DIR, "exports"),
      ...(!interactive && config.CONSOLE_EXIT_ON_EOF ? { onDrained: hooks.onConsoleDrained } : {}),
    }));
  }
  return adapters;
}
