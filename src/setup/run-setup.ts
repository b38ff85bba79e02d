/**
 * `npm run setup`, start to end: the model (checked with one completion), the platforms (each
 * token checked), the files written (settings to the YAML file, secrets to .env with mode 600;
 * both edited in place), then the operator's own account paired. Each run starts from what the
 * files already hold, so running it again edits them.
 */
import { loadConfig, withSecretsFile } from "../../config/index.js";
import type { Asker } from "./asker.js";
import { ConfigFile, EnvFile } from "./files.js";
import { chooseModel, type ModelOptions } from "./model-step.js";
import { pairOperator } from "./pair-step.js";
import { choosePlatform, DISCORD, TELEGRAM, type PlatformChoice, type PlatformSpec } from "./platform-step.js";
import { clashesWithHttpPort } from "./presets.js";

export interface SetupOptions extends ModelOptions {
  configFile: string;
  envFile: string;
  telegram: boolean | undefined;
  telegramTokenEnv: string | undefined;
  discord: boolean | undefined;
  discordTokenEnv: string | undefined;
  /** false: no pairing step (`--no-pair`); it runs only in a terminal anyway. */
  pair: boolean;
}

/** The secrets setup writes, which never stay in the YAML file. */
const SECRET_KEYS = ["LLM_API_KEY", "TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN"] as const;

export async function runSetup(ask: Asker, options: SetupOptions, env: NodeJS.ProcessEnv): Promise<void> {
  const config = ConfigFile.read(options.configFile);
  const secrets = EnvFile.read(options.envFile);
  const rerun = config.has("LLM_BASE_URL") || config.has("LLM_MODEL") || secrets.get("LLM_API_KEY") !== undefined;
  ask.say(rerun
    ? `Editing ${options.configFile} and ${options.envFile}: Enter keeps each current value.`
    : `This writes ${options.configFile} (settings) and ${options.envFile} (secrets, readable by you alone).`);

  const model = await chooseModel(ask, options, { config, env: secrets }, env);
  const apiRoots = {
    telegram: env.TELEGRAM_API_ROOT || config.get("TELEGRAM_API_ROOT") || "https://api.telegram.org",
    discord: env.DISCORD_API_ROOT || config.get("DISCORD_API_ROOT") || "https://discord.com/api",
  };
  const platform = (spec: PlatformSpec, wanted: boolean | undefined, tokenEnv: string | undefined) =>
    choosePlatform(ask, spec, { wanted, tokenEnv, apiRoot: apiRoots[spec.platform], timeoutMs: options.timeoutMs }, secrets, env);
  const telegram = await platform(TELEGRAM, options.telegram, options.telegramTokenEnv);
  const discord = await platform(DISCORD, options.discord, options.discordTokenEnv);

  config.set("LLM_PROVIDER", model.provider);
  config.set("LLM_BASE_URL", model.baseUrl);
  config.set("LLM_MODEL", model.model);
  config.set("LLM_CONTEXT_WINDOW", model.contextWindow);
  const httpPort = Number(env.HTTP_PORT || config.get("HTTP_PORT") || 8080);
  if (clashesWithHttpPort(model.baseUrl, httpPort)) {
    // llama.cpp's llama-server and longhaul's health/metrics server both default to 8080.
    config.set("HTTP_PORT", String(httpPort + 1));
    ask.say(`The model server listens on port ${httpPort}, longhaul's own HTTP server's port: HTTP_PORT is set to ${httpPort + 1}.`);
  }
  if (model.apiKey !== undefined) secrets.set("LLM_API_KEY", model.apiKey);
  else if (secrets.get("LLM_API_KEY") !== undefined) {
    // The key of the endpoint used before would go to the new one with every request.
    secrets.unset("LLM_API_KEY");
    ask.say(`LLM_API_KEY removed from ${options.envFile}: it was the previous endpoint's, and this one takes none.`);
  }
  const tokens: Array<[PlatformChoice | undefined, string]> = [[telegram, TELEGRAM.key], [discord, DISCORD.key]];
  for (const [choice, key] of tokens) if (choice) secrets.set(key, choice.token);
  for (const key of SECRET_KEYS) {
    if (config.has(key) && secrets.get(key) !== undefined) {
      config.set(key, undefined);
      ask.say(`${key} moved out of ${options.configFile}: secrets live in ${options.envFile}.`);
    }
  }
  secrets.save();
  config.save();
  ask.say(`Wrote ${options.configFile} and ${options.envFile} (mode 600).`);

  const bots = { ...(telegram ? { telegram: telegram.identity.name } : {}), ...(discord ? { discord: discord.identity.name } : {}) };
  if (options.pair && ask.interactive && (telegram || discord) && await ask.confirm("Pair your own account now, so the bot talks to you?", true)) {
    const loaded = loadConfig(withSecretsFile({ ...env, LONGHAUL_CONFIG_FILE: options.configFile, LONGHAUL_ENV_FILE: options.envFile }));
    const paired = await pairOperator(ask, loaded, bots);
    if (paired) {
      const adminKey = paired.platform === "telegram" ? "ADMIN_TELEGRAM_USERS" : "ADMIN_DISCORD_USERS";
      const admins = (config.get(adminKey) ?? "").split(",").filter((id) => id !== "");
      if (!admins.includes(paired.userId) && await ask.confirm(`Make ${paired.userName} an admin (${adminKey}: /budget, /pair approve, tool approvals in groups)?`, true)) {
        config.set(adminKey, [...admins, paired.userId]);
        config.save();
        ask.say(`${adminKey} now lists ${paired.userId}.`);
      }
    }
  }
  ask.say("Done. Next: npm run doctor (checks everything once more), then npm start.");
}
