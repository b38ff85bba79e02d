/**
 * An independent model of how the Bot API reads `parse_mode: "HTML"`, written from tdlib's
 * `parse_html` (td/telegram/MessageEntity.cpp) and `LinkManager::check_link`, for the fake Bot
 * API. It never uses our renderer, splitter or length measure: it is the judge of their output.
 *
 * What it models, as tdlib does it:
 * - tags: b strong i em u ins s strike del a code pre blockquote tg-spoiler tg-emoji, and span
 *   only with class="tg-spoiler"; anything else is a 400 "Unsupported start tag";
 * - attributes: a quoted string ('…' or "…", entities decoded) or a bare name token
 *   (letters, digits, "." and "-"); anything else after "=" is a 400;
 * - entities: &lt; &gt; &amp; &quot; and numeric ones, the ";" optional; an unknown one stays
 *   literal text;
 * - offsets and lengths in UTF-16 units of the parsed text; empty entities vanish;
 * - links: `href` is checked like tdlib's check_link. A link Telegram refuses (a dotless host such
 *   as localhost, an unsupported scheme) is dropped SILENTLY: the label stays, the URL is gone.
 *   A scheme-less target is read as http (so `mailto:a@b.c` becomes `http://mailto:a@b.c/`);
 * - what the clients then show: entities inside code/pre are dropped, and a link whose text
 *   holds a code entity loses its URL (observed: `<a><code>` shows code, no link).
 */

export interface ParsedEntity {
  type: "bold" | "italic" | "underline" | "strikethrough" | "spoiler" | "custom_emoji" | "text_link" | "code" | "pre" | "blockquote";
  offset: number;
  length: number;
  url?: string;
  language?: string;
}

/** What a user sees: the text and the entities that survived. */
export interface ParsedHtml {
  text: string;
  entities: ParsedEntity[];
  /** Entities past the 100 Telegram keeps: the server dropped their formatting. */
  droppedEntities?: number;
}

const TAGS = new Set(["a", "b", "strong", "i", "em", "s", "strike", "del", "u", "ins", "tg-spoiler", "tg-emoji", "span", "pre", "code", "blockquote"]);
const isSpace = (character: string | undefined) => character === " " || character === "\t" || character === "\n" || character === "\r";
const isAlnum = (character: string | undefined) => character !== undefined && /^[A-Za-z0-9]$/.test(character);
const utf8Offset = (text: string, index: number) => Buffer.byteLength(text.slice(0, index));

/** tdlib's decode_html_entity: returns the code point and the index after the entity, or undefined. */
function decodeEntity(text: string, at: number): { code: number; end: number } | undefined {
  let end = at + 1;
  let code = 0;
  if (text[end] === "#") {
    end++;
    let hex = false;
    if (text[end] === "x" || text[end] === "X") {
      hex = true;
      end++;
    }
    const start = end;
    while (end < text.length && (hex ? /[0-9a-fA-F]/ : /[0-9]/).test(text[end] ?? "")) {
      code = code * (hex ? 16 : 10) + Number.parseInt(text[end] ?? "0", hex ? 16 : 10);
      end++;
      if (code >= 0x10ffff) return undefined;
    }
    if (end === start || end - start >= 10 || code === 0) return undefined;
  } else {
    const start = end;
    while (end < text.length && /[A-Za-z]/.test(text[end] ?? "")) end++;
    const named: Record<string, number> = { lt: 0x3c, gt: 0x3e, amp: 0x26, quot: 0x22 };
    const value = named[text.slice(start, end)];
    if (value === undefined) return undefined;
    code = value;
  }
  if (text[end] === ";") end++;
  return { code, end };
}

interface Open {
  tag: string;
  argument: string;
  offset: number;
  textStart: number;
}

