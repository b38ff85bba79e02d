import type { Config } from "../../config/index.js";
import type { Logger } from "../logger.js";
import type { ChannelAdapter } from "./channel-adapter.js";
import { ConsoleAdapter } from "./console/index.js";
import { DiscordAdapter } from "./discord/index.js";
import { createTelegramAdapter } from "./telegram/index.js";

export type { ChannelAdapter, InboundMessage, OutboundReply, ReplyTarget, TurnActivity, IngressPort, SubmitResult, Platform } from "./channel-adapter.js";

/** The adapters this gateway runs: each platform with a token, and the console when asked or when none has one. */
export function createAdapters(config: Config, logger: Logger, hooks: { onConsoleDrained: () => void; onFatal?: (platform: string, error: Error) => void }): ChannelAdapter[] {
  const adapters: ChannelAdapter[] = [];
  const telegram = createTelegramAdapter(config, logger.child({ platform: "telegram" }), {
    ...(hooks.onFatal ? { onFatal: (error: Error) => hooks.onFatal?.("telegram", error) } : {}),
  });
  if (telegram) adapters.push(telegram);
  if (config.DISCORD_BOT_TOKEN) {
    adapters.push(new DiscordAdapter({
      token: config.DISCORD_BOT_TOKEN,
      apiRoot: config.DISCORD_API_ROOT,
      alwaysOnChannels: config.DISCORD_ALWAYS_ON_CHANNELS,
      maxMessageChars: config.MAX_MESSAGE_CHARS,
      logger: logger.child({ platform: "discord" }),
    }));
  }
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
