import type { Config } from "../../../config/index.js";
import type { Logger } from "../../logger.js";
import { DiscordAdapter, type DiscordAdapterOptions } from "./discord-adapter.js";

type DiscordConfig = Pick<Config, "DISCORD_BOT_TOKEN" | "DISCORD_API_ROOT" | "DISCORD_ALWAYS_ON_CHANNELS" | "ALLOWED_DISCORD_CHANNELS" | "DISCORD_PING_ON_REPLY" | "MAX_MESSAGE_CHARS" | "ACK_REACTIONS" | "DISCORD_REQUESTS_PER_SECOND">;

/** The adapter the configuration asks for, or undefined when DISCORD_BOT_TOKEN is unset. */
export function createDiscordAdapter(config: DiscordConfig, logger: Logger, overrides: Partial<DiscordAdapterOptions> = {}): DiscordAdapter | undefined {
  if (config.DISCORD_BOT_TOKEN === undefined) return undefined;
  return new DiscordAdapter({
    token: config.DISCORD_BOT_TOKEN,
    apiRoot: config.DISCORD_API_ROOT,
    alwaysOnChannels: config.DISCORD_ALWAYS_ON_CHANNELS,
    // Allowed channels are the ones whose history is worth catching up after a reconnect.
    backfillChannels: config.ALLOWED_DISCORD_CHANNELS,
    maxMessageChars: config.MAX_MESSAGE_CHARS,
    pingOnReply: config.DISCORD_PING_ON_REPLY,
    ackReactions: config.ACK_REACTIONS,
    requestsPerSecond: config.DISCORD_REQUESTS_PER_SECOND,
    logger,
    ...overrides,
  });
}
