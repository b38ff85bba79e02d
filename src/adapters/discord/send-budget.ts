/**
 * Discord's policy for the bot's send budget (src/core/send-budget.ts), as discord.js's REST
 * request hook (`rest.makeRequest`), so every REST call is covered, whoever makes it: each takes
 * from the bot's global bucket (Discord's 50 requests/s), a message create or edit also from its
 * channel's (5 per 5 s); a 429 Discord answers is recorded (global: the whole bot; otherwise the
 * channel). discord.js keeps its own per-route buckets from the headers, inside one process; the
 * budget is what all gateways share, with priorities.
 *
 * Priority: a typing call is typing; previews say so around their calls (withSendPriority); the
 * rest is final. A refused call throws a `SendBudgetRefusal` (a RetryableError with the wait):
 * the preview renderer backs off the channel, the delivery queue brings a reply back later, the
 * typing loop sends the next one in a few seconds.
 *
 * discord.js's own global limit (50 requests a second per process) is kept here too, in its
 * place: discord.js counts a request before it calls this hook, so a request the budget refuses
 * (it never leaves the process) or holds for a slot seconds away took one of the 50 all the same.
 * Under load thousands of previews and typing calls a second are refused; they used up the 50
 * within milliseconds of each second and the finals waited in discord.js's global queue behind
 * them (issue 32: 176 of 1,500 messages answered at 25 a second, at 3 requests a second). So the
 * client is given no global limit of its own (`budgetedRestOptions`) and this hook counts the
 * requests it really sends, the budget's grant and wait done. A request whose caller gave up on
 * the way is not sent, not retried, and says so (./request-outcome.ts).
 */
import { DefaultRestOptions, type ResponseLike } from "discord.js";
import { PREVIEW_HEADROOM, type SendBucket, type SendBudget, type SendPriority, type SendRequest } from "../../core/send-budget.js";
import { RetryableError } from "../../errors.js";
import { currentSendPriority } from "../send-priority.js";
import { RequestNotSent, sendTraced, waitToSend } from "./request-outcome.js";
import { SecondWindows } from "../second-windows.js";

export { SecondWindows };

type MakeRequest = typeof DefaultRestOptions.makeRequest;

/** discord.js's default global limit, per process: the most requests this hook sends in any one second. */
export const PROCESS_REQUESTS_PER_SECOND = 50;

/** A notice waits at most this long for a token here (below discord.js's 15 s request timeout). */
const NOTICE_MAX_WAIT_MS = 10_000;

export class SendBudgetRefusal extends RetryableError {
  override readonly name = "SendBudgetRefusal";
}

/**
 * The buckets of one request. A bucket of capacity c refilled at r lets at most c + r·T through
 * in any window T: the bot's is sized to `perSecond` in any second; a channel's to 5 in any 5 s
 * (2 at once, 0.6/s), creates and edits together, as Discord's fixed windows never allow more.
 */
export function discordBuckets(path: string, method: string, perSecond: number): SendBucket[] {
  const burst = Math.max(1, Math.round(perSecond / 10));
  const refill = Math.max(0.1, perSecond - burst);
  // Previews and typing keep the bot under PREVIEW_HEADROOM of its rate: the rest is the finals'.
  const global: SendBucket = { name: "global", capacity: burst, perSecond: refill, headroomPerSecond: PREVIEW_HEADROOM * refill };
  const channel = /^\/channels\/(\d+)\/messages(\/\d+)?$/.exec(path);
  const write = channel && ((method === "POST" && channel[2] === undefined) || (method === "PATCH" && channel[2] !== undefined));
  return write ? [global, { name: `channel:${channel[1]}`, capacity: 2, perSecond: 0.6 }] : [global];
}

export interface DiscordBudgetHook {
  budget(): SendBudget | undefined;
  /** The bot (its application id, or a digest of the token before login; never the token). */
  bot(): string;
  /** DISCORD_REQUESTS_PER_SECOND. @defaultValue 45 */
  perSecond: number;
  onRefused?(priority: SendPriority): void;
  /** The request itself. @defaultValue discord.js's own */
  makeRequest?: MakeRequest;
  /** @defaultValue Date.now */
  now?: () => number;
}

/** The client's REST options: this hook, and no global limit of discord.js's own (the hook keeps it). */
export function budgetedRestOptions(hook: DiscordBudgetHook): { makeRequest: MakeRequest; globalRequestsPerSecond: number } {
  return { makeRequest: budgetedRequest(hook), globalRequestsPerSecond: Number.POSITIVE_INFINITY };
}

export function budgetedRequest(hook: DiscordBudgetHook): MakeRequest {
  const windows = new SecondWindows(PROCESS_REQUESTS_PER_SECOND, hook.now);
  const raw = hook.makeRequest ?? DefaultRestOptions.makeRequest;
  const send: MakeRequest = async (url, init) => {
    for (let wait = windows.take(); wait > 0; wait = windows.take()) await waitToSend(wait, init.signal as AbortSignal | null | undefined, "a request held by the process's global limit");
    return sendTraced(() => raw(url, init));
  };
  return async (url, init) => {
    const budget = hook.budget();
    const method = (init.method ?? "GET").toUpperCase();
    const path = new URL(url).pathname.replace(/^.*?\/v\d+(?=\/)/, "");
    // Aborted before it could start (discord.js's own timeout starts just before this call): the
    // caller gave up while it queued in discord.js. Nothing is taken, sent, or sent again.
    if (init.signal?.aborted) throw new RequestNotSent(`${method} ${path}: its caller gave up while it queued in discord.js`);
    // Interaction responses are not bound to the bot's global limit (Discord's rate-limit docs).
    if (/^\/(interactions|webhooks)\//.test(path)) {
      return sendTraced(() => raw(url, init));
    }
    if (!budget) return send(url, init);
    const signal = init.signal ?? undefined;
    const channel = /^\/channels\/(\d+)/.exec(path)?.[1];
    const priority: SendPriority = /^\/channels\/\d+\/typing$/.test(path) ? "typing" : (currentSendPriority() ?? "final");
    const request: SendRequest = { platform: "discord", bot: hook.bot(), ...(channel ? { chat: channel } : {}), buckets: discordBuckets(path, method, hook.perSecond), priority };
    for (;;) {
      const grant = await budget.take(request);
      if (grant.granted) {
        if (grant.delayMs > 0) await waitToSend(grant.delayMs, signal as AbortSignal | undefined, `${method} ${path}`);
        break;
      }
      if (priority !== "notice" || grant.waitMs > NOTICE_MAX_WAIT_MS) {
        hook.onRefused?.(priority);
        throw new SendBudgetRefusal(`the bot's send budget: ${priority} to ${channel ?? path} refused for ${grant.waitMs} ms`, { retryAfterMs: grant.waitMs });
      }
      await waitToSend(grant.waitMs, signal as AbortSignal | undefined, `${method} ${path}`);
    }
    const response: ResponseLike = await send(url, init);
    if (response.status === 429) {
      // The headers say it all (the body is discord.js's to read): seconds, and whether global.
      const retryAfterMs = Number(response.headers.get("retry-after") ?? "1") * 1000;
      const global = response.headers.get("x-ratelimit-global") !== null || response.headers.get("x-ratelimit-scope") === "global";
      await budget.penalize({ platform: "discord", bot: request.bot, ...(global || !channel ? {} : { chat: channel }), retryAfterMs: Number.isFinite(retryAfterMs) ? retryAfterMs : 1000 });
    }
    return response;
  };
}
