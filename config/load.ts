import { readFileSync, existsSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { configSchema, type Config } from "./schema.js";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/**
 * Parses the configuration once: an optional YAML file (LONGHAUL_CONFIG_FILE, or
 * config/longhaul.yaml when present) with the environment on top. Throws `ConfigError` naming
 * every wrong variable. Empty strings count as unset, as in most `.env` tooling.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const fromFile = readConfigFile(env.LONGHAUL_CONFIG_FILE);
  const raw: Record<string, unknown> = { ...fromFile };
  for (const key of Object.keys(configSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== "") raw[key] = value;
  }
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join(".") || "(config)"}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const config = result.data;
  if (config.TELEGRAM_WEBHOOK_URL && !config.TELEGRAM_WEBHOOK_SECRET) {
    throw new ConfigError("Invalid configuration:\n  TELEGRAM_WEBHOOK_SECRET: required when TELEGRAM_WEBHOOK_URL is set");
  }
  return Object.freeze(config);
}

function readConfigFile(path: string | undefined): Record<string, unknown> {
  const file = path ?? "config/longhaul.yaml";
  if (!existsSync(file)) {
    if (path) throw new ConfigError(`LONGHAUL_CONFIG_FILE: no such file: ${path}`);
    return {};
  }
  const parsed: unknown = parseYaml(readFileSync(file, "utf8"));
  const shape = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number()]))]));
  const result = shape.safeParse(parsed ?? {});
  if (!result.success) throw new ConfigError(`${file}: expected a flat mapping of configuration keys`);
  const values: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(result.data)) {
    if (!(key in configSchema.shape)) throw new ConfigError(`${file}: unknown key ${key}`);
    values[key] = Array.isArray(value) ? value.join(",") : String(value);
  }
  return values;
}

/** The API key of the main model: LLM_API_KEY, else OPENAI_API_KEY. */
export const mainApiKey = (config: Config): string | undefined => config.LLM_API_KEY ?? config.OPENAI_API_KEY;
