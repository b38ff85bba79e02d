/**
 * The model's Markdown → Telegram's HTML subset (b, i, s, code, pre, a, blockquote).
 *
 * Parsed with markdown-it (CommonMark + GFM tables and strikethrough), then its token stream is
 * rendered here: markdown-it's own HTML renderer emits tags Telegram refuses (p, ul, h1, table).
 * HTML rather than MarkdownV2 because HTML needs only `<`, `>` and `&` escaped, while MarkdownV2
 * reserves eighteen characters that model output uses constantly (STACK §2.6). The token stream
 * is balanced, so the output is balanced whatever the input; raw HTML in the model's text is
 * shown as text (markdown-it `html: false`). Pure; no grammY.
 */
import MarkdownIt from "markdown-it";
import type { Token } from "markdown-it";
import stringWidth from "string-width";

const markdown = new MarkdownIt("default", { html: false, linkify: false, typographer: false });

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>]/g, (character) => ESCAPES[character] ?? character);
}

const escapeAttribute = (text: string) => text.replace(/[&<>"]/g, (character) => ESCAPES[character] ?? character);

/**
 * Whether Telegram keeps a link to `url`. It drops, silently, links whose http(s) host has no
 * dot (localhost, an intranet name) and any other scheme, and reads a scheme-less target as
 * http (`mailto:a@b.c` would become `http://mailto:a@b.c/`). Those are written out as text
 * instead, so the URL stays readable. tg:// links need a plain host (tdlib's check_link).
 */
export function isTelegramLinkable(url: string): boolean {
  if (url.length > 2048 || /[\s<>"]/.test(url)) return false;
  if (/^tg:\/\//i.test(url)) return /^tg:\/\/[A-Za-z0-9_-]+([/?#]|$)/i.test(url);
  if (!/^https?:\/\//i.test(url)) return false;
  try {
    const { hostname, username, password } = new URL(url);
    if (username !== "" || password !== "") return false;
    return hostname.startsWith("[") || (hostname.includes(".") && !hostname.endsWith("."));
  } catch {
    return false;
  }
}

/** A link target as a reader should see it: mailto: and tg: shown bare, percent-escapes decoded. */
function readableTarget(href: string): string {
  const shown = href.replace(/^mailto:/i, "");
  try {
    return markdown.normalizeLinkText(shown);
  } catch {
    return shown;
  }
}

/** Renders Markdown as Telegram HTML. Line breaks are kept: chat clients show them as written. */
export function renderMarkdown(source: string): string {
  const tokens = markdown.parse(source.replace(/\r\n?/g, "\n"), {});
  return new BlockRenderer(tokens, source.split(/\r\n?|\n/)).render().replace(/\n{3,}/g, "\n\n").trim();
}

interface Block {
  html: string;
  /** Source lines [start, end) (markdown-it's map): blocks that touched in the source stay one line break apart. */
  lines: [number, number] | undefined;
}

interface Container {
  kind: "root" | "quote" | "item";
  blocks: Block[];
}

/** Blocks as the author spaced them: a blank line between them only where the source had one. */
function joinBlocks(blocks: readonly Block[], source: readonly string[]): string {
  let html = "";
  for (const block of blocks) {
    if (block.html === "") continue;
    if (html !== "") html += block.lines && block.lines[0] > 0 && (source[block.lines[0] - 1] ?? "").trim() !== "" ? "\n" : "\n\n";
    html += block.html;
  }
  return html;
}

interface ListState {
  ordered: boolean;
  next: number;
  depth: number;
}

class BlockRenderer {
  private index = 0;
  private readonly containers: Container[] = [{ kind: "root", blocks: [] }];
  private readonly lists: ListState[] = [];
  private quoteDepth = 0;
  private table: string[][] | undefined;
  private row: string[] | undefined;

  constructor(private readonly tokens: Token[], private readonly source: readonly string[]) {}

  render(): string {
    for (; this.index < this.tokens.length; this.index++) this.step(this.tokens[this.index] as Token);
    return joinBlocks((this.containers[0] as Container).blocks, this.source);
  }

  private get current(): Container {
    return this.containers[this.containers.length - 1] as Container;
  }

  private emit(html: string, lines: [number, number] | undefined | null = this.tokens[this.index]?.map): void {
    this.current.blocks.push({ html, lines: lines ?? undefined });
  }

  /** The source lines of the container whose closing token is at the current index. */
  private openerLines(opener: string): [number, number] | undefined {
    let depth = 0;
    const closer = this.tokens[this.index]?.type;
    for (let at = this.index - 1; at >= 0; at--) {
      const type = this.tokens[at]?.type;
      if (type === closer) depth++;
      else if (type === opener && depth-- === 0) return this.tokens[at]?.map ?? undefined;
    }
    return undefined;
  }

  private step(token: Token): void {
    switch (token.type) {
      case "paragraph_open":
      case "paragraph_close":
      case "heading_close":
      case "thead_open": case "thead_close": case "tbody_open": case "tbody_close":
        return;
      case "inline":
        if (this.row) this.row.push(cellText(token.children ?? []));
        else this.emit(renderInline(token.children ?? []));
        return;
      case "heading_open": {
        const inline = this.tokens[this.index + 1];
        this.emit(`<b>${renderInline(inline?.children ?? [])}</b>`);
        this.index++;
        return;
      }
      case "fence":
      case "code_block":
        return this.emit(codeBlock(token.content, token.type === "fence" ? token.info : ""));
      case "hr":
        return this.emit("──────────");
      case "blockquote_open":
        this.quoteDepth++;
        this.containers.push({ kind: "quote", blocks: [] });
        return;
      case "blockquote_close": {
        const quote = this.containers.pop() as Container;
        this.quoteDepth--;
        const body = joinBlocks(quote.blocks, this.source);
        // Telegram does not nest quotes: an inner quote is part of the outer one.
        this.emit(this.quoteDepth > 0 ? body : `<blockquote>${body}</blockquote>`, this.openerLines("blockquote_open"));
        return;
      }
      case "bullet_list_open":
      case "ordered_list_open":
        this.lists.push({ ordered: token.type === "ordered_list_open", next: Number(token.attrGet("start") ?? 1), depth: this.lists.length });
        this.containers.push({ kind: "item", blocks: [] });
        return;
      case "bullet_list_close":
      case "ordered_list_close": {
        this.lists.pop();
        const list = this.containers.pop() as Container;
        this.emit(list.blocks.map((block) => block.html).join("\n"), this.openerLines(token.type.replace("close", "open")));
        return;
      }
      case "list_item_open":
        this.containers.push({ kind: "item", blocks: [] });
        return;
      case "list_item_close": {
        const item = this.containers.pop() as Container;
        const list = this.lists[this.lists.length - 1] as ListState;
        let marker = list.ordered ? `${list.next++}. ` : "• ";
        let [first = "", ...rest] = item.blocks.map((block) => block.html);
        const task = /^\[([ xX])\] /.exec(first);
        if (task && !list.ordered) {
          marker = task[1] === " " ? "☐ " : "☑ ";
          first = first.slice(task[0].length);
        }
        this.emit(["  ".repeat(list.depth) + marker + first, ...rest].join("\n"), this.openerLines("list_item_open"));
        return;
      }
      case "table_open":
        this.table = [];
        return;
      case "tr_open":
        this.row = [];
        return;
      case "tr_close":
        if (this.row) this.table?.push(this.row);
        this.row = undefined;
        return;
      case "table_close":
        this.emit(tableBlock(this.table ?? []), this.openerLines("table_open"));
        this.table = undefined;
        return;
      default:
        return;
    }
  }
}

function codeBlock(content: string, info: string): string {
  const code = escapeHtml(content.replace(/\n$/, ""));
  const language = (info.trim().split(/\s+/)[0] ?? "").replace(/[^A-Za-z0-9_+#.-]/g, "");
  if (code === "") return "";
  return language ? `<pre><code class="language-${language}">${code}</code></pre>` : `<pre>${code}</pre>`;
}

/**
 * Columns a text takes in a monospace font (string-width, as Discord's tables): East Asian wide
 * and fullwidth characters and emoji take two, the rest one. Counting characters instead
 * misaligns every column after a CJK word or an emoji.
 */
export const displayWidth = (text: string): number => stringWidth(text);
const width = displayWidth;

/** A table as a monospace block: Telegram has no tables, and aligned columns read well in code font. */
function tableBlock(rows: readonly string[][]): string {
  const columns = Math.max(0, ...rows.map((row) => row.length));
  const widths = Array.from({ length: columns }, (_, column) => Math.max(1, ...rows.map((row) => width(row[column] ?? ""))));
  const line = (row: readonly string[]) => widths.map((size, column) => {
    const cell = row[column] ?? "";
    return cell + " ".repeat(size - width(cell));
  }).join(" │ ").trimEnd();
  const [header, ...body] = rows;
  const lines = header ? [line(header), widths.map((size) => "─".repeat(size)).join("─┼─"), ...body.map(line)] : [];
  return lines.length > 0 ? `<pre>${escapeHtml(lines.join("\n"))}</pre>` : "";
}

const INLINE_TAGS: Record<string, string> = { strong_open: "<b>", strong_close: "</b>", em_open: "<i>", em_close: "</i>", s_open: "<s>", s_close: "</s>" };

/** Inline tokens → HTML. Inside a link, code is plain text: Telegram drops a link around code. */
function renderInline(tokens: readonly Token[]): string {
  const output: string[] = [];
  let link: { href: string; linkable: boolean; labelStart: number } | undefined;
  for (const token of tokens) {
    switch (token.type) {
      case "text":
        output.push(escapeHtml(token.content));
        break;
      case "softbreak":
      case "hardbreak":
        output.push("\n");
        break;
      case "code_inline":
        output.push(link ? escapeHtml(token.content) : `<code>${escapeHtml(token.content)}</code>`);
        break;
      case "link_open": {
        const href = String(token.attrGet("href") ?? "");
        const linkable = isTelegramLinkable(href);
        link = { href, linkable, labelStart: output.length };
        if (linkable) output.push(`<a href="${escapeAttribute(href)}">`);
        break;
      }
      case "link_close": {
        if (!link) break;
        if (link.linkable) output.push("</a>");
        else {
          // Not a link Telegram keeps: the target is written out, so it stays readable.
          const label = htmlToPlainText(output.slice(link.labelStart).join(""));
          const target = readableTarget(link.href);
          if (label.trim() !== target && label.trim() !== link.href) output.push(` (${escapeHtml(target)})`);
        }
        link = undefined;
        break;
      }
      case "image": {
        const src = String(token.attrGet("src") ?? "");
        const alt = plainInline(token.children ?? []) || "image";
        output.push(isTelegramLinkable(src) && !link ? `<a href="${escapeAttribute(src)}">${escapeHtml(alt)}</a>` : `${escapeHtml(alt)} (${escapeHtml(readableTarget(src))})`);
        break;
      }
      default: {
        const tag = INLINE_TAGS[token.type];
        if (tag !== undefined) output.push(tag);
        else if (token.content) output.push(escapeHtml(token.content));
      }
    }
  }
  return output.join("");
}

/**
 * A table cell as plain text (the table is one monospace block, where no link works): a link
 * keeps its target in brackets after its label, unless the label is the target.
 */
function cellText(tokens: readonly Token[]): string {
  const output: string[] = [];
  let link: { href: string; labelStart: number } | undefined;
  for (const token of tokens) {
    if (token.type === "link_open") link = { href: String(token.attrGet("href") ?? ""), labelStart: output.length };
    else if (token.type === "link_close" && link) {
      const label = output.slice(link.labelStart).join("").trim();
      const target = readableTarget(link.href);
      if (label !== target && label !== link.href) output.push(` (${target})`);
      link = undefined;
    } else if (token.type === "image") {
      const src = String(token.attrGet("src") ?? "");
      output.push(`${plainInline(token.children ?? []) || "image"} (${readableTarget(src)})`);
    } else output.push(token.type === "softbreak" || token.type === "hardbreak" ? " " : token.content);
  }
  return output.join("");
}

/** Inline tokens as plain text (image alt text). */
function plainInline(tokens: readonly Token[]): string {
  return tokens.map((token) => (token.type === "image" ? plainInline(token.children ?? []) : token.type === "softbreak" || token.type === "hardbreak" ? " " : token.content)).join("");
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
