/**
 * Telegram's policy for the bot's send budget (src/core/send-budget.ts), as a grammY API
 * transformer, so every call site is covered without knowing of it: each call that puts
 * something in a chat (send*, edit*, copy*, forward*) first takes from the bot's global bucket,
 * the chat's, and a group's; a 429 Telegram answers is recorded as that chat's penalty.
 *
 * Priority: sendChatAction is typing; the previews' Api says preview; a notice says so around
 * its calls (withSendPriority); the rest is a reply's part (final). A refused preview or typing
 * call, and a final or notice that would wait longer than the budget allows, is answered here
 * as Telegram would answer it (429 with `retry_after`, flagged as the budget's): the preview
 * renderer backs off that chat, the delivery queue brings the reply back after the wait.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { Transformer } from "grammy";
import { PREVIEW_HEADROOM, type SendBucket, type SendBudget, type SendPriority, type SendRequest } from "../../core/send-budget.js";
import { SecondWindows } from "../second-windows.js";
import { currentSendPriority } from "../send-priority.js";

export interface TelegramSendLimits {
  /** At most this many counted calls in any second, across chats (TELEGRAM_SENDS_PER_SECOND). @defaultValue 28 */
  perSecond: number;
  /** At most this many into one group in any minute (TELEGRAM_GROUP_SENDS_PER_MINUTE). @defaultValue 18 */
  groupPerMinute: number;
}

export const DEFAULT_TELEGRAM_SEND_LIMITS: TelegramSendLimits = { perSecond: 28, groupPerMinute: 18 };

/** Calls that put something in a chat: Telegram counts them against the chat's and the bot's flood limits. */
const COUNTED = /^(send|edit|copy|forward)/;

/** A notice waits at most this long for a token here; longer, it is answered as a 429. */
const NOTICE_MAX_WAIT_MS = 10_000;

export const BUDGET_REFUSAL = "(longhaul send budget)";

/**
 * The buckets of one call. A bucket of capacity c refilled at r never lets more than c + r·T
 * through in a window of T, so each is sized below the platform's limit for its window: the
 * bot's `perSecond` in any second, a group's `groupPerMinute` in any minute. A private chat gets
 * 2 at once and 1 a second, a token under Telegram's burst of about 3, so that a request delayed
 * on the way cannot arrive too close behind the next.
 */
export function telegramBuckets(chatId: string, method: string, limits: TelegramSendLimits): SendBucket[] {
  // Two at once, the rest refilled (26 a second for the default 28): at 25 answers a second, 3
  // at once left 25 refilled, the finals' own rate, and they queued (issue 32). One at once (27)
  // left too little room for requests bunched on the way (84437ac, reverted).
  const burst = Math.min(2, Math.max(1, Math.round(limits.perSecond / 10)));
  const refill = Math.max(0.1, limits.perSecond - burst);
  // Previews and typing keep the bot under PREVIEW_HEADROOM of its rate: the rest is the finals'.
  const global: SendBucket = { name: "global", capacity: burst, perSecond: refill, headroomPerSecond: PREVIEW_HEADROOM * refill };
  // The typing indicator is not a message: it costs the bot a request, not the chat a message.
  if (method === "sendChatAction") return [global];
  const chat: SendBucket = { name: `chat:${chatId}`, capacity: 2, perSecond: 1 };
  // Group and channel ids are negative (or @usernames); private chats are users' positive ids.
  if (/^\d+$/.test(chatId)) return [global, chat];
  return [global, chat, { name: `group:${chatId}`, capacity: 3, perSecond: Math.max(0.01, (limits.groupPerMinute - 3) / 60) }];
}

export interface SendBudgetHook {
  /** The budget, once the gateway gave it (undefined: calls go unbudgeted). */
  budget(): SendBudget | undefined;
  /** The bot's id (the token's first part; never the token). */
  bot: string;
  limits: TelegramSendLimits;
  /** The priority of this Api's calls when none was set around them. */
  defaultPriority: SendPriority;
  /** A call the budget refused (skipped or handed back), by priority. */
  onRefused?(priority: SendPriority): void;
  /** @defaultValue Date.now */
  now?: () => number;
}

export function sendBudgetTransformer(hook: SendBudgetHook): Transformer {
  // The budget's slots are on Redis's clock; a stalled event loop fires them together. Counted
  // as they leave, this process never sends more than the bot's limit in any second (issue 32:
  // at 25 answers a second on a starved machine, 17-33 finals answered 429 by the fake).
  const windows = new SecondWindows(hook.limits.perSecond, hook.now);
  return async (previous, method, payload, signal) => {
    const budget = hook.budget();
    const chatId = (payload as { chat_id?: unknown } | undefined)?.chat_id;
    if (!budget || !COUNTED.test(method) || (typeof chatId !== "string" && typeof chatId !== "number")) return previous(method, payload, signal);
    const chat = String(chatId);
    const priority: SendPriority = method === "sendChatAction" ? "typing" : (currentSendPriority() ?? hook.defaultPriority);
    const request: SendRequest = { platform: "telegram", bot: hook.bot, chat, buckets: telegramBuckets(chat, method, hook.limits), priority };
    for (;;) {
      const grant = await budget.take(request);
      if (grant.granted) {
        if (grant.delayMs > 0) await sleep(grant.delayMs, undefined, { signal: signal as AbortSignal | undefined });
        break;
      }
      if (priority === "preview" || priority === "typing" || priority === "final" || grant.waitMs > NOTICE_MAX_WAIT_MS) {
        hook.onRefused?.(priority);
        // As Telegram answers flood control; the description says it never reached Telegram.
        return { ok: false, error_code: 429, description: `Too Many Requests: retry after ${Math.ceil(grant.waitMs / 1000)} ${BUDGET_REFUSAL}`, parameters: { retry_after: grant.waitMs / 1000 } } as never;
      }
      await sleep(grant.waitMs, undefined, { signal: signal as AbortSignal | undefined });
    }
    for (let wait = windows.take(); wait > 0; wait = windows.take()) await sleep(wait, undefined, { signal: signal as AbortSignal | undefined });
    const answer = await previous(method, payload, signal);
    if (!answer.ok && answer.error_code === 429) {
      await budget.penalize({ platform: "telegram", bot: hook.bot, chat, retryAfterMs: (answer.parameters?.retry_after ?? 1) * 1000 });
    }
    return answer;
  };
}
