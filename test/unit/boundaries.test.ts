/**
 * The import boundaries of STYLE.md, held by a test: each SDK is imported by one folder only,
 * and the lower layers (core, context, session) never reach up into adapters, the LLM client,
 * the queue or the gateway.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url).pathname;

function sourceFiles(directory: string): string[] {
  const files: string[] = [];
  for (const name of readdirSync(directory)) {
    const path = join(directory, name);
    if (statSync(path).isDirectory()) files.push(...sourceFiles(path));
    else if (name.endsWith(".ts")) files.push(path);
  }
  return files;
}

/** Every module specifier a file imports or re-exports (static and `import("…")` types). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specifiers: string[] = [];
  for (const match of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"]*?from\s+"([^"]+)"/g)) specifiers.push(match[1]!);
  for (const match of text.matchAll(/import\(\s*"([^"]+)"\s*\)/g)) specifiers.push(match[1]!);
  for (const match of text.matchAll(/(?:^|\n)\s*import\s+"([^"]+)"/g)) specifiers.push(match[1]!);
  return specifiers;
}

const files = [...sourceFiles(join(root, "src")), ...sourceFiles(join(root, "workers"))].map((file) => ({
  path: relative(root, file),
  imports: importsOf(file),
}));

/** The folder of ours a relative specifier lands in, e.g. `src/adapters`. */
function targetFolder(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const resolved = relative(root, join(root, from, "..", specifier));
  const parts = resolved.split("/");
  return parts[0] === "src" ? `src/${parts[1]}` : parts[0];
}

const packageOwners: Array<{ pattern: RegExp; owners: string[] }> = [
  { pattern: /^(grammy|@grammyjs\/)/, owners: ["src/adapters/telegram/"] },
  { pattern: /^(discord\.js|@discordjs\/)/, owners: ["src/adapters/discord/"] },
  { pattern: /^bullmq$/, owners: ["src/queue/", "src/gateway/delivery.ts", "workers/"] },
  { pattern: /^undici(\/|$)/, owners: ["src/llm/"] },
  { pattern: /^@modelcontextprotocol\//, owners: ["src/tools/mcp/"] },
];

describe("import boundaries", () => {
  it("imports each SDK from its own folder only", () => {
    const offenders: string[] = [];
    for (const file of files) {
      for (const specifier of file.imports) {
        for (const { pattern, owners } of packageOwners) {
          if (pattern.test(specifier) && !owners.some((owner) => file.path.startsWith(owner))) offenders.push(`${file.path} imports ${specifier}`);
        }
      }
    }
    expect(offenders).toEqual([]);
  });

  it("keeps core, context, session and schedule below adapters, llm, queue and gateway", () => {
    const lower: Record<string, string[]> = {
      "src/core": ["src/"],
      "src/context": ["src/core", "src/context"],
      "src/session": ["src/core", "src/session", "src/context"],
      // The schedule domain reaches the queue and the platforms only through ports (alarms, inbox).
      "src/schedule": ["src/core", "src/session", "src/schedule", "src/logger.js", "config"],
    };
    const offenders: string[] = [];
    for (const file of files) {
      const layer = Object.keys(lower).find((folder) => file.path.startsWith(`${folder}/`));
      if (!layer) continue;
      for (const specifier of file.imports) {
        const target = targetFolder(file.path, specifier);
        if (target === undefined) continue;
        const allowed = layer === "src/core" ? target === "src/core" : lower[layer]!.includes(target);
        if (!allowed) offenders.push(`${file.path} imports ${specifier}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it("finds the imports it checks (the scanner itself works)", () => {
    const store = files.find((file) => file.path === "src/session/store.ts");
    expect(store?.imports).toContain("../core/channel.js");
    expect(files.some((file) => file.imports.includes("grammy"))).toBe(true);
  });
});
