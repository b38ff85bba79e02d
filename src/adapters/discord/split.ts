import { scanDiscordMarkdown, type CodeBlock, type Segment } from "./discord-markdown.js";
import { renderTables } from "./tables.js";

/**
 * Splits a reply into Discord-sized messages that each render as their stretch of the whole
 * would: code stays code, prose stays prose (see discord-markdown.ts for how Discord's client
 * finds code, which is not CommonMark).
 *
 * Discord refuses `content` longer than 2,000 characters (it counts code points; UTF-16 units
 * are never fewer, so they are a safe measure). Parts aim at ~1,900 so the fence lines added
 * when a code block is cut (`\n` + three backticks closing it, three backticks + language tag
 * reopening it) never push a part over. Cuts prefer a paragraph break, then a line break, then
 * a space, then any grapheme boundary (never inside an emoji, a flag or an accented letter),
 * and are never placed:
 *
 * - inside an inline code span, a run of backticks or an escape (`\``);
 * - inside a code block's fences, or so that either side of the block holds no code;
 * - mid-line where the next part would start with a heading, quote or list marker.
 *
 * A code block cut in two is closed at the end of one part and reopened, with its language
 * tag, at the start of the next. Only a span of inline code or a run of backticks longer than
 * a whole part cannot be kept whole.
 */

/** Discord's hard limit for message `content`. */
export const DISCORD_MESSAGE_LIMIT = 2000;
/** Where parts are cut; leaves room for the added fence lines. */
export const DISCORD_SPLIT_TARGET = 1900;

export interface SplitOptions {
  /** Hard ceiling per part. @defaultValue 2000 */
  maxLength?: number;
  /** Preferred part size; at least 64 and at most `maxLength`. @defaultValue 1900 */
  targetLength?: number;
}

/**
 * One part and where it comes from: `text` is `reopen + source.slice(start, end) + close`.
 * Between one part's `end` and the next one's `start` the source holds only the whitespace
 * the cut dropped.
 */
export interface PlannedPart {
  text: string;
  start: number;
  end: number;
  /** Three backticks and the language tag, when the part starts inside a code block. */
  reopen: string;
  /** The fence closing a code block that goes on in the next part. */
  close: string;
}

/** The longest fence added at a part's end: a newline and three backticks. */
const CLOSE_RESERVE = 4;
/** What Discord treats as a block at a line start: a cut must not make one out of mid-line text. */
const LINE_START_MARKUP = /^(?:#{1,3} |-# |>>> |> |[-*] |\d+\. )/;
/** Graphemes can run past the cut; reading this far ahead settles whether it is a boundary. */
const GRAPHEME_LOOKAHEAD = 64;
const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** The model's Markdown as Discord messages: tables as monospace blocks, then split. */
export function splitMessage(markdown: string, options: SplitOptions = {}): string[] {
  return planParts(renderTables(markdown), options).map((part) => part.text);
}

export function planParts(text: string, options: SplitOptions = {}): PlannedPart[] {
  const maxLength = options.maxLength ?? DISCORD_MESSAGE_LIMIT;
  const targetLength = Math.min(options.targetLength ?? DISCORD_SPLIT_TARGET, maxLength);
  if (targetLength < 64) throw new RangeError(`splitMessage: targetLength must be at least 64 (got ${targetLength})`);

  const map = new SegmentMap(text, scanDiscordMarkdown(text));
  const parts: PlannedPart[] = [];
  let position = 0;
  let block: CodeBlock | undefined;
  while (position < text.length) {
    // A language tag too long to repeat is dropped on reopening rather than starving the part.
    const reopen = block ? `\`\`\`${block.language.length <= targetLength / 4 ? block.language : ""}\n` : "";
    const { end, next } = new Cutter(text, map, position, targetLength - reopen.length - CLOSE_RESERVE, maxLength - reopen.length).cut();
    const open = map.blockAround(end);
    const continues = open !== undefined && end < open.contentEnd;
    const close = continues ? `${text.charCodeAt(end - 1) === 10 ? "" : "\n"}\`\`\`` : "";
    // Discord rejects empty messages; whitespace between parts is not worth one.
    if (text.slice(position, end).trim() !== "") parts.push({ text: reopen + text.slice(position, end) + close, start: position, end, reopen, close });
    block = continues ? open : undefined;
    position = next;
  }
  return parts;
}

/** Which segment holds an index, by binary search. */
class SegmentMap {
  private readonly starts: number[];
  /** Per code block: its first and last non-whitespace character of code. */
  private readonly code = new Map<CodeBlock, { first: number; last: number }>();

  constructor(private readonly text: string, private readonly segments: readonly Segment[]) {
    this.starts = segments.map((segment) => segment.start);
    for (const segment of segments) {
      if (segment.kind !== "code-block") continue;
      let first = segment.contentStart;
      while (first < segment.contentEnd && /\s/.test(text.charAt(first))) first += 1;
      let last = segment.contentEnd - 1;
      while (last > first && /\s/.test(text.charAt(last))) last -= 1;
      this.code.set(segment, { first, last });
    }
  }

  at(index: number): Segment | undefined {
    let low = 0;
    let high = this.starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >> 1;
      if ((this.starts[middle] ?? 0) <= index) low = middle;
      else high = middle - 1;
    }
    return this.segments[low];
  }

  /** The code block an index falls strictly inside of (not at its start or end). */
  blockAround(index: number): CodeBlock | undefined {
    const segment = this.at(index);
    return segment?.kind === "code-block" && segment.start < index && index < segment.end ? segment : undefined;
  }

  /** Whether a part may end at `end` and the next begin at `next` (the whitespace between dropped). */
  allows(end: number, next: number): boolean {
    const text = this.text;
    // Never split a run of backticks, or an escape from what it escapes.
    if (text.charCodeAt(end - 1) === 96 && text.charCodeAt(end) === 96) return false;
    if (text.charCodeAt(end - 1) === 92) return false;
    for (const index of end === next ? [end] : [end, next]) {
      const segment = this.at(index);
      if (segment?.kind === "inline-code" && segment.start < index && index < segment.end) return false;
    }
    const block = this.blockAround(end);
    if (block) {
      // Inside the code, with code on both sides: the fences added around the cut do the rest.
      const code = this.code.get(block);
      return code !== undefined && code.first < end && next <= code.last && next < block.contentEnd;
    }
    return next === 0 || text.charCodeAt(next - 1) === 10 || !LINE_START_MARKUP.test(text.slice(next, next + 8));
  }
}

