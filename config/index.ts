export { configSchema, minReplicasAckOf, streamingModeFor, type ConfigKey, type FlatConfig } from "./schema.js";
export { sectionSchemas, type ConfigSections, type SectionName } from "./sections.js";
export { loadConfig, configSecrets, ConfigError, mainApiKey, withSecretsFile, type Config } from "./load.js";
