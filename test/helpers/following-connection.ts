import type { Redis } from "../../src/queue/index.js";

/**
 * One connection as a client that follows a failover sees it: commands go to `first`, then —
 * after `switchOver` — to `second` (a Cluster client's slot map updated, a Sentinel client
 * reconnected). Played by hand, so a test picks the step at which the connection moves.
 */
export function following(first: Redis, second: Redis): { connection: Redis; switchOver(): void } {
  let current = first;
  const connection = new Proxy(first, {
    get(_target, property) {
      // Scripts are defined per connection (run-script.ts): on both, so either can run them.
      if (property === "defineCommand") {
        return (...args: Parameters<Redis["defineCommand"]>) => {
          first.defineCommand(...args);
          second.defineCommand(...args);
        };
      }
      const value: unknown = Reflect.get(current, property, current);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(current) : value;
    },
  });
  return { connection, switchOver: () => (current = second) };
}
