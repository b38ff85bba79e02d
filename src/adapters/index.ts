import type { Config } from "../../config/index.js";
import type { Logger } from "../logger.js";
import type { ChannelAdapter } from "./channel-adapter.js";
import { ConsoleAdapter } from "./console/index.js";

export type { ChannelAdapter, InboundMessage, OutboundReply, ReplyTarget, TurnActivity, IngressPort, SubmitResult, Platform } from "./channel-adapter.js";

/** The adapters this gateway runs: each platform with a token, and the console when asked or when none has one. */
export function createAdapters(config: Config, logger: Logger, hooks: { onConsoleDrained: () => void }): ChannelAdapter[] {
  const adapters: ChannelAdapter[] = [];
  const anyPlatform = Boolean(config.TELEGRAM_BOT_TOKEN || config.DISCORD_BOT_TOKEN);
  if (config.CONSOLE === "on" || (config.CONSOLE === "auto" && !anyPlatform)) {
    const interactive = Boolean(process.stdin.isTTY);
    adapters.push(new ConsoleAdapter({
      input: process.stdin,
      output: process.stdout,
      userName: config.CONSOLE_USER,
      interactive,
      ...(!interactive && config.CONSOLE_EXIT_ON_EOF ? { onDrained: hooks.onConsoleDrained } : {}),
    }));
    logger.debug("console-adapter-enabled");
  }
  return adapters;
}
