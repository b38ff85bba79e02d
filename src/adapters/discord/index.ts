export { DiscordAdapter, type DiscordAdapterOptions } from "./discord-adapter.js";
export { createDiscordAdapter } from "./create-adapter.js";
export { splitMessage, DISCORD_MESSAGE_LIMIT, DISCORD_SPLIT_TARGET, type SplitOptions } from "./split.js";
export type { DiscordInboundMessage } from "./to-inbound-message.js";
