import { readFileSync, existsSync } from "node:fs";
import { parseEnv } from "node:util";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { configSchema, type FlatConfig } from "./schema.js";
import { checkSections, sectionSchemas, type ConfigSections } from "./sections.js";
import { collectSecrets } from "./secrets.js";

/** The whole configuration: the flat keys (environment names) and the nested file sections. */
export type Config = Readonly<FlatConfig & ConfigSections>;

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Values read from `${VAR}` references: secrets by assumption, masked in every log line. */
const interpolatedSecrets = new WeakMap<object, readonly string[]>();

/**
 * Parses the configuration once: an optional YAML file (LONGHAUL_CONFIG_FILE, or
 * config/longhaul.yaml when present) with the environment on top. The file holds flat keys
 * (the environment wins for them) and nested sections (`sections.ts`); `${VAR}` in any of its
 * values is read from the environment. The entry points pass the environment through
 * `withSecretsFile` first (the .env file `npm run setup` writes). Throws `ConfigError` naming
 * every wrong variable or path. Empty strings count as unset, as in most `.env` tooling.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const file = readConfigFile(env.LONGHAUL_CONFIG_FILE, env);
  const raw: Record<string, unknown> = { ...file.flat };
  for (const key of Object.keys(configSchema.shape)) {
    const value = env[key];
    if (value !== undefined && value !== "") raw[key] = value;
  }
  const result = configSchema.safeParse(raw);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => `  ${issue.path.join(".") || "(config)"}: ${issue.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  const flat = result.data;
  if (flat.TELEGRAM_WEBHOOK_URL && !flat.TELEGRAM_WEBHOOK_SECRET) {
    throw new ConfigError("Invalid configuration:\n  TELEGRAM_WEBHOOK_SECRET: required when TELEGRAM_WEBHOOK_URL is set");
  }
  if (flat.REDIS_SENTINELS && !flat.REDIS_SENTINEL_MASTER) {
    throw new ConfigError("Invalid configuration:\n  REDIS_SENTINEL_MASTER: required when REDIS_SENTINELS is set (the name in the sentinels' `sentinel monitor NAME host port quorum`)");
  }
  if (flat.REDIS_CLUSTER_NODES && flat.REDIS_SENTINELS) {
    throw new ConfigError("Invalid configuration:\n  REDIS_CLUSTER_NODES: not with REDIS_SENTINELS (a Cluster fails over by itself; choose one topology)");
  }
  const config: Config = Object.freeze({ ...flat, ...parseSections(file.sections, file.path) });
  interpolatedSecrets.set(config, file.secrets);
  return config;
}

/** Every secret the configuration holds (API keys, bot tokens, `${VAR}` values), for log masking. */
export function configSecrets(config: Config): string[] {
  return collectSecrets({ flat: config, models: config.models, mcp: config.mcp, interpolated: interpolatedSecrets.get(config) ?? [] });
}

function parseSections(sections: Record<string, unknown>, file: string): ConfigSections {
  const parsed: Record<string, unknown> = {};
  const lines: string[] = [];
  for (const [name, value] of Object.entries(sections)) {
    const schema = (sectionSchemas as Record<string, z.ZodType>)[name];
    if (!schema) continue;
    const result = schema.safeParse(value);
    if (result.success) parsed[name] = result.data;
    else for (const issue of result.error.issues) lines.push(`  ${[name, ...issue.path.map(String)].join(".")}: ${issue.message}`);
  }
  if (lines.length === 0) lines.push(...checkSections(parsed as ConfigSections));
  if (lines.length > 0) throw new ConfigError(`Invalid configuration in ${file}:\n${lines.join("\n")}`);
  return parsed as ConfigSections;
}

/**
 * The environment with the secrets file's values below it: LONGHAUL_ENV_FILE, else `.env` when
 * present (`npm run setup` writes it; docker compose reads the same file). Called by the entry
 * points only, so a test's or a bench's own environment never picks up a checkout's `.env`.
 */
export function withSecretsFile(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const path = env.LONGHAUL_ENV_FILE || ".env";
  if (!existsSync(path)) {
    if (env.LONGHAUL_ENV_FILE) throw new ConfigError(`LONGHAUL_ENV_FILE: no such file: ${path}`);
    return env;
  }
  let values: NodeJS.Dict<string>;
  try {
    values = parseEnv(readFileSync(path, "utf8"));
  } catch (error) {
    throw new ConfigError(`${path}: cannot be read (${error instanceof Error ? error.message : String(error)})`);
  }
  const merged: NodeJS.ProcessEnv = { ...values };
  for (const [key, value] of Object.entries(env)) if (value !== undefined && (value !== "" || merged[key] === undefined)) merged[key] = value;
  return merged;
}

interface ConfigFile {
  path: string;
  /** Flat keys, as strings (the environment's form). */
  flat: Record<string, string>;
  sections: Record<string, unknown>;
  secrets: string[];
}

const flatValue = z.union([z.string(), z.number(), z.boolean(), z.array(z.union([z.string(), z.number()]))]);

function readConfigFile(path: string | undefined, env: NodeJS.ProcessEnv): ConfigFile {
  const file = path ?? "config/longhaul.yaml";
  const empty: ConfigFile = { path: file, flat: {}, sections: {}, secrets: [] };
  if (!existsSync(file)) {
    if (path) throw new ConfigError(`LONGHAUL_CONFIG_FILE: no such file: ${path}`);
    return empty;
  }
  let parsed: unknown;
  try {
    parsed = parseYaml(readFileSync(file, "utf8"));
  } catch (error) {
    throw new ConfigError(`${file}: not valid YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (parsed === null || parsed === undefined) return empty;
  if (typeof parsed !== "object" || Array.isArray(parsed)) throw new ConfigError(`${file}: expected a mapping of configuration keys and sections`);
  const secrets: string[] = [];
  const interpolated = interpolate(parsed, env, [], secrets, file) as Record<string, unknown>;
  const result: ConfigFile = { path: file, flat: {}, sections: {}, secrets };
  for (const [key, value] of Object.entries(interpolated)) {
    if (key in configSchema.shape) {
      const flat = flatValue.safeParse(value);
      if (!flat.success) throw new ConfigError(`${file}: ${key} must be a single value or a list`);
      result.flat[key] = Array.isArray(flat.data) ? flat.data.join(",") : String(flat.data);
    } else if (key in sectionSchemas) {
      result.sections[key] = value;
    } else {
      throw new ConfigError(`${file}: unknown key ${key}`);
    }
  }
  return result;
}

/**
 * Replaces `${VAR}` in every string of the file with the environment's value. A missing
 * variable is an error naming the path; `$${` escapes a literal `${`.
 */
function interpolate(value: unknown, env: NodeJS.ProcessEnv, path: string[], secrets: string[], file: string): unknown {
  if (typeof value === "string") {
    return value.replace(/\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, escaped: string | undefined, name: string) => {
      if (escaped) return whole.slice(1);
      const found = env[name];
      if (found === undefined || found === "") throw new ConfigError(`${file}: ${path.join(".") || "(root)"} refers to \${${name}}, which is not set in the environment`);
      secrets.push(found);
      return found;
    });
  }
  if (Array.isArray(value)) return value.map((item, index) => interpolate(item, env, [...path, String(index)], secrets, file));
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, interpolate(item, env, [...path, key], secrets, file)]));
  }
  return value;
}

/** The API key of the main model: LLM_API_KEY, else OPENAI_API_KEY. */
export const mainApiKey = (config: Config): string | undefined => config.LLM_API_KEY ?? config.OPENAI_API_KEY;
