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
  // Between two ASCII characters (but CR LF) there is always a boundary.
  const before = text.charCodeAt(index - 1);
  const after = text.charCodeAt(index);
  if (index <= from || (before < 0x80 && after < 0x80 && !(before === 13 && after === 10))) return Math.max(index, from);
  let boundary = from;
  for (const { index: start } of segmenter.segment(text.slice(from, Math.min(text.length, index + LOOKAHEAD)))) {
    if (from + start > index) break;
    boundary = from + start;
  }
  return boundary;
}