/** Chooses where the part starting at `position` ends (`end`) and where the next one starts (`next`). */
class Cutter {
  private readonly limit: number;
  /** A part must hold more than whitespace: it ends after this index. */
  private readonly firstContent: number;
  private boundaries: Set<number> | undefined;

  constructor(
    private readonly text: string,
    private readonly map: SegmentMap,
    private readonly position: number,
    private readonly budget: number,
    /** What the part may hold when no fence is added at its end. */
    private readonly room: number,
  ) {
    this.limit = position + budget;
    const offset = text.slice(position, this.limit).search(/\S/);
    this.firstContent = offset === -1 ? this.limit : position + offset;
  }

  cut(): { end: number; next: number } {
    const { text, position, limit } = this;
    if (text.length <= limit) return { end: text.length, next: text.length };
    // Only the end of a code block (whitespace and its closer) is past the limit: keep the
    // block whole rather than reopen it for nothing, if the hard limit allows.
    const block = this.map.blockAround(limit);
    if (block && text.slice(Math.max(limit, block.contentStart), block.contentEnd).trim() === "" && block.end - position <= this.room) {
      return { end: block.end, next: skipNewlines(text, block.end) };
    }
    const half = position + Math.floor(this.budget / 2);
    return this.last("\n\n", half) ?? this.last("\n", half) ?? this.last(" ", half)
      ?? this.last("\n", position + 1) ?? this.last(" ", position + 1)
      ?? this.hard() ?? this.anyBoundary();
  }

  /** The last `separator` in [minimum, limit] where a cut is allowed. */
  private last(separator: string, minimum: number): { end: number; next: number } | undefined {
    const { text, position } = this;
    const window = text.slice(position, this.limit + separator.length);
    for (let offset = window.lastIndexOf(separator); offset > 0 && position + offset >= minimum; offset = window.lastIndexOf(separator, offset - 1)) {
      const index = position + offset;
      // Inside a code block every character counts (an approval's arguments, say): a space
      // stays at the end of the part, and only the one line break the added fences stand for
      // is dropped. Elsewhere the whitespace at the cut goes.
      const inCode = this.map.blockAround(index) !== undefined;
      const cut = inCode
        ? (separator === " " ? { end: index + 1, next: index + 1 } : { end: index, next: index + 1 })
        : separator === " "
          ? { end: index, next: index + 1 }
          : { end: trimNewlinesBefore(text, index, position), next: skipNewlines(text, index) };
      if (cut.end <= this.limit && this.acceptable(cut.end, cut.next)) return cut;
    }
    return undefined;
  }

  /** The last grapheme boundary before the limit where the markup allows a cut. */
  private hard(): { end: number; next: number } | undefined {
    for (let end = this.limit; end > this.position; end -= 1) {
      if (this.acceptable(end, end)) return { end, next: end };
    }
    return undefined;
  }

  /** Inline code or backticks longer than a part: cut at the last grapheme boundary, whatever the markup. */
  private anyBoundary(): { end: number; next: number } {
    for (let end = this.limit; end > this.position; end -= 1) if (this.isBoundary(end)) return { end, next: end };
    // A single grapheme longer than the budget: cut it, there is no other way.
    return { end: this.limit, next: this.limit };
  }

  private acceptable(end: number, next: number): boolean {
    return end > this.firstContent && this.isBoundary(end) && this.isBoundary(next) && this.map.allows(end, next);
  }

  private isBoundary(index: number): boolean {
    if (index >= this.text.length || index <= this.position) return true;
    // Between two ASCII characters there is always a boundary, except inside CR LF: no need
    // to ask the segmenter (the costly part of splitting long text).
    const before = this.text.charCodeAt(index - 1);
    const after = this.text.charCodeAt(index);
    if (before < 0x80 && after < 0x80) return !(before === 13 && after === 10);
    if (!this.boundaries) {
      // One pass over this part's window; the part starts on a boundary.
      this.boundaries = new Set();
      const window = this.text.slice(this.position, Math.min(this.text.length, this.limit + 1 + GRAPHEME_LOOKAHEAD));
      for (const { index: start } of graphemes.segment(window)) this.boundaries.add(this.position + start);
    }
    return this.boundaries.has(index);
  }
}

function skipNewlines(text: string, index: number): number {
  let next = index;
  while (text.charCodeAt(next) === 10) next += 1;
  return next;
}

function trimNewlinesBefore(text: string, index: number, position: number): number {
  let end = index;
  while (end > position && text.charCodeAt(end - 1) === 10) end -= 1;
  return end;
}
