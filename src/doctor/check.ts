/**
 * What a check reports, and how reports become one line each and an exit code. Shared by
 * `npm run doctor` (every check, printed) and start-up (the fast ones, refusing to start on a
 * failure).
 */

/** In the order they are printed; a failure's exit code is its group's. */
export const CHECK_GROUPS = ["config", "redis", "llm", "platform", "mcp"] as const;
export type CheckGroup = (typeof CHECK_GROUPS)[number];

export type CheckStatus = "ok" | "warn" | "fail" | "skip";

export interface CheckResult {
  group: CheckGroup;
  status: CheckStatus;
  /** What was found, in one line. Never a secret or a URL that carries one. */
  detail: string;
  /** What to do about it, in one line (warnings and failures). */
  fix?: string;
  /**
   * A failure that waiting cannot fix (a key or token the service rejected): start-up refuses
   * on it. Unreachable services are not definitive at start: the pipeline waits and retries.
   */
  definitive?: boolean;
}

/**
 * A check contributed by a capability (the MCP room adds one per configured server). It must
 * answer within `timeoutMs` and never throw: a problem is a `fail` result with its fix.
 */
export interface DoctorCheck {
  group: CheckGroup;
  run(options: { timeoutMs: number }): Promise<CheckResult[]>;
}

/**
 * Exit codes of `npm run doctor` (and of `npm start` when a start-up check refuses):
 * 0 all passed; 1 only warnings; 2 configuration; 3 Redis; 4 LLM (main model or summarizer);
 * 5 Telegram or Discord; 6 MCP servers. With failures in several groups, the first in this order.
 */
export const EXIT_CODES: Readonly<Record<CheckGroup | "ok" | "warnings", number>> = {
  ok: 0, warnings: 1, config: 2, redis: 3, llm: 4, platform: 5, mcp: 6,
};

/** A start-up check refused: main.ts prints the lines (one per failure, with its fix) and exits with the code. */
export class StartupRefusedError extends Error {
  override readonly name = "StartupRefusedError";
  constructor(readonly exitCode: number, readonly lines: readonly string[]) {
    super(lines.join("\n"));
  }
}

export function exitCodeOf(results: readonly CheckResult[]): number {
  for (const group of CHECK_GROUPS) {
    if (results.some((result) => result.group === group && result.status === "fail")) return EXIT_CODES[group];
  }
  return results.some((result) => result.status === "warn") ? EXIT_CODES.warnings : EXIT_CODES.ok;
}

const LABELS: Record<CheckStatus, { text: string; color: string }> = {
  ok: { text: "ok  ", color: "32" },
  warn: { text: "WARN", color: "33" },
  fail: { text: "FAIL", color: "31;1" },
  skip: { text: "skip", color: "2" },
};

/** `FAIL  llm       key rejected … → fix: …`: one line per result, whatever its length. */
export function formatResult(result: CheckResult, options: { color: boolean }): string {
  const label = LABELS[result.status];
  const status = options.color ? `\x1b[${label.color}m${label.text}\x1b[0m` : label.text;
  const fix = result.fix && result.status !== "ok" ? ` → fix: ${result.fix}` : "";
  return `${status}  ${result.group.padEnd(8)}  ${result.detail}${fix}`.replace(/[\r\n]+/g, " ");
}

export const ok = (group: CheckGroup, detail: string): CheckResult => ({ group, status: "ok", detail });
export const warn = (group: CheckGroup, detail: string, fix: string): CheckResult => ({ group, status: "warn", detail, fix });
export const fail = (group: CheckGroup, detail: string, fix: string): CheckResult => ({ group, status: "fail", detail, fix });
export const skip = (group: CheckGroup, detail: string): CheckResult => ({ group, status: "skip", detail });

/** Why a network call failed, in a few words: `connection refused`, `no such host`, `timed out`. */
export function describeNetworkError(error: unknown): string {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (current instanceof Error && !seen.has(current)) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (current.name === "TimeoutError" || current.name === "AbortError") return "timed out";
    if (code === "ECONNREFUSED") return "connection refused";
    if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "no such host";
    if (code === "ECONNRESET") return "connection reset";
    if (code === "ETIMEDOUT" || code === "UND_ERR_CONNECT_TIMEOUT") return "timed out";
    if ((typeof code === "string" && code.startsWith("ERR_TLS")) || code === "CERT_HAS_EXPIRED" || code === "DEPTH_ZERO_SELF_SIGNED_CERT") return `TLS error (${String(code)})`;
    current = current.cause;
  }
  return error instanceof Error ? error.message.split("\n")[0] ?? "unknown error" : String(error);
}

/** Host and port of a URL, for messages: never its credentials, path or query (they may hold a token). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid URL)";
  }
}
