/**
 * How updates arrive: a webhook (set, served at TELEGRAM_WEBHOOK_PATH, its health checked) or
 * long polling (which refuses to take over a webhook set by another deployment unless forced).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { GrammyError, webhookCallback, type Bot } from "grammy";
import type { UserFromGetMe } from "grammy/types";
import type { Logger } from "../../logger.js";
import type { TelegramAdapterOptions } from "./options.js";
import { Poller } from "./polling.js";
import { describeError, toApiSignal } from "./send-reply.js";
import { hostOf, serveWebhook, WebhookHealth } from "./webhook.js";

export const TELEGRAM_WEBHOOK_PATH = "/telegram/webhook";

/** Messages and button presses; edits are ignored on purpose (docs/telegram.md), so not even fetched. */
const ALLOWED_UPDATES = ["message", "callback_query", "my_chat_member"] as const;

export type HttpHandler = (request: IncomingMessage, response: ServerResponse) => void;

export interface Connection {
  me: UserFromGetMe;
  bot: Bot;
  options: TelegramAdapterOptions;
  logger: Logger;
  signal: AbortSignal;
}

/** The webhook's route: answers Telegram's posts (only while `running()`; else Telegram re-delivers). */
export function webhookRoutes(bot: Bot, options: TelegramAdapterOptions, running: () => boolean, logger: Logger): Map<string, HttpHandler> {
  const callback = webhookCallback(bot, "http", { secretToken: options.webhookSecret ?? "" });
  return new Map([[TELEGRAM_WEBHOOK_PATH, (request, response) => serveWebhook(callback, request, response, running(), logger)]]);
}

/** Sets the webhook (its route must already be served); → its health check, started. */
export async function connectWebhook({ me, bot, options, logger, signal }: Connection, url: string): Promise<WebhookHealth> {
  await bot.api.setWebhook(url, {
    secret_token: options.webhookSecret ?? "",
    allowed_updates: [...ALLOWED_UPDATES],
    drop_pending_updates: false,
  });
  const health = new WebhookHealth({ api: bot.api, url, intervalMs: options.webhookCheckIntervalMs ?? 60_000, logger, signal });
  health.start();
  logger.info({ username: me.username, path: TELEGRAM_WEBHOOK_PATH }, "telegram webhook set");
  return health;
}

/** Starts long polling (updates go to the bot's handlers); → the poller. */
export async function connectPolling({ me, bot, options, logger, signal }: Connection): Promise<Poller> {
  await refusePollingOverWebhook(bot, options, logger, signal);
  const poller = new Poller({
    api: bot.api,
    timeoutSeconds: options.pollingTimeoutSeconds ?? 30,
    allowedUpdates: ALLOWED_UPDATES,
    handle: (update) => bot.handleUpdate(update),
    conflictGiveUpMs: options.conflictGiveUpMs ?? 300_000,
    onFatal: (error) => options.onFatal?.(error),
    logger,
  });
  poller.start();
  logger.info({ username: me.username }, "telegram long polling started");
  return poller;
}

/**
 * A webhook set for this token means another deployment serves it in webhook mode: polling
 * would need deleteWebhook, which silently disconnects that deployment. So we refuse, unless
 * the operator says this gateway takes over (TELEGRAM_FORCE_POLLING).
 */
async function refusePollingOverWebhook(bot: Bot, options: TelegramAdapterOptions, logger: Logger, signal: AbortSignal): Promise<void> {
  let info;
  try {
    info = await bot.api.getWebhookInfo(toApiSignal(signal));
  } catch (error) {
    // A Bot API server without the method (a third-party emulator) has no webhooks to take over.
    if (!methodMissing(error)) throw error;
    logger.warn({ err: describeError(error) }, "this Bot API server has no getWebhookInfo (not Telegram's?): polling without checking for a webhook set elsewhere");
    return;
  }
  const url = info.url ?? "";
  if (url === "") return;
  if (!options.forcePolling) {
    throw new Error(
      `a webhook is set for this bot (host ${hostOf(url)}): another deployment may serve it, so long polling will not delete it. ` +
        "Set TELEGRAM_WEBHOOK_URL to serve the webhook here, or TELEGRAM_FORCE_POLLING=1 to take over with long polling.",
    );
  }
  logger.warn({ webhookHost: hostOf(url) }, "TELEGRAM_FORCE_POLLING: deleting the webhook set for this bot and polling instead");
  await bot.api.deleteWebhook({ drop_pending_updates: false }, toApiSignal(signal));
}

/**
 * The server does not have this method: Telegram's 404 "Not Found", or an answer that is not
 * the Bot API's at all (no error code; telegram-test-api answers 500 `{ message: "API method …
 * is not supported" }`).
 */
function methodMissing(error: unknown): boolean {
  if (!(error instanceof GrammyError)) return false;
  if (typeof error.error_code !== "number") return true;
  return error.error_code === 404 || /not (supported|found|implemented)|unknown method/i.test(error.description ?? "");
}