/** Parses like tdlib; → the text and the raw entities, or the 400 description. */
export function parseTelegramHtml(html: string): ParsedHtml | { error: string } {
  let text = "";
  const entities: ParsedEntity[] = [];
  const stack: Open[] = [];
  const fail = (message: string) => ({ error: `Bad Request: can't parse entities: ${message}` });
  let index = 0;
  while (index < html.length) {
    const character = html[index] ?? "";
    if (character === "&") {
      const entity = decodeEntity(html, index);
      if (entity) {
        text += String.fromCodePoint(entity.code);
        index = entity.end;
        continue;
      }
    }
    if (character !== "<") {
      text += character;
      index++;
      continue;
    }
    const begin = index;
    index++;
    if (html[index] !== "/") {
      while (index < html.length && !isSpace(html[index]) && html[index] !== ">") index++;
      if (index >= html.length) return fail(`Unclosed start tag at byte offset ${utf8Offset(html, begin)}`);
      const tag = html.slice(begin + 1, index).toLowerCase();
      if (!TAGS.has(tag)) return fail(`Unsupported start tag "${tag}" at byte offset ${utf8Offset(html, begin)}`);
      let argument = "";
      while (html[index] !== ">") {
        while (index < html.length && isSpace(html[index])) index++;
        if (html[index] === ">") break;
        const nameStart = index;
        while (index < html.length && !isSpace(html[index]) && html[index] !== "=") index++;
        const name = html.slice(nameStart, index);
        if (name === "") return fail(`Empty attribute name in the tag "${tag}" at byte offset ${utf8Offset(html, begin)}`);
        while (index < html.length && isSpace(html[index])) index++;
        if (html[index] !== "=") return fail(`Expected equal sign in declaration of an attribute of the tag "${tag}" at byte offset ${utf8Offset(html, begin)}`);
        index++;
        while (index < html.length && isSpace(html[index])) index++;
        if (index >= html.length) return fail(`Unclosed start tag "${tag}" at byte offset ${utf8Offset(html, begin)}`);
        let value = "";
        const quote = html[index];
        if (quote !== '"' && quote !== "'") {
          // A bare name token: letters, digits, periods, hyphens (so never a URL).
          const tokenStart = index;
          while (isAlnum(html[index]) || html[index] === "." || html[index] === "-") index++;
          value = html.slice(tokenStart, index).toLowerCase();
          if (!isSpace(html[index]) && html[index] !== ">") return fail(`Unexpected end of name token at byte offset ${utf8Offset(html, tokenStart)}`);
        } else {
          index++;
          while (index < html.length && html[index] !== quote) {
            if (html[index] === "&") {
              const entity = decodeEntity(html, index);
              if (entity) {
                value += String.fromCodePoint(entity.code);
                index = entity.end;
                continue;
              }
            }
            value += html[index];
            index++;
          }
          if (html[index] === quote) index++;
        }
        if (index >= html.length) return fail(`Unclosed start tag at byte offset ${utf8Offset(html, begin)}`);
        if (tag === "a" && name === "href") argument = value;
        else if (tag === "code" && name === "class" && value.startsWith("language-")) argument = value.slice(9);
        else if (tag === "span" && name === "class" && value.startsWith("tg-")) argument = value.slice(3);
        else if (tag === "tg-emoji" && name === "emoji-id") argument = value;
      }
      if (tag === "span" && argument !== "spoiler") return fail(`Tag "span" must have class "tg-spoiler" at byte offset ${utf8Offset(html, begin)}`);
      index++;
      stack.push({ tag, argument, offset: text.length, textStart: text.length });
      continue;
    }
    // An end tag.
    if (stack.length === 0) return fail(`Unexpected end tag at byte offset ${utf8Offset(html, begin)}`);
    index++;
    const nameStart = index;
    while (index < html.length && !isSpace(html[index]) && html[index] !== ">") index++;
    const endName = html.slice(nameStart, index).toLowerCase();
    while (index < html.length && isSpace(html[index])) index++;
    if (html[index] !== ">") return fail(`Unclosed end tag at byte offset ${utf8Offset(html, begin)}`);
    index++;
    const open = stack.pop() as Open;
    if (endName !== "" && endName !== open.tag) {
      return fail(`Unmatched end tag at byte offset ${utf8Offset(html, begin)}, expected "</${open.tag}>", found "</${endName}>"`);
    }
    const length = text.length - open.offset;
    if (length <= 0) continue;
    const entity = entityFor(open, length, text);
    if (entity === "invalid-emoji") return { error: "Bad Request: Invalid custom emoji identifier specified" };
    if (entity) entities.push(entity);
  }
  if (stack.length > 0) return fail(`Can't find end tag corresponding to start tag ${stack[stack.length - 1]?.tag ?? ""}`);
  return { text, entities: visibleEntities(entities) };
}

