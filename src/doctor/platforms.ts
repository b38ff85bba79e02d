/**
 * Platform checks with plain HTTP (the SDKs stay in src/adapters): the Telegram token (getMe)
 * and webhook state (getWebhookInfo), the Discord token (GET /users/@me). Tokens never appear
 * in a result: Telegram's URLs carry the token, so only hosts are printed.
 */
import type { Config } from "../../config/index.js";
import { describeNetworkError, fail, hostOf, ok, warn, type CheckResult } from "./check.js";

type ApiAnswer =
  | { kind: "ok"; result: Record<string, unknown> }
  | { kind: "error"; status: number; description: string }
  | { kind: "unreachable"; reason: string };

async function getJson(url: string, headers: Record<string, string>, timeoutMs: number): Promise<{ status: number; body: Record<string, unknown> } | { reason: string }> {
  try {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = { description: text.slice(0, 120) };
    }
    return { status: response.status, body: typeof body === "object" && body !== null ? (body as Record<string, unknown>) : {} };
  } catch (error) {
    return { reason: describeNetworkError(error) };
  }
}

async function telegramCall(config: Config, token: string, method: string, timeoutMs: number): Promise<ApiAnswer> {
  const answer = await getJson(`${config.TELEGRAM_API_ROOT.replace(/\/+$/, "")}/bot${token}/${method}`, {}, timeoutMs);
  if ("reason" in answer) return { kind: "unreachable", reason: answer.reason };
  const { body } = answer;
  if (body.ok === true && typeof body.result === "object" && body.result !== null) return { kind: "ok", result: body.result as Record<string, unknown> };
  return { kind: "error", status: answer.status, description: typeof body.description === "string" ? body.description : `HTTP ${answer.status}` };
}

export async function telegramResults(config: Config, options: { timeoutMs: number; webhook: boolean }): Promise<CheckResult[]> {
  const token = config.TELEGRAM_BOT_TOKEN;
  if (!token) return [];
  const host = hostOf(config.TELEGRAM_API_ROOT);
  const me = await telegramCall(config, token, "getMe", options.timeoutMs);
  if (me.kind === "unreachable") return [fail("platform", `telegram: cannot reach ${host} (${me.reason})`, "check the network, or TELEGRAM_API_ROOT")];
  if (me.kind === "error") {
    if (me.status === 401) {
      return [{ ...fail("platform", "telegram: the Bot API rejected TELEGRAM_BOT_TOKEN (401 Unauthorized)", "copy the token again from @BotFather (/mybots → API Token) into TELEGRAM_BOT_TOKEN"), definitive: true }];
    }
    if (me.status === 404) {
      return [{ ...fail("platform", `telegram: ${host} does not know this token (404 Not Found): it is malformed, or TELEGRAM_API_ROOT is not a Bot API server`, "TELEGRAM_BOT_TOKEN looks like 123456789:AAH…: copy it whole from @BotFather"), definitive: true }];
    }
    return [fail("platform", `telegram: getMe failed (${me.status} ${me.description})`, "try again; if it persists, check TELEGRAM_API_ROOT and the token")];
  }
  const identity = ok("platform", `telegram: token valid for @${String(me.result.username)} (id ${String(me.result.id)})`);
  if (!options.webhook) return [identity];
  return [identity, await webhookResult(config, token, options.timeoutMs)];
}

/** Whether Telegram's webhook agrees with the mode we run in, and whether its deliveries work. */
async function webhookResult(config: Config, token: string, timeoutMs: number): Promise<CheckResult> {
  const info = await telegramCall(config, token, "getWebhookInfo", timeoutMs);
  if (info.kind !== "ok") {
    const why = info.kind === "unreachable" ? info.reason : `${info.status} ${info.description}`;
    return warn("platform", `telegram: webhook state unknown (getWebhookInfo: ${why})`, "run the doctor again; check TELEGRAM_API_ROOT");
  }
  const url = typeof info.result.url === "string" ? info.result.url : "";
  const pending = Number(info.result.pending_update_count ?? 0);
  const configured = config.TELEGRAM_WEBHOOK_URL;
  if (!configured) {
    if (url === "") return ok("platform", `telegram: no webhook set, long polling (${pending} updates waiting)`);
    return warn("platform", `telegram: a webhook is set (${hostOf(url)}) but longhaul is configured for long polling, which conflicts with it`,
      "set TELEGRAM_WEBHOOK_URL and TELEGRAM_WEBHOOK_SECRET to run in webhook mode, or remove that webhook (deleteWebhook) if no other deployment uses it");
  }
  if (url !== configured) return ok("platform", `telegram: start sets the webhook to ${hostOf(configured)} (now ${url === "" ? "none" : hostOf(url)})`);
  const lastErrorAt = Number(info.result.last_error_date ?? 0) * 1000;
  if (lastErrorAt > Date.now() - 86_400_000) {
    const minutes = Math.max(1, Math.round((Date.now() - lastErrorAt) / 60_000));
    return warn("platform", `telegram: the last delivery to the webhook failed ${minutes} min ago (${String(info.result.last_error_message ?? "no reason given")}); ${pending} updates waiting`,
      "make TELEGRAM_WEBHOOK_URL reachable from the internet over HTTPS (port 443, 80, 88 or 8443), routed to /telegram/webhook on HTTP_PORT");
  }
  return ok("platform", `telegram: webhook set to ${hostOf(url)}, ${pending} updates waiting`);
}

export async function discordResults(config: Config, options: { timeoutMs: number }): Promise<CheckResult[]> {
  const token = config.DISCORD_BOT_TOKEN;
  if (!token) return [];
  const host = hostOf(config.DISCORD_API_ROOT);
  const answer = await getJson(`${config.DISCORD_API_ROOT.replace(/\/+$/, "")}/v10/users/@me`, { authorization: `Bot ${token}` }, options.timeoutMs);
  if ("reason" in answer) return [fail("platform", `discord: cannot reach ${host} (${answer.reason})`, "check the network, or DISCORD_API_ROOT")];
  if (answer.status === 401) {
    return [{ ...fail("platform", "discord: Discord rejected DISCORD_BOT_TOKEN (401 Unauthorized)", "reset the token in the Developer Portal (Applications → Bot → Reset Token) and set DISCORD_BOT_TOKEN"), definitive: true }];
  }
  if (answer.status !== 200) {
    return [fail("platform", `discord: GET /users/@me failed (HTTP ${answer.status} ${String(answer.body.message ?? "")})`.trim(), "try again; if it persists, check DISCORD_API_ROOT and the token")];
  }
  return [ok("platform", `discord: token valid for ${String(answer.body.username)} (id ${String(answer.body.id)})`)];
}
