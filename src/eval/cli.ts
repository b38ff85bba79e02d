/**
 * `npm run eval [-- options]`: the options, the check that a model is configured, the output
 * (table or JSON on stdout, progress on stderr) and the exit code. src/cli/eval.ts runs it.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { ConfigError, loadConfig, mainApiKey, withSecretsFile, type Config } from "../../config/index.js";
import { catalogueFromConfig } from "../models/catalogue.js";
import { DEFAULT_DIALOGUE, DialogueError, loadDialogue } from "./dialogue.js";
import { formatReport } from "./report.js";
import { categoryScores, EvalError, EvalUsageError, runEval } from "./run.js";

export const EVAL_USAGE = `usage: npm run eval [-- options]
Plays a multi-day dialogue into a session, forces compactions with your configured summarizer,
then asks probe questions to your main model over the compacted context and scores the answers.
Uses the bot's configuration (LLM_*, SUMMARY_*, the config file's models: catalogue). docs/eval.md.

  --summarizer a,b      one column per summarizer: catalogue model names (without a models:
                        section, model ids on SUMMARY_BASE_URL or LLM_BASE_URL)
  --prompt a.txt,default  one column per summary-prompt variant (crossed with --summarizer): a file
                        with the summarizer's system prompt ({length} becomes "about N tokens");
                        "default" is the built-in prompt
  --model NAME          the main model (catalogue name or alias); default: the catalogue's default
  --compact-after 1,2,4,5   days after which a compaction is forced (default 1,2,4,5)
  --dialogue FILE       another dialogue file (default eval/dialogue/heron-launch.yaml)
  --min-score N         exit 3 when a column's overall score is under N percent
  --verbose             every probe's answer and what it missed
  --json                the whole result as JSON on stdout (progress stays on stderr)

Exit codes: 0 done, 1 usage or no model configured, 2 the run failed (a compaction failed,
a probe got no answer or the model erred), 3 under --min-score.`;

export const EXIT = { ok: 0, usage: 1, failed: 2, belowMinScore: 3 } as const;

export interface EvalCliIo {
  env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
}

interface ParsedArgs {
  summarizers?: string[];
  prompts?: string[];
  model?: string;
  compactAfter: number[];
  dialogue: string;
  minScore?: number;
  verbose: boolean;
  json: boolean;
  help: boolean;
}

const DEFAULT_COMPACT_AFTER = [1, 2, 4, 5];

class UsageError extends Error {}

export function parseEvalArgs(argv: readonly string[]): ParsedArgs {
  const parsed: ParsedArgs = { compactAfter: DEFAULT_COMPACT_AFTER, dialogue: DEFAULT_DIALOGUE, verbose: false, json: false, help: false };
  const list = (value: string) => value.split(",").map((item) => item.trim()).filter((item) => item !== "");
  for (let index = 0; index < argv.length; index += 1) {
    const arg = argv[index]!;
    const [flag, inline] = arg.startsWith("--") && arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = () => {
      const next = inline ?? argv[++index];
      if (next === undefined || next === "") throw new UsageError(`${flag} needs a value`);
      return next;
    };
    switch (flag) {
      case "--summarizer":
      case "--summarizers":
        parsed.summarizers = list(value());
        break;
      case "--prompt":
      case "--prompts":
        parsed.prompts = list(value());
        break;
      case "--model":
        parsed.model = value();
        break;
      case "--compact-after": {
        const days = list(value()).map(Number);
        if (days.length === 0 || days.some((day) => !Number.isInteger(day) || day < 1)) throw new UsageError("--compact-after takes day numbers from 1, e.g. 1,2,4");
        parsed.compactAfter = days;
        break;
      }
      case "--dialogue":
        parsed.dialogue = value();
        break;
      case "--min-score": {
        const score = Number(value());
        if (!(score >= 0 && score <= 100)) throw new UsageError("--min-score takes a percentage from 0 to 100");
        parsed.minScore = score;
        break;
      }
      case "--verbose":
      case "-v":
        parsed.verbose = true;
        break;
      case "--json":
        parsed.json = true;
        break;
      case "--help":
      case "-h":
        parsed.help = true;
        break;
      default:
        throw new UsageError(`unknown option ${arg}`);
    }
  }
  return parsed;
}

/** Guidance when nothing says which model to talk to (the default endpoint without a key). */
export function notConfiguredReason(config: Config): string | undefined {
  const main = catalogueFromConfig(config).default;
  const defaultEndpoint = (main.endpoint ?? config.LLM_BASE_URL) === "https://api.openai.com/v1";
  if (!defaultEndpoint || main.apiKey !== undefined || mainApiKey(config) !== undefined) return undefined;
  return `No model is configured: the eval talks to the same models as the bot.
Set LLM_BASE_URL (any OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama), LLM_MODEL
and LLM_API_KEY (or OPENAI_API_KEY) in the environment or in config/longhaul.yaml, optionally SUMMARY_MODEL /
SUMMARY_BASE_URL for a separate summarizer, then run npm run eval again. See docs/eval.md.`;
}

