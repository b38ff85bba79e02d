/**
 * `npm run eval`: the compaction eval against the configured models (src/eval, docs/eval.md).
 * Exit codes: EXIT in src/eval/cli.ts.
 */
import { runEvalCli } from "../eval/cli.js";

runEvalCli(process.argv.slice(2), {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`eval crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 70;
  },
);
