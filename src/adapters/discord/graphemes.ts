/**
 * Grapheme boundaries (what a reader sees as one character: a flag, a family emoji, a letter
 * with its accents), from Intl.Segmenter. Cutting anywhere else shows broken glyphs.
 */

const segmenter = new Intl.Segmenter(undefined, { granularity: "grapheme" });
/** Longer than any grapheme met in practice (the longest emoji ZWJ sequences take ~35 units). */
const LOOKAHEAD = 64;

/**
 * The last grapheme boundary in [from, index]. `from` must be a boundary itself (the start of
 * the text or of a part). The text after `index` is read too: whether `index` is a boundary
 * depends on the characters that follow it (a regional-indicator pair, a ZWJ sequence).
 */
export function boundaryAtOrBefore(text: string, index: number, from = 0): number {
  if (index >= text.length) return text.length;
  let boundary = from;
  for (const { index: start } of segmenter.segment(text.slice(from, Math.min(text.length, index + LOOKAHEAD)))) {
    if (from + start > index) break;
    boundary = from + start;
  }
  return boundary;
}
