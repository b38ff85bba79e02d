/**
 * The platform steps of setup: a Telegram and/or a Discord bot token (typed without an echo, or
 * read from the variable `--telegram-token-env` / `--discord-token-env` names), each checked
 * with the platform's own client (getMe, GET /users/@me) before it is kept.
 */
import { discordIdentity, telegramIdentity, type BotIdentity } from "../adapters/index.js";
import type { Asker } from "./asker.js";
import type { EnvFile } from "./files.js";
import { StepFailedError } from "./model-step.js";

export interface PlatformSpec {
  platform: "telegram" | "discord";
  label: string;
  /** The .env key. */
  key: "TELEGRAM_BOT_TOKEN" | "DISCORD_BOT_TOKEN";
  where: string;
  flag: string;
  identify(token: string, apiRoot: string, timeoutMs: number): Promise<BotIdentity>;
}

export const TELEGRAM: PlatformSpec = {
  platform: "telegram", label: "Telegram", key: "TELEGRAM_BOT_TOKEN", where: "from @BotFather: /newbot, or /mybots → API Token", flag: "--telegram-token-env", identify: telegramIdentity,
};
export const DISCORD: PlatformSpec = {
  platform: "discord", label: "Discord", key: "DISCORD_BOT_TOKEN", where: "Developer Portal → your application → Bot → Reset Token", flag: "--discord-token-env", identify: discordIdentity,
};

export interface PlatformOptions {
  /** false: skip this platform (`--no-telegram`); true: set it up; undefined: ask. */
  wanted: boolean | undefined;
  tokenEnv: string | undefined;
  apiRoot: string;
  timeoutMs: number;
}

export interface PlatformChoice {
  token: string;
  identity: Extract<BotIdentity, { ok: true }>;
}

/** → the checked token, or undefined when this platform is left as it was. */
export async function choosePlatform(ask: Asker, spec: PlatformSpec, options: PlatformOptions, envFile: EnvFile, env: NodeJS.ProcessEnv): Promise<PlatformChoice | undefined> {
  const existing = envFile.get(spec.key);
  let fromVariable: string | undefined;
  if (options.tokenEnv !== undefined) {
    fromVariable = env[options.tokenEnv];
    if (!fromVariable) throw new StepFailedError(`${spec.flag} ${options.tokenEnv}: that variable is not set`, 2);
  }
  const wanted = options.wanted ?? (fromVariable !== undefined || await ask.confirm(existing ? `Check the ${spec.label} bot token in .env (or replace it)?` : `Connect a ${spec.label} bot?`, existing !== undefined));
  if (!wanted) return undefined;
  for (;;) {
    let token = fromVariable;
    if (token === undefined) {
      const typed = await ask.secret(`${spec.label} bot token (${spec.where})${existing ? "; Enter keeps the one in .env" : ""}:`);
      token = typed.trim() === "" ? existing : typed.trim();
    }
    if (token === undefined) {
      ask.say(`${spec.label}: no token, skipped.`);
      return undefined;
    }
    const identity = await spec.identify(token, options.apiRoot, options.timeoutMs);
    if (identity.ok) {
      ask.say(`ok    ${spec.platform.padEnd(8)}  token valid for ${identity.name} (id ${identity.id})`);
      return { token, identity };
    }
    const said = identity.reason === "rejected" ? `${spec.label} refused the token (${identity.detail})` : `${spec.label} could not check the token (${identity.detail})`;
    ask.say(`FAIL  ${spec.platform.padEnd(8)}  ${said}`);
    if (!ask.interactive) throw new StepFailedError(said, 5);
    if (!(await ask.confirm("Enter the token again?", true))) return undefined;
    fromVariable = undefined;
  }
}
