export * from "./jobs.js";
export { createProducers, type Producers } from "./producers.js";
export { createRedis, type Redis } from "./redis.js";
