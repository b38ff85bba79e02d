/** Options of the Telegram adapter; `createTelegramAdapter` fills them from the configuration. */
import type { UserFromGetMe } from "grammy/types";
import type { Logger } from "../../logger.js";
import type { TelegramSendLimits } from "./send-budget.js";

export interface TelegramAdapterOptions {
  token: string;
  /** Bot API root, without a trailing slash. @defaultValue "https://api.telegram.org" */
  apiRoot?: string;
  /** Public URL Telegram posts updates to; unset: long polling. */
  webhookUrl?: string;
  /** Secret Telegram sends in X-Telegram-Bot-Api-Secret-Token; required with `webhookUrl`. */
  webhookSecret?: string;
  /** Inbound text longer than this is truncated, with a notice to the user. */
  maxMessageChars: number;
  logger: Logger;
  /** getMe's answer, to skip the call (tests, cold starts of webhook replicas). */
  botInfo?: UserFromGetMe;
  /** Long-poll timeout of getUpdates in seconds. @defaultValue 30 */
  pollingTimeoutSeconds?: number;
  /** Timeout of one Bot API request (long polls get their own timeout on top). @defaultValue 60 */
  requestTimeoutSeconds?: number;
  /** How often the typing indicator is re-sent; Telegram shows it for about 5 s. @defaultValue 4000 */
  typingIntervalMs?: number;
  /** A typing indicator never outlives this, even if turn-finished is lost. @defaultValue 600000 */
  typingMaxMs?: number;
  /** Longest part of a reply, in UTF-16 units after parsing (Telegram's limit is 4096). @defaultValue 4096 */
  maxPartLength?: number;
  /** React 👀 to a message once the ingress took it (ACK_REACTIONS). @defaultValue false */
  ackReactions?: boolean;
  /** Show link previews under replies (LINK_PREVIEWS). @defaultValue false */
  linkPreviews?: boolean;
  /** Poll even though a webhook is set, deleting it (TELEGRAM_FORCE_POLLING). @defaultValue false */
  forcePolling?: boolean;
  /** How long a 409 Conflict may last before `onFatal` (TELEGRAM_CONFLICT_EXIT_S). @defaultValue 300000 */
  conflictGiveUpMs?: number;
  /** Intake cannot go on (401, a 409 that did not clear): the process should exit non-zero. */
  onFatal?: (error: Error) => void;
  /**
   * Polling only: pauses between attempts of a failing `ingress.submit`, each attempt bounded
   * by `submitAttemptTimeoutMs`. When all fail, the user is told; until then the update is not
   * confirmed to Telegram. (In webhook mode a failure answers 500 and Telegram re-delivers.)
   * @defaultValue [500, 2000, 5000, 10000]
   */
  submitRetryDelaysMs?: readonly number[];
  /** @defaultValue 10000 */
  submitAttemptTimeoutMs?: number;
  /** Webhook mode: how often getWebhookInfo is checked for delivery errors. @defaultValue 60000 */
  webhookCheckIntervalMs?: number;
  /**
   * A stored button press is answered by the reply to it (an alert when the reply is the
   * presser's alone), or plainly after this long. @defaultValue 5000
   */
  pressAnswerHoldMs?: number;
  /** The send budget's sizes (TELEGRAM_SENDS_PER_SECOND, TELEGRAM_GROUP_SENDS_PER_MINUTE). @defaultValue DEFAULT_TELEGRAM_SEND_LIMITS */
  sendLimits?: TelegramSendLimits;
  /** How long `stop()` waits for the batch in hand, notices and typing calls. @defaultValue 2000 */
  stopGraceMs?: number;
}
