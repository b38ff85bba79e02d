/** The Telegram adapter's public surface. Everything else in this folder is private. */
import type { Config } from "../../../config/index.js";
import type { Logger } from "../../logger.js";
import { TelegramAdapter, type TelegramAdapterOptions } from "./telegram-adapter.js";

export { SUBMIT_FAILED_NOTICE, TelegramAdapter, TELEGRAM_WEBHOOK_PATH, type TelegramAdapterOptions } from "./telegram-adapter.js";
export { TELEGRAM_COMMANDS } from "./to-inbound-message.js";

/** The adapter the configuration asks for, or undefined when TELEGRAM_BOT_TOKEN is unset. */
export function createTelegramAdapter(
  config: Pick<Config, "TELEGRAM_BOT_TOKEN" | "TELEGRAM_API_ROOT" | "TELEGRAM_WEBHOOK_URL" | "TELEGRAM_WEBHOOK_SECRET" | "MAX_MESSAGE_CHARS" | "LINK_PREVIEWS" | "TELEGRAM_FORCE_POLLING" | "TELEGRAM_CONFLICT_EXIT_S" | "ACK_REACTIONS" | "TELEGRAM_SENDS_PER_SECOND" | "TELEGRAM_GROUP_SENDS_PER_MINUTE">,
  logger: Logger,
  overrides: Partial<TelegramAdapterOptions> = {},
): TelegramAdapter | undefined {
  if (config.TELEGRAM_BOT_TOKEN === undefined) return undefined;
  return new TelegramAdapter({
    token: config.TELEGRAM_BOT_TOKEN,
    apiRoot: config.TELEGRAM_API_ROOT,
    ...(config.TELEGRAM_WEBHOOK_URL === undefined ? {} : { webhookUrl: config.TELEGRAM_WEBHOOK_URL }),
    ...(config.TELEGRAM_WEBHOOK_SECRET === undefined ? {} : { webhookSecret: config.TELEGRAM_WEBHOOK_SECRET }),
    maxMessageChars: config.MAX_MESSAGE_CHARS,
    linkPreviews: config.LINK_PREVIEWS,
    ackReactions: config.ACK_REACTIONS,
    forcePolling: config.TELEGRAM_FORCE_POLLING,
    conflictGiveUpMs: config.TELEGRAM_CONFLICT_EXIT_S * 1000,
    sendLimits: { perSecond: config.TELEGRAM_SENDS_PER_SECOND, groupPerMinute: config.TELEGRAM_GROUP_SENDS_PER_MINUTE },
    logger,
    ...overrides,
  });
}
