/**
 * `npm run bench`: every benchmark of this folder that exists, one after the other, each with
 * its default arguments. A module exports `main()`; whether it prints its report itself or
 * returns it as a string, the report is printed once. Missing modules are skipped with a note;
 * a failing one is reported and the others still run (the exit code is then 1).
 *
 *   npm run bench                     # all of them
 *   npm run bench -- long-session     # only the named ones
 *   npm run bench -- load --rates=25  # flags (--name=value) go to each named benchmark
 *
 * `load` and `soak` (issue 32: minutes of real-latency traffic through child processes) run
 * only when named.
 */
import { existsSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isMain } from "./stats.js";

/** Run only when named: they take minutes to an hour. */
export const ON_REQUEST = ["load", "soak"] as const;

export const BENCHMARKS = ["tokens", "compaction", "pipeline", "turn-bytes", "turn-cpu", "long-session", "session-memory", "mcp", "telegram-polling", "schedule", "discord-split", "streaming", "budget", "llm-client"] as const;

interface BenchModule {
  main?: (args?: string[]) => Promise<string | void> | string | void;
}

export async function main(args: string[] = process.argv.slice(2)): Promise<string> {
  const names = args.filter((arg) => !arg.startsWith("--"));
  const flags = args.filter((arg) => arg.startsWith("--"));
  const wanted: string[] = names.length > 0 ? [...BENCHMARKS, ...ON_REQUEST].filter((name) => names.includes(name)) : [...BENCHMARKS];
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
      // Each benchmark runs with its own defaults and the flags given after its name.
      const result = await module.main(flags);
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
