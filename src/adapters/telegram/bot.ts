/**
 * grammY's clients for the adapter: the bot (bounded retries, getMe failures logged) and a
 * separate Api for previews.
 */
import { Api, Bot } from "grammy";
import { autoRetry } from "@grammyjs/auto-retry";
import type { Logger } from "../../logger.js";
import type { TelegramAdapterOptions } from "./options.js";
import { wireTransformer } from "./on-wire.js";
import { describeError } from "./send-reply.js";
import { sendBudgetTransformer, type SendBudgetHook } from "./send-budget.js";
import { markWentOut } from "./previews.js";

/** The send budget's hook without the priority, which each Api sets for its own calls. */
export type BudgetHook = Omit<SendBudgetHook, "defaultPriority">;

/** Methods that post a new message: their outcome after a 5xx is unknown. */
const SENDS = new Set(["sendMessage", "sendDocument", "sendVoice", "sendPhoto", "sendMediaGroup", "copyMessage", "forwardMessage"]);

const apiRootOf = (options: Pick<TelegramAdapterOptions, "apiRoot">): string => (options.apiRoot ?? "https://api.telegram.org").replace(/\/+$/, "");

/** The bot; `onGetMeFailed` hears of every failed getMe while grammY retries it at start. */
export function createBot(options: TelegramAdapterOptions, logger: Logger, onGetMeFailed: () => void, budget?: BudgetHook): Bot {
  const pollingTimeout = options.pollingTimeoutSeconds ?? 30;
  const bot = new Bot(options.token, {
    client: {
      apiRoot: apiRootOf(options),
      timeoutSeconds: Math.max(options.requestTimeoutSeconds ?? 60, pollingTimeout + 15),
    },
    ...(options.botInfo ? { botInfo: options.botInfo } : {}),
  });
  // 429 retry_after and 5xx are retried here (bounded); network errors are rethrown because
  // auto-retry's network loop ignores maxRetryAttempts (STACK §2.3) and would hold a reply
  // for up to an hour: the reply sender's job retries instead, resuming at the failed part.
  // A send's 5xx is not retried: Telegram may have sent the message before it failed
  // (outcomeUnknown in send-reply.ts), and a resend would show it twice.
  // The send budget sits inside auto-retry: every attempt asks it, and waits out a penalty
  // recorded by another gateway as well as its own. Innermost of all: which part is on the wire
  // (on-wire.ts), known only once every wait is over.
  bot.api.config.use(wireTransformer);
  if (budget) bot.api.config.use(sendBudgetTransformer({ ...budget, defaultPriority: "final" }));
  const retryAll = autoRetry({ maxRetryAttempts: 3, maxDelaySeconds: 30, rethrowHttpErrors: true });
  const retryRefusals = autoRetry({ maxRetryAttempts: 3, maxDelaySeconds: 30, rethrowHttpErrors: true, rethrowInternalServerErrors: true });
  // A typing call is not retried: the indicator's loop sends the next one in a few seconds, and
  // one the send budget refused (skipped for the replies' sake) must stay skipped.
  bot.api.config.use((previous, method, payload, signal) =>
    method === "sendChatAction" ? previous(method, payload, signal) : (SENDS.has(method) ? retryRefusals : retryAll)(previous, method, payload, signal));
  bot.api.config.use(async (previous, method, payload, signal) => {
    // grammY retries getMe at start on network errors: log each failure with our logger.
    if (method !== "getMe") return previous(method, payload, signal);
    try {
      return await previous(method, payload, signal);
    } catch (error) {
      if (!signal?.aborted) {
        onGetMeFailed();
        logger.warn({ err: describeError(error) }, "getMe failed; retrying");
      }
      throw error;
    }
  });
  return bot;
}

/**
 * Previews get an Api of their own, without auto-retry: a 429 backs off the previews only. Its
 * innermost transformer marks the calls that left (previews.ts, for a create past its deadline).
 */
export function previewApi(options: TelegramAdapterOptions, budget?: BudgetHook): Api {
  const api = new Api(options.token, { apiRoot: apiRootOf(options), timeoutSeconds: options.requestTimeoutSeconds ?? 60 });
  api.config.use(markWentOut);
  if (budget) api.config.use(sendBudgetTransformer({ ...budget, defaultPriority: "preview" }));
  return api;
}
