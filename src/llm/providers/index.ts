/** Provider dialects (profiles.ts), their detection (detect.ts) and the request shaping (dialect.ts). */
export { detectProvider, resolveProfile } from "./detect.js";
export { readUsage, shapeMessages, shapeRequest, SKIP_SIGNATURE } from "./dialect.js";
export { isProviderName, PROFILES, PROVIDER_NAMES, type OptionalField, type ProviderName, type ProviderProfile } from "./profiles.js";
