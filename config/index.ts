export { configSchema, type Config, type ConfigKey } from "./schema.js";
export { loadConfig, ConfigError, mainApiKey } from "./load.js";
