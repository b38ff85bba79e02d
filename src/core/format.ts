/** Formatting helpers for command output: compact numbers, the context meter, durations. */

export function compactNumber(value: number): string {
  if (value >= 1_000_000) return `${trimZero((value / 1_000_000).toFixed(1))}M`;
  if (value >= 1_000) return `${Math.round(value / 1_000)}K`;
  return String(Math.round(value));
}

const trimZero = (text: string) => text.replace(/\.0$/, "");

/** `▓▓▓▓▓▓░░░░ 61% · 78K / 128K` */
export function contextMeter(tokens: number, window: number, width = 10): string {
  const ratio = window > 0 ? tokens / window : 0;
  const filled = Math.min(width, Math.max(0, Math.round(ratio * width)));
  return `${"▓".repeat(filled)}${"░".repeat(width - filled)} ${Math.round(ratio * 100)}% · ${compactNumber(tokens)} / ${compactNumber(window)}`;
}

export function duration(ms: number): string {
  const minutes = Math.floor(ms / 60_000);
  const days = Math.floor(minutes / 1_440);
  const hours = Math.floor((minutes % 1_440) / 60);
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${minutes % 60} min`;
  return `${minutes} min`;
}

/** Dollars; sub-dollar amounts with four decimals, since a turn often costs fractions of a cent. */
export function usd(amount: number): string {
  return amount < 1 ? `$${amount.toFixed(4)}` : `$${amount.toFixed(2)}`;
}
