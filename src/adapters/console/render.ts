/**
 * The model's Markdown → text for a terminal, with ANSI styles: bold, italics, inline code,
 * fenced code blocks behind a gutter, lists with bullets, quotes, tables as aligned columns.
 * Parsed by markdown-it (CommonMark + GFM tables and strikethrough), so what the model means
 * by `**` or a fence is what CommonMark means. Pure; used only for an interactive terminal
 * (piped output stays the model's raw text).
 */
import MarkdownIt, { type Token } from "markdown-it";

export interface TerminalStyleOptions {
  /** ANSI colours and attributes; off keeps the layout only (NO_COLOR). */
  color: boolean;
  /** Terminal width, for rules. @defaultValue 80 */
  columns?: number;
}

const markdown = new MarkdownIt("default", { html: false, linkify: false, typographer: false });

const SGR = {
  bold: ["\x1b[1m", "\x1b[22m"],
  dim: ["\x1b[2m", "\x1b[22m"],
  italic: ["\x1b[3m", "\x1b[23m"],
  underline: ["\x1b[4m", "\x1b[24m"],
  strike: ["\x1b[9m", "\x1b[29m"],
  code: ["\x1b[36m", "\x1b[39m"],
  block: ["\x1b[33m", "\x1b[39m"],
} as const;

type Style = keyof typeof SGR;

/**
 * Control characters from the model never reach the terminal: an escape sequence in a reply
 * could retitle the window, move the cursor or hide text (terminal injection).
 */
export function stripControlCharacters(text: string): string {
  return text.replace(/\r\n?/g, "\n").replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, "");
}

/** Renders a reply for an interactive terminal. */
export function renderForTerminal(text: string, options: TerminalStyleOptions): string {
  const style = (name: Style, inner: string): string =>
    inner === "" ? inner
    : options.color ? `${SGR[name][0]}${inner}${SGR[name][1]}`
    // Without colours inline code keeps its backticks, or it would look like prose.
    : name === "code" ? `\`${inner}\``
    : inner;
  const renderer = new BlockRenderer(style, options.columns ?? 80);
  const tokens = markdown.parse(stripControlCharacters(text), {});
  return renderer.blocks(tokens, 0, tokens.length, false).join("\n").replace(/\s+$/, "");
}

