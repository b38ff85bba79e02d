/**
 * The model's Markdown → Telegram's HTML subset (b, i, s, code, pre, a, blockquote).
 *
 * HTML rather than MarkdownV2 because HTML needs only `<`, `>` and `&` escaped, while
 * MarkdownV2 reserves eighteen characters that model output uses constantly (STACK §2.6).
 * Every tag this module opens is closed in the same call that opened it, so the output is
 * balanced whatever the input: unbalanced Markdown (`**bold` with no end) stays literal text.
 * Pure; no grammY.
 */

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>]/g, (character) => ESCAPES[character] ?? character);
}

function escapeAttribute(text: string): string {
  return text.replace(/[&<>"]/g, (character) => ESCAPES[character] ?? character);
}

/** Renders Markdown as Telegram HTML. Line breaks are kept: chat clients show them as written. */
export function renderMarkdown(markdown: string): string {
  const lines = markdown.replace(/\r\n?/g, "\n").split("\n");
  const output: string[] = [];
  let paragraph: string[] = [];
  const flushParagraph = () => {
    if (paragraph.length > 0) output.push(renderInline(paragraph.join("\n")));
    paragraph = [];
  };

  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? "";

    const fence = /^( {0,3})(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/.exec(line);
    if (fence) {
      flushParagraph();
      const indent = fence[1]?.length ?? 0;
      const marker = fence[2] ?? "```";
      const language = (fence[3] ?? "").replace(/[^A-Za-z0-9_+#.-]/g, "");
      const closing = new RegExp(`^ {0,3}${marker[0] === "`" ? "`" : "~"}{${marker.length},}[ \\t]*$`);
      const body: string[] = [];
      index++;
      // An unclosed fence runs to the end of the reply (CommonMark does the same).
      while (index < lines.length && !closing.test(lines[index] ?? "")) {
        body.push((lines[index] ?? "").replace(new RegExp(`^ {0,${indent}}`), ""));
        index++;
      }
      const code = escapeHtml(body.join("\n"));
      output.push(language ? `<pre><code class="language-${language}">${code}</code></pre>` : `<pre>${code}</pre>`);
      continue;
    }

    if (/^ {0,3}>/.test(line)) {
      flushParagraph();
      const quoted: string[] = [];
      while (index < lines.length && /^ {0,3}>/.test(lines[index] ?? "")) {
        quoted.push((lines[index] ?? "").replace(/^ {0,3}> ?/, ""));
        index++;
      }
      index--;
      output.push(`<blockquote>${renderInline(quoted.join("\n"))}</blockquote>`);
      continue;
    }

    const heading = /^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (heading) {
      flushParagraph();
      output.push(`<b>${renderInline(heading[1] ?? "")}</b>`);
      continue;
    }

    if (/^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/.test(line)) {
      flushParagraph();
      output.push("──────────");
      continue;
    }

    const bullet = /^([ \t]*)[-*+][ \t]+(?:\[([ xX])\][ \t]+)?(.*)$/.exec(line);
    if (bullet) {
      flushParagraph();
      const box = bullet[2] === undefined ? "• " : bullet[2] === " " ? "☐ " : "☑ ";
      output.push(`${bullet[1] ?? ""}${box}${renderInline(bullet[3] ?? "")}`);
      continue;
    }

    const numbered = /^([ \t]*)(\d{1,9}[.)])[ \t]+(.*)$/.exec(line);
    if (numbered) {
      flushParagraph();
      output.push(`${numbered[1] ?? ""}${numbered[2] ?? ""} ${renderInline(numbered[3] ?? "")}`);
      continue;
    }

    if (line.trim() === "") {
      flushParagraph();
      output.push("");
      continue;
    }
    paragraph.push(line);
  }
  flushParagraph();
  return output.join("\n");
}

const EMPHASIS: ReadonlyArray<{ delimiter: string; tag: string }> = [
  { delimiter: "**", tag: "b" },
  { delimiter: "__", tag: "b" },
  { delimiter: "~~", tag: "s" },
  { delimiter: "*", tag: "i" },
  { delimiter: "_", tag: "i" },
];

const isPunctuation = (character: string | undefined) =>
  character !== undefined && /[!-/:-@[-`{-~]/.test(character);
const isWhitespace = (character: string | undefined) => character === undefined || /\s/.test(character);
const isWordCharacter = (character: string | undefined) => character !== undefined && /[\p{L}\p{N}]/u.test(character);

function runLength(text: string, from: number, character: string): number {
  let end = from;
  while (text[end] === character) end++;
  return end - from;
}

/** Index of the backtick run of exactly `length` that closes a code span, or -1. */
function findBacktickRun(text: string, from: number, length: number): number {
  let index = from;
  while (index < text.length) {
    const next = text.indexOf("`", index);
    if (next < 0) return -1;
    const run = runLength(text, next, "`");
    if (run === length) return next;
    index = next + run;
  }
  return -1;
}

/**
 * Where the emphasis opened at `from` closes: the next delimiter run that can close, skipping
 * escapes and code spans. A closer is the *last* characters of its run, so `***x***` nests.
 */
function findCloser(text: string, from: number, delimiter: string): number {
  const character = delimiter[0] ?? "*";
  let index = from;
  while (index < text.length) {
    const current = text[index];
    if (current === "\\" && isPunctuation(text[index + 1])) {
      index += 2;
      continue;
    }
    if (current === "`") {
      const run = runLength(text, index, "`");
      const close = findBacktickRun(text, index + run, run);
      index = close < 0 ? index + run : close + run;
      continue;
    }
    if (current === character) {
      const run = runLength(text, index, character);
      // A run of two belongs to bold, not to italic; runs of one or three close italic.
      const usable = delimiter.length === 2 ? run >= 2 : run !== 2;
      const closer = index + run - delimiter.length;
      const afterRun = text[index + run];
      if (usable && run >= delimiter.length && !isWhitespace(text[closer - 1]) && closer > from) {
        if (character !== "_" || !isWordCharacter(afterRun)) return closer;
      }
      index += run;
      continue;
    }
    index++;
  }
  return -1;
}

interface Link {
  label: string;
  url: string;
  end: number;
}

/** For each "[", the index of its matching "]" (or -1), in one pass: no quadratic rescans. */
function matchBrackets(text: string): Int32Array {
  const matches = new Int32Array(text.length).fill(-1);
  const open: number[] = [];
  for (let index = 0; index < text.length; index++) {
    const current = text[index];
    if (current === "\\") index++;
    else if (current === "[") open.push(index);
    else if (current === "]") {
      const start = open.pop();
      if (start !== undefined) matches[start] = index;
    }
  }
  return matches;
}

function parseLink(text: string, from: number, brackets: Int32Array): Link | undefined {
  // from points at "["; its matching "]" must be followed at once by "(".
  const index = brackets[from] ?? -1;
  if (index < 0 || text[index + 1] !== "(") return undefined;
  const label = text.slice(from + 1, index);
  let cursor = index + 2;
  while (text[cursor] === " ") cursor++;
  let parens = 0;
  const urlStart = cursor;
  for (; cursor < text.length; cursor++) {
    const current = text[cursor] ?? "";
    if (/\s/.test(current) || cursor - urlStart > 2048) break;
    if (current === "(") parens++;
    if (current === ")") {
      if (parens === 0) break;
      parens--;
    }
  }
  const url = text.slice(urlStart, cursor);
  while (text[cursor] === " ") cursor++;
  const title = /"[^"\n]*"|'[^'\n]*'/y;
  title.lastIndex = cursor;
  if (title.exec(text)) cursor = title.lastIndex;
  while (text[cursor] === " ") cursor++;
  if (text[cursor] !== ")" || url.length === 0) return undefined;
  return { label, url, end: cursor + 1 };
}

/**
 * Telegram accepts absolute URLs only; anything else (relative, javascript:) becomes text. A
 * huge URL stays text too: a tag is never split, so it must stay far below a message.
 */
const isLinkable = (url: string) => url.length <= 2048 && /^(https?:\/\/|tg:\/\/|mailto:)[^\s<>"]+$/i.test(url);

function renderInline(text: string, insideLink = false): string {
  const output: string[] = [];
  // Once a delimiter has no closer after position p, it has none after any later position
  // either: remembering that keeps adversarial input (thousands of lone `*`) linear-ish.
  const noCloserFrom = new Map<string, number>();
  let brackets: Int32Array | undefined;
  let index = 0;

  outer: while (index < text.length) {
    const current = text[index] ?? "";

    if (current === "\\" && isPunctuation(text[index + 1])) {
      output.push(escapeHtml(text[index + 1] ?? ""));
      index += 2;
      continue;
    }

    if (current === "`") {
      const run = runLength(text, index, "`");
      const close = findBacktickRun(text, index + run, run);
      if (close < 0) {
        output.push("`".repeat(run));
        index += run;
        continue;
      }
      let code = text.slice(index + run, close);
      if (code.length > 2 && code.startsWith(" ") && code.endsWith(" ") && code.trim() !== "") code = code.slice(1, -1);
      output.push(code.length > 0 ? `<code>${escapeHtml(code)}</code>` : "`".repeat(run * 2));
      index = close + run;
      continue;
    }

    if (!insideLink && (current === "[" || (current === "!" && text[index + 1] === "["))) {
      brackets ??= matchBrackets(text);
      const link = parseLink(text, current === "!" ? index + 1 : index, brackets);
      if (link) {
        const label = link.label.trim() === "" ? escapeHtml(link.url) : renderInline(link.label, true);
        output.push(
          isLinkable(link.url) ? `<a href="${escapeAttribute(link.url)}">${label}</a>` : `${label} (${escapeHtml(link.url)})`,
        );
        index = link.end;
        continue;
      }
    }

    if (!insideLink && current === "<") {
      const autolink = /^<((?:https?|tg):\/\/[^\s<>]+|mailto:[^\s<>]+)>/i.exec(text.slice(index, index + 2048));
      if (autolink && autolink[1]) {
        output.push(`<a href="${escapeAttribute(autolink[1])}">${escapeHtml(autolink[1])}</a>`);
        index += autolink[0].length;
        continue;
      }
    }

    for (const { delimiter, tag } of EMPHASIS) {
      if (!text.startsWith(delimiter, index)) continue;
      const contentStart = index + delimiter.length;
      if (isWhitespace(text[contentStart])) continue;
      if (delimiter[0] === "_" && isWordCharacter(text[index - 1])) continue;
      const known = noCloserFrom.get(delimiter);
      if (known !== undefined && contentStart >= known) continue;
      const closer = findCloser(text, contentStart, delimiter);
      if (closer < 0) {
        noCloserFrom.set(delimiter, Math.min(known ?? contentStart, contentStart));
        continue;
      }
      output.push(`<${tag}>${renderInline(text.slice(contentStart, closer), insideLink)}</${tag}>`);
      index = closer + delimiter.length;
      continue outer;
    }

    output.push(escapeHtml(current));
    index++;
  }
  return output.join("");
}

const NAMED_ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (entity, body: string) => {
    if (body[0] === "#") {
      const codePoint = body[1] === "x" || body[1] === "X" ? Number.parseInt(body.slice(2), 16) : Number.parseInt(body.slice(1), 10);
      return Number.isFinite(codePoint) && codePoint <= 0x10ffff ? String.fromCodePoint(codePoint) : entity;
    }
    return NAMED_ENTITIES[body.toLowerCase()] ?? entity;
  });
}

/**
 * What a user would read: tags removed, entities decoded. With `linkUrls`, a link whose label
 * is not its URL keeps the URL in brackets, so the plain-text fallback loses no link.
 */
export function htmlToPlainText(html: string, options: { linkUrls?: boolean } = {}): string {
  const withUrls = options.linkUrls
    ? html.replace(/<a href="([^"]*)">([\s\S]*?)<\/a>/g, (_match, href: string, label: string) => {
        const url = decodeEntities(href);
        return decodeEntities(label.replace(/<[^>]*>/g, "")) === url ? label : `${label} (${escapeHtml(url)})`;
      })
    : html;
  return decodeEntities(withUrls.replace(/<[^>]*>/g, ""));
}
