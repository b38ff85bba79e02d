/**
 * Splits a reply into Discord-sized messages.
 *
 * Discord refuses `content` longer than 2,000 characters. Parts aim at ~1,900 so the fence
 * lines added when a code block is cut (`\n` + three backticks closing it, three backticks +
 * language tag reopening it) never push a part over the limit. Cuts prefer a paragraph break,
 * then a line break, then a space, and fall back to a hard cut (never inside a surrogate pair).
 *
 * Code fences follow Discord's renderer, not CommonMark: a line that starts with three
 * backticks opens a block when none is open and closes the open one otherwise. A block that
 * spans two parts is closed at the end of the first and reopened, with the same language tag,
 * at the start of the next, so every part renders on its own.
 */

/** Discord's hard limit for message `content` (UTF-16 units are a safe upper bound). */
export const DISCORD_MESSAGE_LIMIT = 2000;
/** Where parts are cut; leaves room for the added fence lines. */
export const DISCORD_SPLIT_TARGET = 1900;

export interface SplitOptions {
  /** Hard ceiling per part. @defaultValue 2000 */
  maxLength?: number;
  /** Preferred part size; at least 64 and at most `maxLength`. @defaultValue 1900 */
  targetLength?: number;
}

/** A line starting (after up to three spaces) with three backticks. */
const FENCE_LINE = /^ {0,3}```/;
/** Language tags Discord highlights; anything else is dropped when a block is reopened. */
const LANGUAGE_TAG = /^[\w+\-.#]{1,32}$/;
/** The longest fence line added at a part's end: a newline and three backticks. */
const CLOSE_RESERVE = 4;

interface OpenFence {
  /** The language tag to reopen with ("" when the block had none or an unusable one). */
  language: string;
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

export function splitMessage(text: string, options: SplitOptions = {}): string[] {
  return planParts(text, options).map((part) => part.text);
}

export function planParts(text: string, options: SplitOptions = {}): PlannedPart[] {
  const maxLength = options.maxLength ?? DISCORD_MESSAGE_LIMIT;
  const targetLength = Math.min(options.targetLength ?? DISCORD_SPLIT_TARGET, maxLength);
  if (targetLength < 64) throw new RangeError(`splitMessage: targetLength must be at least 64 (got ${targetLength})`);

  const parts: PlannedPart[] = [];
  let cursor: Cursor = { position: 0, lineStart: 0, fence: null };
  while (cursor.position < text.length) {
    const { after, ...part } = planPart(text, cursor, targetLength, maxLength);
    // Discord rejects empty messages; whitespace between parts is not worth one.
    if (text.slice(part.start, part.end).trim() !== "") parts.push(part);
    cursor = after;
  }
  return parts;
}

/** Where a part starts. Every search below stays inside the part, so splitting is linear. */
interface Cursor {
  position: number;
  /** Start of the line holding `position`; earlier than it after a cut inside a line. */
  lineStart: number;
  /** The code block open at `position`, to reopen. */
  fence: OpenFence | null;
}

interface PartPlan extends PlannedPart {
  after: Cursor;
}

function planPart(text: string, cursor: Cursor, targetLength: number, maxLength: number): PartPlan {
  const { position, fence } = cursor;
  const reopen = fence ? `\`\`\`${fence.language}\n` : "";
  const budget = targetLength - reopen.length - CLOSE_RESERVE;
  let { end, next } = chooseCut(text, cursor, budget);
  let scan = scanFences(text, position, end, fence);

  // Cut right after a block's opening line: move that line to the next part instead of
  // leaving an empty block behind.
  if (scan.fence && scan.openerStart > position + 1 && text.slice(lineEndWithin(text, scan.openerStart, end), end).trim() === "") {
    end = trimNewlinesBefore(text, scan.openerStart - 1, position);
    next = scan.openerStart;
    scan = scanFences(text, position, end, fence);
  }

  // Cut right before the line that closes the block: keep that line in this part instead of
  // adding a closing fence here and an empty reopened block to the next part.
  if (scan.fence && next < text.length && isLineStart(text, next) && FENCE_LINE.test(lineHead(text, next))) {
    const closerEnd = lineEndWithin(text, next, position - reopen.length + maxLength + 1);
    if (reopen.length + (closerEnd - position) <= maxLength && (closerEnd === text.length || text[closerEnd] === "\n")) {
      end = closerEnd;
      next = skipNewlines(text, closerEnd);
      scan = { fence: null, openerStart: -1 };
    }
  }

  const body = text.slice(position, end);
  const close = scan.fence ? `${body.endsWith("\n") ? "" : "\n"}\`\`\`` : "";
  const lastNewline = text.slice(position, next).lastIndexOf("\n");
  const lineStart = isLineStart(text, next) ? next : lastNewline === -1 ? cursor.lineStart : position + lastNewline + 1;
  return { text: reopen + body + close, start: position, end, reopen, close, after: { position: next, lineStart, fence: scan.fence } };
}

/**
 * Picks where the part starting at the cursor ends (`end`, exclusive) and where the next one
 * starts (`next`; the separator in between is dropped). The part holds at most `budget` chars.
 */
