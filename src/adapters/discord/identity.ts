import { DiscordAPIError, REST, Routes } from "discord.js";
import type { BotIdentity } from "../channel-adapter.js";

/** GET /users/@me through discord.js's REST client, without its retries (a person is waiting). */
export async function discordIdentity(token: string, apiRoot: string, timeoutMs: number): Promise<BotIdentity> {
  const rest = new REST({ api: apiRoot.replace(/\/+$/, ""), timeout: timeoutMs, retries: 0 }).setToken(token);
  try {
    const me = (await rest.get(Routes.user())) as { id: string; username: string };
    return { ok: true, id: me.id, name: me.username };
  } catch (error) {
    if (error instanceof DiscordAPIError) return { ok: false, reason: error.status === 401 ? "rejected" : "failed", detail: `${error.status} ${error.message}` };
    return { ok: false, reason: "unreachable", detail: error instanceof Error ? error.message : String(error) };
  }
}
