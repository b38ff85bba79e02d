import { renameSync, statSync } from "node:fs";
import { pino, type Logger, type DestinationStream } from "pino";

export type { Logger };

/**
 * Paths whose values are secrets. pino matches them exactly (`*` is one level), so both the
 * bare key and one level of nesting are listed. Never log raw payloads or URLs that embed a
 * token: redaction does not look inside strings.
 */
export const REDACT_PATHS = [
  "token", "*.token", "botToken", "*.botToken",
  "apiKey", "*.apiKey", "api_key", "*.api_key",
  "authorization", "*.authorization", "headers.authorization", "*.headers.authorization",
  "LLM_API_KEY", "*.LLM_API_KEY", "OPENAI_API_KEY", "*.OPENAI_API_KEY", "SUMMARY_API_KEY", "*.SUMMARY_API_KEY",
  "TELEGRAM_BOT_TOKEN", "*.TELEGRAM_BOT_TOKEN", "DISCORD_BOT_TOKEN", "*.DISCORD_BOT_TOKEN",
  "TELEGRAM_WEBHOOK_SECRET", "*.TELEGRAM_WEBHOOK_SECRET",
];

/**
 * The process logger. JSON lines on stderr, so stdout stays free for the console chat's
 * replies; `docker logs` shows both streams.
 */
export function createLogger(options: { level: string; destination?: DestinationStream; secrets?: readonly string[] }): Logger {
  // Each secret as written and as JSON writes it inside a string (a quote or backslash escaped).
  const secrets = [...new Set((options.secrets ?? []).filter((secret) => secret.length >= 6).flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]))]
    // Longest first, so a secret containing another is masked whole.
    .sort((a, b) => b.length - a.length);
  return pino(
    {
      level: options.level,
      base: { pid: process.pid },
      redact: { paths: REDACT_PATHS, censor: "[REDACTED]" },
      // Last line of defence: a secret that slipped into a message string (an error from a
      // library that quotes a URL) is masked before the line is written.
      hooks: secrets.length === 0 ? {} : {
        streamWrite: (line: string) => secrets.reduce((text, secret) => text.split(secret).join("[REDACTED]"), line),
      },
    },
    options.destination ?? pino.destination({ fd: 2, sync: false }),
  );
}

export const silentLogger: Logger = pino({ level: "silent" });

/** A log file past this size is moved to `<file>.1` when the process starts. */
const ROTATE_AT_BYTES = 10 * 1024 * 1024;

/**
 * Where an interactive terminal's logs go (the console chat owns the screen): every line to
 * `file` (created with its folder), and each warning or error also summarised to `echo` as one
 * short line. The logger's level still decides what is written at all.
 */
export function terminalLogDestination(options: { file: string; echo: (summary: string, level: number) => void }): DestinationStream {
  try {
    if (statSync(options.file).size > ROTATE_AT_BYTES) renameSync(options.file, `${options.file}.1`);
  } catch {
    // No file yet.
  }
  // Synchronous: a terminal chat logs little, and nothing is lost when the process exits.
  const file = pino.destination({ dest: options.file, mkdir: true, sync: true });
  const echo: DestinationStream = {
    write: (line: string) => {
      const summary = summarizeLogLine(line);
      if (summary) options.echo(summary.text, summary.level);
    },
  };
  return pino.multistream([{ level: "trace", stream: file }, { level: "warn", stream: echo }]);
}

/** One short line for a JSON log line: its message and, when there is one, its error's first line. */
export function summarizeLogLine(line: string): { text: string; level: number } | undefined {
  let entry: unknown;
  try {
    entry = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof entry !== "object" || entry === null) return undefined;
  const { level, msg, err } = entry as { level?: unknown; msg?: unknown; err?: { message?: unknown } };
  const message = typeof msg === "string" ? msg : "";
  const cause = typeof err?.message === "string" ? err.message.split("\n")[0] : undefined;
  const text = [message, cause].filter((part) => part !== undefined && part !== "").join(": ");
  return text === "" ? undefined : { text, level: typeof level === "number" ? level : 40 };
}
