/**
 * Splits rendered Telegram HTML into messages that each fit the 4,096 limit, hold at most 100
 * formatting entities (Telegram drops the formatting past the 100th) and at most 9,000 units of
 * markup source (past about 9,500 Telegram answers ENTITIES_TOO_LONG).
 *
 * Telegram counts the limit in UTF-16 code units of the text *after* entity parsing: a tag
 * counts 0, `&lt;` counts 1, `&#128512;` counts 2. Parts are measured that way, so a code block
 * full of `<` is not cut into slivers because its escapes are long.
 *
 * Break preference: a blank line outside any element, then a line break outside any element
 * (once the part is a quarter full), then any such break at all, so a code block or quote
 * that fits in a part is moved whole to the next one; only an element longer than a part is
 * cut: at a line break inside it (a code block is closed at the end of the part and reopened,
 * with its language, at the start of the next), then at a space, then anywhere between two
 * grapheme clusters (Intl.Segmenter: never inside a flag, a ZWJ emoji or a surrogate pair),
 * never inside a tag or an entity. The break characters stay at the end of the earlier part,
 * so the parts' texts joined are exactly the whole text. Deterministic: part indices are
 * stable across retries. Pure; no grammY.
 */

export const TELEGRAM_MESSAGE_LIMIT = 4096;
/** Telegram keeps only a message's first 100 formatting entities (the rest show unformatted). */
export const TELEGRAM_ENTITY_LIMIT = 100;
/**
 * Telegram refuses a message whose entities are too large in total (400 ENTITIES_TOO_LONG); a
 * tdlib maintainer called about 9,500 characters of markup source "a good approximation" of
 * that limit (tdlib/telegram-bot-api#165). Parts stay below it, with room to spare.
 */
export const TELEGRAM_MARKUP_LIMIT = 9_000;
/** Parts are measured as Telegram measures them, so the limit itself is the default. */
export const DEFAULT_PART_LENGTH = TELEGRAM_MESSAGE_LIMIT;

type Token =
  | { kind: "open"; name: string; raw: string; units: 0 }
  | { kind: "close"; name: string; raw: string; units: 0 }
  | { kind: "text"; raw: string; units: number };

interface OpenTag {
  name: string;
  raw: string;
}

const NAMED: Record<string, number> = { lt: 1, gt: 1, amp: 1, quot: 1 };
const graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });

/** Units an entity occupies after parsing (Telegram decodes only these names, and numbers). */
function entityUnits(entity: string): number {
  const body = entity.slice(1, -1);
  if (body[0] !== "#") return NAMED[body.toLowerCase()] ?? entity.length;
  const code = body[1] === "x" || body[1] === "X" ? Number.parseInt(body.slice(2), 16) : Number.parseInt(body.slice(1), 10);
  return code > 0xffff ? 2 : 1;
}

