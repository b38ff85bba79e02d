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
  const secrets = (options.secrets ?? []).filter((secret) => secret.length >= 6);
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
