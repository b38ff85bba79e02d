import { Api, GrammyError } from "grammy";
import type { BotIdentity } from "../channel-adapter.js";
import { toApiSignal } from "./send-reply.js";

/**
 * getMe through grammY's Api. grammY's errors are reduced to Telegram's code and description
 * (its HttpError's message names the method, never the URL that carries the token).
 */
export async function telegramIdentity(token: string, apiRoot: string, timeoutMs: number): Promise<BotIdentity> {
  const api = new Api(token, { apiRoot: apiRoot.replace(/\/+$/, ""), timeoutSeconds: Math.ceil(timeoutMs / 1000) });
  try {
    const me = await api.getMe(toApiSignal(AbortSignal.timeout(timeoutMs)));
    return { ok: true, id: String(me.id), name: `@${me.username}` };
  } catch (error) {
    if (error instanceof GrammyError) {
      // 404: Telegram's answer to a malformed token.
      return { ok: false, reason: error.error_code === 401 || error.error_code === 404 ? "rejected" : "failed", detail: `${error.error_code} ${error.description}` };
    }
    return { ok: false, reason: "unreachable", detail: error instanceof Error ? error.message : String(error) };
  }
}
