/**
 * How MCP tools are named to the model, and the operator's name patterns. OpenAI-compatible
 * APIs take function names of `[A-Za-z0-9_-]{1,64}`; MCP tool names may be longer or use
 * dots and slashes, so the exposed name is sanitized and, when that is not enough, ends in a
 * short digest of the real name (stable across restarts: the request prefix stays cacheable).
 */
import { createHash } from "node:crypto";

const MAX_NAME = 64;
export const NAME_SEPARATOR = "__";

export function exposedToolName(server: string, tool: string, taken: ReadonlySet<string> = new Set()): string {
  const plain = `${server}${NAME_SEPARATOR}${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`;
  if (plain.length <= MAX_NAME && !taken.has(plain) && plain === `${server}${NAME_SEPARATOR}${tool}`) return plain;
  const digest = createHash("sha256").update(`${server}/${tool}`).digest("hex").slice(0, 8);
  return `${plain.slice(0, MAX_NAME - digest.length - 1)}_${digest}`;
}

/** `*` matches any run of characters, `?` one; everything else literally. */
export function matchesPattern(name: string, pattern: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
  return new RegExp(`^${source}$`).test(name);
}

export const matchesAny = (name: string, patterns: readonly string[]) => patterns.some((pattern) => matchesPattern(name, pattern));