function entityFor(open: Open, length: number, text: string): ParsedEntity | "invalid-emoji" | undefined {
  const span = { offset: open.offset, length };
  switch (open.tag) {
    case "b": case "strong": return { type: "bold", ...span };
    case "i": case "em": return { type: "italic", ...span };
    case "u": case "ins": return { type: "underline", ...span };
    case "s": case "strike": case "del": return { type: "strikethrough", ...span };
    case "tg-spoiler": case "span": return { type: "spoiler", ...span };
    case "tg-emoji": return /^[1-9][0-9]*$/.test(open.argument) ? { type: "custom_emoji", ...span } : "invalid-emoji";
    case "code": return { type: "code", ...span, ...(open.argument ? { language: open.argument } : {}) };
    case "pre": return { type: "pre", ...span };
    case "blockquote": return { type: "blockquote", ...span };
    case "a": {
      const url = checkedLink(open.argument === "" ? text.slice(open.textStart) : open.argument);
      return url === undefined ? undefined : { type: "text_link", ...span, url };
    }
    default: return undefined;
  }
}

/**
 * tdlib's check_link for a text link: the normalised URL, or undefined when Telegram drops the
 * link. tg:// links keep a host of letters, digits, "-" and "_", with no port or user info;
 * anything else is read as http(s) (no scheme means http) and needs a host with a dot.
 */
export function checkedLink(raw: string): string | undefined {
  const link = raw.trim();
  if (/^tg:/i.test(link)) {
    const rest = link.slice(3).replace(/^\/\//, "");
    const match = /^([^/?#]*)(.*)$/s.exec(rest);
    const host = match?.[1] ?? "";
    if (host === "" || !/^[A-Za-z0-9_-]+$/.test(host)) return undefined;
    const query = (match?.[2] ?? "").replace(/^\/(?=\?)/, "");
    return `tg://${host.toLowerCase()}${query}`;
  }
  let rest = link;
  let protocol = "http";
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(link);
  if (scheme) {
    protocol = (scheme[1] ?? "").toLowerCase();
    if (protocol !== "http" && protocol !== "https") return undefined;
    rest = link.slice(scheme[0].length);
  }
  if (/[\s<>"]/.test(rest) || rest === "") return undefined;
  const authorityEnd = rest.search(/[/?#]/);
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd);
  const path = authorityEnd < 0 ? "/" : rest.slice(authorityEnd);
  const at = authority.lastIndexOf("@");
  const hostPort = at < 0 ? authority : authority.slice(at + 1);
  const ipv6 = hostPort.startsWith("[");
  const host = ipv6 ? hostPort.slice(0, hostPort.indexOf("]") + 1) : hostPort.replace(/:\d*$/, "");
  if (host === "" || (!ipv6 && !host.includes("."))) return undefined;
  return `${protocol}://${authority.toLowerCase()}${path.startsWith("/") ? path : `/${path}`}`;
}

/** What the clients show: nothing nested in code or pre, and no link around code. */
function visibleEntities(entities: readonly ParsedEntity[]): ParsedEntity[] {
  const contains = (outer: ParsedEntity, inner: ParsedEntity) =>
    outer !== inner && inner.offset >= outer.offset && inner.offset + inner.length <= outer.offset + outer.length;
  const code = entities.filter((entity) => entity.type === "code" || entity.type === "pre");
  return entities.filter((entity) => {
    if (code.some((block) => contains(block, entity) && !(entity.type === "code" && block.type === "pre" && block.offset === entity.offset && block.length === entity.length))) return false;
    if (entity.type === "text_link" && code.some((block) => contains(entity, block))) return false;
    return true;
  });
}

/** A user's view of a parsed message as one string: link targets written after their label. */
export function visibleText(parsed: ParsedHtml): string {
  const links = parsed.entities.filter((entity) => entity.type === "text_link").sort((left, right) => right.offset - left.offset);
  let text = parsed.text;
  for (const link of links) {
    const end = link.offset + link.length;
    text = `${text.slice(0, end)} <${link.url ?? ""}>${text.slice(end)}`;
  }
  return text;
}