function chooseCut(text: string, cursor: Cursor, budget: number): { end: number; next: number } {
  const { position } = cursor;
  const limit = position + budget;
  if (limit >= text.length) return { end: text.length, next: text.length };
  const half = position + Math.floor(budget / 2);

  const paragraph = findLast(text, cursor, "\n\n", limit, half);
  if (paragraph !== -1) return newlineCut(text, paragraph, position);
  const line = findLast(text, cursor, "\n", limit, half);
  if (line !== -1) return newlineCut(text, line, position);
  const space = findLast(text, cursor, " ", limit, half);
  if (space !== -1) return { end: space, next: space + 1 };
  const earlyLine = findLast(text, cursor, "\n", limit, position + 1);
  if (earlyLine !== -1) return newlineCut(text, earlyLine, position);
  const earlySpace = findLast(text, cursor, " ", limit, position + 1);
  if (earlySpace !== -1) return { end: earlySpace, next: earlySpace + 1 };
  return hardCut(text, cursor, limit);
}

/** The last index in [minimum, limit] (and after the cursor) where `separator` starts and a cut is allowed. */
function findLast(text: string, cursor: Cursor, separator: string, limit: number, minimum: number): number {
  const window = text.slice(cursor.position, limit + separator.length);
  let offset = window.lastIndexOf(separator);
  while (offset > 0 && cursor.position + offset >= minimum) {
    const index = cursor.position + offset;
    if (canCutAt(text, cursor, index, index + separator.length)) return index;
    offset = window.lastIndexOf(separator, offset - 1);
  }
  return -1;
}

/**
 * A cut must not fall inside a fence line (it would stop being one), and the next part must
 * not start with three backticks that were mid-line in the source (they would become one).
 */
function canCutAt(text: string, cursor: Cursor, end: number, next: number): boolean {
  const newline = text.slice(cursor.position, end).lastIndexOf("\n");
  const start = newline === -1 ? cursor.lineStart : cursor.position + newline + 1;
  if (start < end && FENCE_LINE.test(lineHead(text, start))) return false;
  return isLineStart(text, next) || !FENCE_LINE.test(text.slice(next, next + 6));
}

function newlineCut(text: string, index: number, position: number): { end: number; next: number } {
  return { end: trimNewlinesBefore(text, index, position), next: skipNewlines(text, index) };
}

function hardCut(text: string, cursor: Cursor, limit: number): { end: number; next: number } {
  const { position } = cursor;
  const splitsPair = (index: number): boolean => isHighSurrogate(text.charCodeAt(index - 1));
  const startsFence = (index: number): boolean => !isLineStart(text, index) && FENCE_LINE.test(text.slice(index, index + 6));
  let end = limit;
  while (end > position + 1 && (!canCutAt(text, cursor, end, end) || splitsPair(end))) end -= 1;
  if (canCutAt(text, cursor, end, end)) return { end, next: end };
  // A fence line longer than a whole part: cut inside it, where the rest does not look like one.
  end = limit;
  while (end > position + 1 && (startsFence(end) || splitsPair(end))) end -= 1;
  if (startsFence(end) || splitsPair(end)) end = splitsPair(limit) ? limit - 1 : limit;
  return { end, next: end };
}

/**
 * The fence state after the lines that start in [from, to), given the state at `from`, and
 * where the still-open block's opening line starts (-1 when it was opened before `from`).
 */
function scanFences(text: string, from: number, to: number, fence: OpenFence | null): { fence: OpenFence | null; openerStart: number } {
  let state = fence;
  let openerStart = -1;
  let index = isLineStart(text, from) ? from : lineEndWithin(text, from, to) + 1;
  while (index < to) {
    const head = lineHead(text, index);
    if (FENCE_LINE.test(head)) {
      if (state) {
        state = null;
        openerStart = -1;
      } else {
        const language = head.replace(FENCE_LINE, "").trim().split(/\s/, 1)[0] ?? "";
        state = { language: LANGUAGE_TAG.test(language) ? language : "" };
        openerStart = index;
      }
    }
    index = lineEndWithin(text, index, to) + 1;
  }
  return { fence: state, openerStart };
}

const isLineStart = (text: string, index: number): boolean => index === 0 || text[index - 1] === "\n";
const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;

/** The first characters of the line starting at `start`: enough for a fence and its language tag. */
function lineHead(text: string, start: number): string {
  const head = text.slice(start, start + 64);
  const newline = head.indexOf("\n");
  return newline === -1 ? head : head.slice(0, newline);
}

/** End of the line holding `index`, or `bound` when the line goes on past it. */
function lineEndWithin(text: string, index: number, bound: number): number {
  const newline = text.slice(index, bound).indexOf("\n");
  return newline === -1 ? Math.min(bound, text.length) : index + newline;
}

function skipNewlines(text: string, index: number): number {
  let next = index;
  while (text[next] === "\n") next += 1;
  return next;
}

function trimNewlinesBefore(text: string, index: number, position: number): number {
  let end = index;
  while (end > position && text[end - 1] === "\n") end -= 1;
  return end;
}