/** The visible width of text that may hold our own SGR codes (one column per grapheme). */
export function visibleWidth(text: string): number {
  let width = 0;
  for (const _ of new Intl.Segmenter().segment(text.replace(/\x1b\[[0-9;]*m/g, ""))) width++;
  return width;
}

class BlockRenderer {
  private listDepth = 0;

  constructor(
    private readonly style: (name: Style, inner: string) => string,
    private readonly columns: number,
  ) {}

  /** The lines of the blocks in tokens[from, to); loose content gets a blank line between blocks. */
  blocks(tokens: Token[], from: number, to: number, tight: boolean): string[] {
    const rendered: string[][] = [];
    for (let index = from; index < to; ) {
      const token = tokens[index]!;
      const end = token.nesting === 1 ? closingIndex(tokens, index) : index;
      const lines = this.block(tokens, index, end);
      if (lines) rendered.push(lines);
      index = end + 1;
    }
    return rendered.flatMap((lines, position) => (position === 0 || tight ? lines : ["", ...lines]));
  }

  private block(tokens: Token[], start: number, end: number): string[] | undefined {
    const token = tokens[start]!;
    switch (token.type) {
      case "paragraph_open":
        return this.inline(tokens[start + 1]).split("\n");
      case "heading_open": {
        const text = this.inline(tokens[start + 1]);
        return [token.tag === "h1" ? this.style("underline", this.style("bold", text)) : this.style("bold", text)];
      }
      case "fence":
      case "code_block":
        return this.code(token.content, token.type === "fence" ? token.info.trim().split(/\s+/)[0] ?? "" : "");
      case "bullet_list_open":
      case "ordered_list_open":
        return this.list(tokens, start, end);
      case "blockquote_open":
        return this.blocks(tokens, start + 1, end, false).map((line) => `${this.style("dim", "▎")} ${line}`);
      case "hr":
        return [this.style("dim", "─".repeat(Math.max(3, Math.min(this.columns - 1, 40))))];
      case "table_open":
        return this.table(tokens, start, end);
      case "html_block":
        return token.content.replace(/\n$/, "").split("\n");
      default:
        return undefined;
    }
  }

  private code(content: string, language: string): string[] {
    const gutter = this.style("dim", "│");
    const body = content.replace(/\n$/, "").split("\n").map((line) => `${gutter} ${this.style("block", line)}`);
    return language ? [this.style("dim", `╭ ${language}`), ...body] : body;
  }

  private list(tokens: Token[], start: number, end: number): string[] {
    const ordered = tokens[start]!.type === "ordered_list_open";
    let number = Number(tokens[start]!.attrGet("start") ?? 1);
    const bullet = ["•", "◦", "▪"][this.listDepth % 3]!;
    this.listDepth++;
    const lines: string[] = [];
    let loose = false;
    for (let index = start + 1; index < end; ) {
      const itemEnd = closingIndex(tokens, index);
      // markdown-it hides the paragraphs of a tight list: no blank lines inside its items.
      const tight = tokens.slice(index + 1, itemEnd).every((token) => token.type !== "paragraph_open" || token.hidden);
      loose ||= !tight;
      const marker = ordered ? `${number++}.` : bullet;
      const body = this.blocks(tokens, index + 1, itemEnd, tight);
      const indent = " ".repeat(visibleWidth(marker) + 1);
      if (loose && lines.length > 0) lines.push("");
      body.forEach((line, position) => lines.push(position === 0 ? `${marker} ${line}` : line === "" ? "" : `${indent}${line}`));
      if (body.length === 0) lines.push(marker);
      index = itemEnd + 1;
    }
    this.listDepth--;
    return lines;
  }

  private table(tokens: Token[], start: number, end: number): string[] {
    const rows: string[][] = [];
    let header = 0;
    for (let index = start; index < end; index++) {
      const token = tokens[index]!;
      if (token.type === "tr_open") rows.push([]);
      if (token.type === "th_open") header = rows.length;
      if (token.type === "th_open" || token.type === "td_open") rows[rows.length - 1]?.push(this.inline(tokens[index + 1]));
    }
    const widths: number[] = [];
    for (const row of rows) row.forEach((cell, column) => (widths[column] = Math.max(widths[column] ?? 0, visibleWidth(cell))));
    const lines = rows.map((row, position) => {
      const cells = row.map((cell, column) => cell + " ".repeat((widths[column] ?? 0) - visibleWidth(cell)));
      const line = cells.join("  ").trimEnd();
      return position < header ? this.style("bold", line) : line;
    });
    if (header > 0) lines.splice(header, 0, this.style("dim", widths.map((width) => "─".repeat(width)).join("  ")));
    return lines;
  }

  private inline(token: Token | undefined): string {
    const children = token?.children ?? [];
    let text = "";
    const open: Array<{ style: Style | "link"; start: number; href?: string }> = [];
    const close = (style: Style | "link") => {
      const entry = open.pop();
      if (!entry || entry.style !== style) return;
      const inner = text.slice(entry.start);
      text = text.slice(0, entry.start);
      if (style !== "link") text += this.style(style, inner);
      else {
        const label = this.style("underline", inner);
        text += entry.href && entry.href !== inner && `mailto:${inner}` !== entry.href ? `${label} ${this.style("dim", `(${entry.href})`)}` : label;
      }
    };
    for (const child of children) {
      switch (child.type) {
        case "text": case "html_inline": text += child.content; break;
        case "code_inline": text += this.style("code", child.content); break;
        case "softbreak": case "hardbreak": text += "\n"; break;
        case "strong_open": open.push({ style: "bold", start: text.length }); break;
        case "strong_close": close("bold"); break;
        case "em_open": open.push({ style: "italic", start: text.length }); break;
        case "em_close": close("italic"); break;
        case "s_open": open.push({ style: "strike", start: text.length }); break;
        case "s_close": close("strike"); break;
        case "link_open": open.push({ style: "link", start: text.length, href: String(child.attrGet("href") ?? "") }); break;
        case "link_close": close("link"); break;
        case "image": text += this.style("dim", `[image: ${child.content || String(child.attrGet("src") ?? "")}]`); break;
        default: text += child.content;
      }
    }
    return text;
  }
}

/** The index of the token that closes the one opened at `start`. */
function closingIndex(tokens: Token[], start: number): number {
  const opener = tokens[start]!;
  if (opener.nesting !== 1) return start;
  const closer = opener.type.replace(/_open$/, "_close");
  for (let index = start + 1; index < tokens.length; index++) {
    const token = tokens[index]!;
    if (token.type === closer && token.level === opener.level) return index;
  }
  return tokens.length - 1;
}