function readPrompt(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new EvalUsageError(`--prompt ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (text.trim() === "") throw new EvalUsageError(`--prompt ${file}: the file is empty`);
  return text.trim();
}

export async function runEvalCli(argv: readonly string[], io: EvalCliIo): Promise<number> {
  let args: ParsedArgs;
  try {
    args = parseEvalArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.err(`${error.message}\n${EVAL_USAGE}\n`);
    return EXIT.usage;
  }
  if (args.help) {
    io.out(`${EVAL_USAGE}\n`);
    return EXIT.ok;
  }
  let config: Config;
  try {
    config = loadConfig(withSecretsFile(io.env));
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.err(`${error.message}\n`);
    return EXIT.usage;
  }
  const reason = notConfiguredReason(config);
  if (reason) {
    io.err(`${reason}\n`);
    return EXIT.usage;
  }
  try {
    const dialogue = loadDialogue(args.dialogue);
    const prompts = args.prompts?.map((file) => (file === "default" ? { label: "default" } : { label: basename(file).replace(/\.[^.]*$/, ""), system: readPrompt(file) }));
    const result = await runEval({
      config,
      dialogue,
      compactAfterDays: args.compactAfter,
      ...(args.model ? { model: args.model } : {}),
      ...(args.summarizers ? { summarizers: args.summarizers } : {}),
      ...(prompts ? { prompts } : {}),
      onProgress: (line) => io.err(`${line}\n`),
    });
    io.out(args.json ? `${JSON.stringify(result, null, 2)}\n` : formatReport(result, { verbose: args.verbose }));
    const failed = result.columns.flatMap((column) => column.probes.filter((probe) => probe.error).map((probe) => `${column.label}: probe ${probe.id}: ${probe.error}`));
    if (failed.length > 0) {
      io.err(`eval failed: ${failed.length} probe${failed.length === 1 ? "" : "s"} got no answer:\n${failed.map((line) => `  ${line}`).join("\n")}\n`);
      return EXIT.failed;
    }
    if (args.minScore !== undefined) {
      const low = result.columns.filter((column) => {
        const overall = categoryScores(column).at(-1)!;
        return (100 * overall.passed) / overall.total < args.minScore!;
      });
      if (low.length > 0) {
        io.err(`under --min-score ${args.minScore}%: ${low.map((column) => column.label).join(", ")}\n`);
        return EXIT.belowMinScore;
      }
    }
    return EXIT.ok;
  } catch (error) {
    if (error instanceof EvalUsageError || error instanceof DialogueError) {
      io.err(`${error.message}\n`);
      return EXIT.usage;
    }
    if (error instanceof EvalError) {
      io.err(`eval failed: ${error.message}\n`);
      return EXIT.failed;
    }
    io.err(`eval failed: ${error instanceof Error ? error.message : String(error)}\n`);
    return EXIT.failed;
  }
}
