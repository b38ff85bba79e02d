import { createHash } from "node:crypto";
import type { Redis } from "ioredis";

/**
 * Runs a Lua script by its SHA. Each script is defined once per connection as an ioredis custom
 * command (`defineCommand`), which sends the script text only the first time a socket runs it
 * (and again after a NOSCRIPT: a restarted or flushed Redis) and `EVALSHA` otherwise, instead
 * of the whole script with every call as `EVAL` does. A NOSCRIPT reply means the script did
 * not run, so the resend cannot run it twice.
 */
export function runScript(redis: Redis, lua: string, numberOfKeys: number, ...args: Array<string | number>): Promise<unknown> {
  let names = defined.get(redis);
  if (!names) {
    names = new Set();
    defined.set(redis, names);
  }
  const name = commandName(lua);
  if (!names.has(name)) {
    redis.defineCommand(name, { lua });
    names.add(name);
  }
  return (redis as unknown as Record<string, (...values: Array<string | number>) => Promise<unknown>>)[name]!(numberOfKeys, ...args);
}

const defined = new WeakMap<Redis, Set<string>>();
const names = new Map<string, string>();

/** `lh_<sha1 prefix>`: one command per distinct script text. */
function commandName(lua: string): string {
  let name = names.get(lua);
  if (name === undefined) {
    name = `lh_${createHash("sha1").update(lua).digest("hex").slice(0, 16)}`;
    names.set(lua, name);
  }
  return name;
}
