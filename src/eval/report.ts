/**
 * The eval's table (docs/eval.md, "Reading the table"): pass/total and % per probe category and
 * overall, one column per summarizer; then each column's compactions and calls; with `verbose`,
 * every probe's answer and what it missed.
 */
import { categoryScores, type ColumnResult, type EvalResult } from "./run.js";

const percent = (passed: number, total: number) => (total === 0 ? "-" : `${Math.round((100 * passed) / total)}%`);
const cell = (passed: number, total: number) => `${passed}/${total} ${percent(passed, total)}`;
const thousands = (value: number) => value.toLocaleString("en-US");

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? "").length)));
  return rows.map((row) => row.map((text, column) => text.padEnd(widths[column]!)).join("  ").trimEnd()).join("\n");
}

export function formatReport(result: EvalResult, options: { verbose?: boolean } = {}): string {
  const lines: string[] = [];
  const mains = [...new Set(result.columns.map((column) => column.mainModel))].join(", ");
  lines.push(`Compaction eval: dialogue ${result.dialogue} (${result.messages} messages over ${result.days} days), compacted after day${result.compactAfterDays.length === 1 ? "" : "s"} ${result.compactAfterDays.join(", ")}; main model ${mains}`);
  lines.push("");
  const scores = result.columns.map((column) => categoryScores(column));
  const header = ["category", ...result.columns.map((column) => (column.label === "configured" ? `summarizer ${column.summarizerModel}` : `${column.label} (${column.summarizerModel})`))];
  const rows = scores[0]!.map((row, index) => [row.category, ...scores.map((column) => cell(column[index]!.passed, column[index]!.total))]);
  lines.push(table([header, ...rows]));
  for (const column of result.columns) {
    lines.push("");
    lines.push(`${column.label}: ${describeColumn(column)}`);
    if (options.verbose) lines.push(...probeDetails(column));
  }
  const errors = result.columns.flatMap((column) => column.probes.filter((probe) => probe.error).map((probe) => `${column.label}: probe ${probe.id}: ${probe.error}`));
  if (errors.length > 0) {
    lines.push("");
    lines.push("Probes without an answer (the run failed):");
    lines.push(...errors.map((line) => `  ${line}`));
  }
  return `${lines.join("\n")}\n`;
}

function describeColumn(column: ColumnResult): string {
  const parts: string[] = [];
  for (const compaction of column.compactions) {
    parts.push(`  after day ${compaction.afterDay} (${compaction.date}): ${compaction.messagesBefore} → ${compaction.messagesAfter} messages, ${thousands(compaction.tokensBefore)} → ${thousands(compaction.tokensAfter)} tokens`);
  }
  parts.push(`  probes asked over ${column.finalContextMessages} messages, ${thousands(column.finalContextTokens)} tokens`);
  for (const usage of column.usage) {
    const money = usage.usd > 0 ? `, $${usage.usd.toFixed(4)}` : "";
    const unreported = usage.unreported > 0 ? ` (${usage.unreported} answers reported no usage)` : "";
    parts.push(`  ${usage.role} ${usage.model}: ${usage.calls} calls, ${thousands(usage.promptTokens)} tokens in, ${thousands(usage.completionTokens)} out${money}${unreported}`);
  }
  return `summarizer ${column.summarizerModel}\n${parts.join("\n")}`;
}

function probeDetails(column: ColumnResult): string[] {
  const lines: string[] = [];
  for (const probe of column.probes) {
    const mark = probe.error ? "ERROR" : probe.pass ? "pass " : "FAIL ";
    lines.push(`  ${mark} ${probe.category}/${probe.id}: ${probe.question}`);
    if (probe.error) lines.push(`        ${probe.error}`);
    else lines.push(`        answer: ${probe.answer.replace(/\s*\n\s*/g, " ⏎ ")}`);
    if (!probe.error && probe.missing.length > 0) lines.push(`        missing: ${probe.missing.join("; ")}`);
    if (probe.rejected.length > 0) lines.push(`        has the old value: ${probe.rejected.join("; ")}`);
  }
  return lines;
}
