/**
 * `npm run bench`: every benchmark of this folder that exists, one after the other, each with
 * its default arguments. A module exports `main()`; whether it prints its report itself or
 * returns it as a string, the report is printed once. Missing modules are skipped with a note;
 * a failing one is reported and the others still run (the exit code is then 1).
 *
 *   npm run bench                     # all of them
 *   npm run bench -- long-session     # only the named ones
 */
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isMain } from "./stats.js";

export const BENCHMARKS = ["tokens", "compaction", "pipeline", "turn-bytes", "turn-cpu", "long-session", "session-memory", "mcp", "telegram-polling", "schedule", "discord-split", "streaming", "budget", "llm-client"] as const;

interface BenchModule {
  main?: (args?: string[]) => Promise<string | void> | string | void;
}

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const wanted = args.length > 0 ? BENCHMARKS.filter((name) => args.includes(name)) : [...BENCHMARKS];
  const report: string[] = [];
  const emit = (text: string) => {
    report.push(text);
    console.log(text);
  };
  let failed = 0;
  for (const name of wanted) {
    const file = fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
    if (!existsSync(file)) {
      emit(`\n# bench/${name}.ts — skipped: the file does not exist`);
      continue;
    }
    emit(`\n# bench/${name}.ts\n`);
    const started = performance.now();
    // Modules that print their own report: capture what they print, so a returned report is not printed twice.
    const printed: string[] = [];
    const log = console.log;
    console.log = (...parts: unknown[]) => {
      printed.push(parts.map(String).join(" "));
      log(...parts);
    };
    try {
      const module = (await import(pathToFileURL(file).href)) as BenchModule;
      if (typeof module.main !== "function") throw new Error("it exports no main()");
      // Each benchmark runs with its own defaults, not with this runner's arguments.
      const result = await module.main([]);
      console.log = log;
      report.push(...printed);
      if (typeof result === "string" && result.trim() !== "" && !printed.join("\n").includes(result.trim())) emit(result);
      emit(`\n(bench/${name}.ts: ${((performance.now() - started) / 1000).toFixed(1)} s)`);
    } catch (error) {
      console.log = log;
      report.push(...printed);
      failed++;
      emit(`\nbench/${name}.ts failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    }
  }
  if (failed > 0) process.exitCode = 1;
  return report.join("\n");
}

if (isMain(import.meta.url)) await main();
