import type { Config } from "../../config/index.js";
import type { Logger } from "../logger.js";
import type { ChannelAdapter } from "./channel-adapter.js";
import { ConsoleAdapter } from "./console/index.js";
import { createDiscordAdapter } from "./discord/index.js";
import { createTelegramAdapter } from "./telegram/index.js";

export type { ChannelAdapter, InboundMessage, OutboundReply, ReplyTarget, TurnActivity, IngressPort, SubmitResult, Platform } from "./channel-adapter.js";

/** The adapters this gateway runs: each platform with a token, and the console when asked or when none has one. */
export function createAdapters(config: Config, logger: Logger, hooks: { onConsoleDrained: () => void }): ChannelAdapter[] {
  const adapters: ChannelAdapter[] = [];
  const telegram = createTelegramAdapter(config, logger.child({ platform: "telegram" }));
  if (telegram) adapters.push(telegram);
  const discord = createDiscordAdapter(config, logger.child({ platform: "discord" }));
  if (discord) adapters.push(discord);
  if (config.CONSOLE === "on" || (config.CONSOLE === "auto" && adapters.length === 0)) {
    const interactive = Boolean(process.stdin.isTTY);
    adapters.push(new ConsoleAdapter({
      input: process.stdin,
      output: process.stdout,
      userName: config.CONSOLE_USER,
      interactive,
      ...(!interactive && config.CONSOLE_EXIT_ON_EOF ? { onDrained: hooks.onConsoleDrained } : {}),
    }));
  }
  return adapters;
}
