/**
 * Scores one probe's answer by normalized string match: every required item must appear (any of
 * its alternatives), no rejected string may (a corrected fact's old value). Normalizing makes case,
 * accents, markdown emphasis, typographic quotes and dashes, thousands separators and spacing
 * not matter; a match needs a non-alphanumeric character (or the end) on both sides, so "40"
 * does not match "140".
 */
import type { Probe } from "./dialogue.js";

export interface ProbeScore {
  pass: boolean;
  /** Items none of whose alternatives appeared (each shown by its first alternative). */
  missing: string[];
  /** Rejected strings that appeared. */
  rejected: string[];
}

export function normalize(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/\p{M}/gu, "")
    .toLowerCase()
    .replace(/[‘’‚′]/g, "'")
    .replace(/[“”„″]/g, '"')
    .replace(/[‐‑‒–—−]/g, "-")
    .replace(/\*\*|__|`/g, "")
    // 4,380.50 → 4380.50 and 12 000 → 12000 (a thin or no-break space too)
    .replace(/(\d)[, \u00a0\u202f](?=\d{3}(?!\d))/g, "$1")
    .replace(/\s+/g, " ")
    .trim();
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Whether `needle` occurs in `haystack` (both normalized) with no letter or digit touching it. */
export function containsTerm(haystack: string, needle: string): boolean {
  const term = normalize(needle);
  if (term === "") return false;
  return new RegExp(`(?<![\\p{L}\\p{N}])${escape(term)}(?![\\p{L}\\p{N}])`, "u").test(normalize(haystack));
}

export function scoreAnswer(probe: Pick<Probe, "items" | "reject">, answer: string): ProbeScore {
  const missing = probe.items.filter((alternatives) => !alternatives.some((alternative) => containsTerm(answer, alternative))).map((alternatives) => alternatives[0]!);
  const rejected = probe.reject.filter((old) => containsTerm(answer, old));
  return { pass: missing.length === 0 && rejected.length === 0, missing, rejected };
}
