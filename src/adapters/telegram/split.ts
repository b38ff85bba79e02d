/**
 * Splits rendered Telegram HTML into messages that each fit the 4,096 limit.
 *
 * Telegram counts the limit in UTF-16 code units after entity parsing, and parsing only ever
 * shrinks a text (tdlib/telegram-bot-api#374): a raw HTML part of ≤ 4,096 units is always
 * accepted, so parts are measured raw, closing tags included. The default target is 4,000 to
 * leave room. Splitting the HTML (not the Markdown) is what makes the bound exact: escaping
 * can quadruple a `<`.
 *
 * Break preference: a blank line outside any element, then a line break outside any element,
 * then a line break inside one (a long code block or quote is closed at the end of the part
 * and reopened, with its language, at the start of the next), then a space, then anywhere
 * except inside a tag, an entity or a surrogate pair. The break characters stay at the end of
 * the earlier part, so the parts' texts joined are exactly the whole text. Pure; no grammY.
 */

export const TELEGRAM_MESSAGE_LIMIT = 4096;
export const DEFAULT_PART_LENGTH = 4000;

type Token =
  | { kind: "open"; name: string; raw: string }
  | { kind: "close"; name: string; raw: string }
  | { kind: "text"; raw: string };

interface OpenTag {
  name: string;
  raw: string;
}

function tokenize(html: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*>|&(?:#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);|[\uD800-\uDBFF][\uDC00-\uDFFF]|[\s\S]/g;
  for (const match of html.matchAll(pattern)) {
    const raw = match[0];
    const name = match[2]?.toLowerCase();
    if (name !== undefined) tokens.push({ kind: match[1] ? "close" : "open", name, raw });
    else tokens.push({ kind: "text", raw });
  }
  return tokens;
}

const closingTag = (tag: OpenTag) => `</${tag.name}>`;

function applyToken(stack: OpenTag[], token: Token): void {
  if (token.kind === "open") stack.push({ name: token.name, raw: token.raw });
  else if (token.kind === "close") {
    const at = stack.map((tag) => tag.name).lastIndexOf(token.name);
    if (at >= 0) stack.splice(at, 1);
  }
}

/** Break classes, best first. */
const Break = { Paragraph: 0, Line: 1, LineInside: 2, Space: 3, Anywhere: 4 } as const;
type Break = (typeof Break)[keyof typeof Break];

/** The class of a cut right after `tokens[index]` (closing tags just before the cut are skipped). */
function breakClass(tokens: readonly Token[], index: number, depth: number): Break | undefined {
  let last = index;
  while (last >= 0 && tokens[last]?.kind === "close") last--;
  const token = tokens[last];
  const next = tokens[index + 1];
  if (token === undefined || token.kind === "open" || next?.kind === "close") return undefined;
  if (token.raw === "\n") {
    if (depth > 0) return Break.LineInside;
    return tokens[last - 1]?.raw === "\n" ? Break.Paragraph : Break.Line;
  }
  if (token.raw === " " || token.raw === "\t") return Break.Space;
  return Break.Anywhere;
}

const removeEmptyElements = (html: string) => {
  let previous: string;
  let current = html;
  do {
    previous = current;
    current = current.replace(/<([a-zA-Z][a-zA-Z0-9-]*)(?:\s[^>]*)?><\/\1>/g, "");
  } while (current !== previous);
  return current;
};

export interface SplitOptions {
  /** Longest part in UTF-16 units, tags included. @defaultValue 4000 */
  maxLength?: number;
}

export function splitHtml(html: string, options: SplitOptions = {}): string[] {
  const limit = Math.min(options.maxLength ?? DEFAULT_PART_LENGTH, TELEGRAM_MESSAGE_LIMIT);
  if (html.length <= limit) return [html];
  const tokens = tokenize(html);
  // A preferred break is taken only if the part is at least this full; otherwise a worse
  // break further on wins, so a part is never a sliver just because a paragraph ended early.
  const minimumFill = Math.floor(limit / 4);
  const parts: string[] = [];
  let start = 0;
  let openAtStart: OpenTag[] = [];

  while (start < tokens.length) {
    const prefix = openAtStart.map((tag) => tag.raw).join("");
    const stack = [...openAtStart];
    let length = prefix.length;
    let closeLength = stack.reduce((sum, tag) => sum + closingTag(tag).length, 0);
    const best: Array<{ cut: number; fill: number } | undefined> = [];
    let index = start;
    for (; index < tokens.length; index++) {
      const token = tokens[index] as Token;
      const before = stack.length;
      applyToken(stack, token);
      if (token.kind === "open") closeLength += closingTag(stack[stack.length - 1] as OpenTag).length;
      else if (token.kind === "close" && stack.length < before) closeLength -= `</${token.name}>`.length;
      if (length + token.raw.length + closeLength > limit) break;
      length += token.raw.length;
      const kind = breakClass(tokens, index, stack.length);
      if (kind !== undefined) best[kind] = { cut: index + 1, fill: length };
    }
    if (index >= tokens.length) {
      parts.push(prefix + tokens.slice(start).map((token) => token.raw).join(""));
      break;
    }
    let cut: number | undefined;
    for (const kind of [Break.Paragraph, Break.Line, Break.LineInside, Break.Space]) {
      const candidate = best[kind];
      if (candidate && candidate.fill >= minimumFill) {
        cut = candidate.cut;
        break;
      }
    }
    // Anywhere is the last resort; a single token longer than the limit cannot occur with
    // our renderer's output, but progress is forced rather than looping forever.
    cut ??= best[Break.Anywhere]?.cut ?? best[Break.Space]?.cut ?? best[Break.LineInside]?.cut ?? best[Break.Line]?.cut ?? start + 1;
    const openAtCut = [...openAtStart];
    for (let position = start; position < cut; position++) applyToken(openAtCut, tokens[position] as Token);
    const body = tokens.slice(start, cut).map((token) => token.raw).join("");
    const closing = [...openAtCut].reverse().map(closingTag).join("");
    parts.push(prefix + body + closing);
    start = cut;
    openAtStart = openAtCut;
  }
  return parts.map(removeEmptyElements);
}
