/** Small helpers shared by the benchmarks: percentiles and Markdown tables. */

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export const median = (values: readonly number[]) => percentile([...values].sort((a, b) => a - b), 50);

export function table(headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const lines = [`| ${headers.join(" | ")} |`, `|${headers.map(() => "---").join("|")}|`];
  for (const row of rows) lines.push(`| ${row.map((cell) => (typeof cell === "number" ? format(cell) : cell)).join(" | ")} |`);
  return lines.join("\n");
}

const format = (value: number) => (Number.isInteger(value) ? value.toLocaleString("en-US") : value.toFixed(value < 10 ? 2 : 1));

export const isMain = (url: string) => url === `file://${process.argv[1]}`;
