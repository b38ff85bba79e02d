/**
 * Where Discord's renderer sees code in a message: fenced code blocks and inline code spans.
 *
 * Discord's client is not CommonMark. It parses messages with simple-markdown, inline, trying
 * its rules at every position where the previous token ended; its plain-text rule stops before
 * every punctuation character, so each backtick and backslash is such a position. The rules
 * that matter for splitting, with the client's own expressions:
 *
 * - codeBlock `^```(?:([a-z0-9_+\-.#]+?)\n)?\n*([^\n][^]*?)\n*```` (case-insensitive): three
 *   backticks open a block wherever they stand, at a line start or not ("Example: ```js"),
 *   indented or not (a fence under a list item); the language tag counts only when a newline
 *   follows it directly; the first later ``` closes the block; an opener without a closer
 *   is plain text.
 * - inlineCode `^(`+)([\s\S]*?[^`])\1(?!`)`: a run of backticks up to the next run of the same
 *   length, across lines.
 * - escape `^\\([^0-9A-Za-z\s])`: a backslash takes the next character literally.
 *
 * Not modelled (they rarely hold backticks in model output): URLs and links swallowing
 * backticks, emphasis spans cutting a fence in two.
 */

export type Segment =
  | { kind: "text"; start: number; end: number }
  | { kind: "inline-code"; start: number; end: number }
  | {
      kind: "code-block";
      start: number;
      end: number;
      /** The language tag as written ("" when none counts). */
      language: string;
      /** The code itself: after the opener (and newlines), before the newlines and closer. */
      contentStart: number;
      contentEnd: number;
    };

export type CodeBlock = Extract<Segment, { kind: "code-block" }>;

const BACKTICK = 96;
const BACKSLASH = 92;
const LANGUAGE_CHAR = /[a-z0-9_+\-.#]/i;
const NOT_ESCAPABLE = /[0-9A-Za-z\s]/;

/** The text as Discord's renderer splits it: every index belongs to exactly one segment. */
export function scanDiscordMarkdown(text: string): Segment[] {
  const segments: Segment[] = [];
  const runs = new BacktickRuns(text);
  const lastFence = text.lastIndexOf("```");
  let textStart = 0;
  let index = 0;
  const take = (segment: Segment): void => {
    if (textStart < segment.start) segments.push({ kind: "text", start: textStart, end: segment.start });
    segments.push(segment);
    index = textStart = segment.end;
  };
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (code === BACKSLASH && index + 1 < text.length && !NOT_ESCAPABLE.test(text.charAt(index + 1))) {
      index += 2;
    } else if (code === BACKTICK) {
      const found = codeBlockAt(text, index, lastFence) ?? inlineCodeAt(text, index, runs);
      if (found) take(found);
      // Neither rule matches here, nor at the later backticks of this run (their candidates
      // are a subset of these): the whole run is plain text.
      else index = runs.endOf(index);
    } else {
      index += 1;
    }
  }
  if (textStart < text.length) segments.push({ kind: "text", start: textStart, end: text.length });
  return segments;
}

function codeBlockAt(text: string, start: number, lastFence: number): CodeBlock | undefined {
  if (!text.startsWith("```", start)) return undefined;
  const afterOpener = start + 3;
  let tagEnd = afterOpener;
  while (tagEnd < text.length && LANGUAGE_CHAR.test(text.charAt(tagEnd))) tagEnd += 1;
  // With a tag: it must be followed by a newline. Without: the content starts right away.
  if (tagEnd > afterOpener && text.charCodeAt(tagEnd) === 10) {
    const block = blockFrom(text, start, tagEnd + 1, lastFence);
    if (block) return { ...block, language: text.slice(afterOpener, tagEnd) };
  }
  const block = blockFrom(text, start, afterOpener, lastFence);
  return block && { ...block, language: "" };
}

/** `\n*([^\n][^]*?)\n*```` from `from`: the content and the first closer after it. */
function blockFrom(text: string, start: number, from: number, lastFence: number): Omit<CodeBlock, "language"> | undefined {
  let contentStart = from;
  while (text.charCodeAt(contentStart) === 10) contentStart += 1;
  if (contentStart >= text.length || contentStart + 1 > lastFence) return undefined;
  const closer = text.indexOf("```", contentStart + 1);
  if (closer === -1) return undefined;
  let contentEnd = closer;
  while (contentEnd > contentStart + 1 && text.charCodeAt(contentEnd - 1) === 10) contentEnd -= 1;
  return { kind: "code-block", start, end: closer + 3, contentStart, contentEnd };
}

/**
 * `^(`+)([\s\S]*?[^`])\1(?!`)`: the longest opening run that has a closing run of exactly its
 * length later (a closing run must follow a non-backtick and be followed by one: a whole run).
 */
function inlineCodeAt(text: string, start: number, runs: BacktickRuns): Segment | undefined {
  const runEnd = runs.endOf(start);
  for (let length = runEnd - start; length >= 1; length -= 1) {
    const closer = runs.firstOfLength(length, runEnd);
    if (closer !== -1) return { kind: "inline-code", start, end: closer + length };
  }
  return undefined;
}

/** The maximal runs of backticks in a text, by length, for O(log n) closer lookups. */
class BacktickRuns {
  private readonly startsByLength = new Map<number, number[]>();
  private readonly ends = new Map<number, number>();

  constructor(text: string) {
    let index = text.indexOf("`");
    while (index !== -1) {
      let end = index;
      while (text.charCodeAt(end) === BACKTICK) end += 1;
      const length = end - index;
      const starts = this.startsByLength.get(length) ?? [];
      starts.push(index);
      this.startsByLength.set(length, starts);
      this.ends.set(index, end);
      index = text.indexOf("`", end);
    }
  }

  /** End of the run holding `index` (which may be inside a run, after an escaped backtick). */
  endOf(index: number): number {
    let start = index;
    while (start > 0 && !this.ends.has(start)) start -= 1;
    return this.ends.get(start) ?? index + 1;
  }

  /** Start of the first whole run of exactly `length` backticks at or after `from`, else -1. */
  firstOfLength(length: number, from: number): number {
    const starts = this.startsByLength.get(length);
    if (!starts) return -1;
    let low = 0;
    let high = starts.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((starts[middle] ?? 0) < from) low = middle + 1;
      else high = middle;
    }
    return starts[low] ?? -1;
  }
}