function tokenize(html: string): Token[] {
  const tokens: Token[] = [];
  const pattern = /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)[^>]*>|&(?:#x[0-9a-fA-F]+|#[0-9]+|[a-zA-Z]+);|[^<&]+|[\s\S]/g;
  for (const match of html.matchAll(pattern)) {
    const raw = match[0];
    const name = match[2]?.toLowerCase();
    if (name !== undefined) tokens.push({ kind: match[1] ? "close" : "open", name, raw, units: 0 });
    else if (raw.length > 1 && raw[0] === "&") tokens.push({ kind: "text", raw, units: entityUnits(raw) });
    else for (const { segment } of graphemes.segment(raw)) tokens.push({ kind: "text", raw: segment, units: segment.length });
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
  /** Longest part in UTF-16 units after parsing (Telegram's measure). @defaultValue 4096 */
  maxLength?: number;
  /** Most formatting elements (each tag a part opens or reopens) in one part. @defaultValue 100 */
  maxEntities?: number;
  /** Longest part's markup source (tags and escapes included), in UTF-16 units. @defaultValue 9000 */
  maxMarkup?: number;
}

/** Whether the element starting at `from` (after any text) fits in a part of its own. */
function elementFits(tokens: readonly Token[], from: number, limit: number): boolean {
  let depth = 0;
  let units = 0;
  for (let index = from; index < tokens.length; index++) {
    const token = tokens[index] as Token;
    if (token.kind === "text" && depth === 0) return true;
    units += token.units;
    if (units > limit) return false;
    if (token.kind === "open") depth++;
    else if (token.kind === "close" && --depth <= 0) return true;
  }
  return true;
}

/** A part's length as Telegram counts it: tags 0, entities decoded. */
export function parsedLength(html: string): number {
  return tokenize(html).reduce((sum, token) => sum + token.units, 0);
}

export function splitHtml(html: string, options: SplitOptions = {}): string[] {
  const limit = Math.min(options.maxLength ?? DEFAULT_PART_LENGTH, TELEGRAM_MESSAGE_LIMIT);
  const maxEntities = Math.max(1, Math.min(options.maxEntities ?? TELEGRAM_ENTITY_LIMIT, TELEGRAM_ENTITY_LIMIT));
  const maxMarkup = Math.max(limit, Math.min(options.maxMarkup ?? TELEGRAM_MARKUP_LIMIT, TELEGRAM_MARKUP_LIMIT));
  const opens = (text: string) => (text.match(/<[a-zA-Z]/g) ?? []).length;
  if (html.length <= limit && opens(html) <= maxEntities) return [html];
  const tokens = tokenize(html);
  const fits = tokens.reduce((sum, token) => sum + token.units, 0) <= limit && html.length <= maxMarkup && opens(html) <= maxEntities;
  if (fits) return [html];
  // A preferred break is taken only if the part is at least this full; otherwise a worse
  // break further on wins, so a part is never a sliver just because a paragraph ended early.
  const minimumFill = Math.floor(limit / 4);
  const parts: string[] = [];
  let start = 0;
  let openAtStart: OpenTag[] = [];

  while (start < tokens.length) {
    const stack = [...openAtStart];
    let length = 0;
    // Entities and markup: what the part reopens counts too, and the closing tags it will need.
    let entities = openAtStart.length;
    let markup = openAtStart.reduce((sum, tag) => sum + tag.raw.length, 0);
    const best: Array<{ cut: number; fill: number } | undefined> = [];
    let anyOutside: number | undefined;
    let index = start;
    for (; index < tokens.length; index++) {
      const token = tokens[index] as Token;
      if (length + token.units > limit) break;
      if (token.kind === "open" && entities + 1 > maxEntities) break;
      const closers = stack.reduce((sum, tag) => sum + tag.name.length + 3, 0) + (token.kind === "open" ? token.name.length + 3 : 0);
      if (markup + token.raw.length + closers > maxMarkup) break;
      applyToken(stack, token);
      length += token.units;
      markup += token.raw.length;
      if (token.kind === "open") entities++;
      const kind = breakClass(tokens, index, stack.length);
      if (kind === undefined) continue;
      best[kind] = { cut: index + 1, fill: length };
      if ((kind === Break.Paragraph || kind === Break.Line) && elementFits(tokens, index + 1, limit)) anyOutside = index + 1;
    }
    if (index >= tokens.length) {
      parts.push(openAtStart.map((tag) => tag.raw).join("") + tokens.slice(start).map((token) => token.raw).join(""));
      break;
    }
    let cut: number | undefined;
    for (const kind of [Break.Paragraph, Break.Line]) {
      const candidate = best[kind];
      if (candidate && candidate.fill >= minimumFill) {
        cut = candidate.cut;
        break;
      }
    }
    // Before cutting into an element, move it whole to the next part if a break precedes it.
    cut ??= anyOutside ?? best[Break.LineInside]?.cut ?? best[Break.Space]?.cut ?? best[Break.Anywhere]?.cut ?? start + 1;
    const openAtCut = [...openAtStart];
    for (let position = start; position < cut; position++) applyToken(openAtCut, tokens[position] as Token);
    const body = tokens.slice(start, cut).map((token) => token.raw).join("");
    const closing = [...openAtCut].reverse().map(closingTag).join("");
    parts.push(openAtStart.map((tag) => tag.raw).join("") + body + closing);
    start = cut;
    openAtStart = openAtCut;
  }
  return parts.map(removeEmptyElements).filter((part) => part !== "");
}
