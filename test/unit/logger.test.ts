import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger, summarizeLogLine, terminalLogDestination } from "../../src/logger.js";

describe("terminal logging", () => {
  let dir: string;
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function logInto(file: string, write: (logger: ReturnType<typeof createLogger>) => void) {
    const echoed: Array<{ summary: string; level: number }> = [];
    const logger = createLogger({ level: "info", secrets: ["sk-SECRET-value"], destination: terminalLogDestination({ file, echo: (summary, level) => echoed.push({ summary, level }) }) });
    write(logger);
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    return echoed;
  }

  it("writes every line to the file (folders created) and echoes only warnings and errors, one short line each", async () => {
    dir = mkdtempSync(join(tmpdir(), "longhaul-log-"));
    const file = join(dir, "logs", "longhaul.log");
    const echoed = await logInto(file, (logger) => {
      logger.debug("too quiet");
      logger.info({ sessionKey: "console:you" }, "turn-committed");
      logger.warn("redis has no AOF");
      logger.error({ err: new Error("connect ECONNREFUSED 127.0.0.1:6379\n    at stack frame") }, "redis-error with key sk-SECRET-value");
    });
    const lines = readFileSync(file, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { msg: string });
    expect(lines.map((line) => line.msg)).toEqual(["turn-committed", "redis has no AOF", "redis-error with key [REDACTED]"]);
    expect(echoed).toEqual([
      { summary: "redis has no AOF", level: 40 },
      { summary: "redis-error with key [REDACTED]: connect ECONNREFUSED 127.0.0.1:6379", level: 50 },
    ]);
  });

  it("moves a log file past 10 MB aside when it opens", async () => {
    dir = mkdtempSync(join(tmpdir(), "longhaul-log-"));
    const file = join(dir, "longhaul.log");
    writeFileSync(file, "x".repeat(10 * 1024 * 1024 + 1));
    await logInto(file, (logger) => logger.info("fresh"));
    expect(statSync(`${file}.1`).size).toBe(10 * 1024 * 1024 + 1);
    expect(readFileSync(file, "utf8")).toContain('"msg":"fresh"');
  });

  it("summarises a JSON log line, and ignores what is not one", () => {
    expect(summarizeLogLine('{"level":40,"msg":"slow","err":{"message":"first\\nsecond"}}')).toEqual({ text: "slow: first", level: 40 });
    expect(summarizeLogLine("not json")).toBeUndefined();
  });

  it("masks a secret wherever it lands in a line, also where JSON escaped a quote or backslash in it", async () => {
    const lines: string[] = [];
    const destination = { write: (line: string) => void lines.push(line) };
    const logger = createLogger({ level: "info", destination, secrets: ['pa"ss\\word-77', "abc123-secret", "abc123-secret-longer"] });
    logger.warn({ detail: 'failed with pa"ss\\word-77 and abc123-secret-longer' }, "oops abc123-secret");
    await new Promise<void>((resolve) => logger.flush(() => resolve()));
    const line = lines.join("");
    expect(line).not.toMatch(/pa\\"ss|abc123/);
    expect(JSON.parse(line)).toMatchObject({ detail: "failed with [REDACTED] and [REDACTED]", msg: "oops [REDACTED]" });
  });
});
