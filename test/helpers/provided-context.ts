import "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    /** URL of the private redis-server the global setup started. */
    redisUrl: string;
  }
}
