import stringWidth from "string-width";
import { scanDiscordMarkdown } from "./discord-markdown.js";

/**
 * Discord renders no Markdown tables: a GFM pipe table arrives as rows of pipes and dashes.
 * Tables are turned into monospace blocks with aligned columns instead, which read well on
 * desktop and mobile alike.
 *
 * A table is what GFM calls one: a header row, a delimiter row (`---`, `:--:` per column, as
 * many as the header has cells), then the rows up to a blank line or a line without a pipe,
 * indented at most three spaces. Only tables in prose are touched, never inside code; and
 * none while an unclosed ``` stands before them (the fences added would pair with it).
 * Columns are padded to their display width (string-width: CJK and emoji take two columns).
 */

const DELIMITER_CELL = /^:?-+:?$/;

export function renderTables(text: string): string {
  if (!text.includes("|")) return text;
  const segments = scanDiscordMarkdown(text);
  const lines = splitLines(text);
  const output: string[] = [];
  let index = 0;
  while (index < lines.length) {
    const table = tableAt(text, lines, index, segments);
    if (!table) {
      output.push(lines[index]?.text ?? "");
      index += 1;
      continue;
    }
    output.push(renderTable(table.rows, table.alignments));
    index = table.nextLine;
  }
  return output.join("\n");
}

interface Line {
  text: string;
  start: number;
}

function splitLines(text: string): Line[] {
  const lines: Line[] = [];
  let start = 0;
  for (const part of text.split("\n")) {
    lines.push({ text: part, start });
    start += part.length + 1;
  }
  return lines;
}

type Alignment = "left" | "center" | "right";

function tableAt(text: string, lines: readonly Line[], index: number, segments: ReturnType<typeof scanDiscordMarkdown>): { rows: string[][]; alignments: Alignment[]; nextLine: number } | undefined {
  const header = lines[index];
  const delimiter = lines[index + 1];
  if (!header || !delimiter || !isTableLine(header.text) || !isTableLine(delimiter.text)) return undefined;
  const headerCells = cells(header.text);
  const delimiterCells = cells(delimiter.text);
  if (delimiterCells.length !== headerCells.length || !delimiterCells.every((cell) => DELIMITER_CELL.test(cell))) return undefined;
  let end = index + 2;
  while (end < lines.length && isTableLine(lines[end]?.text ?? "") && (lines[end]?.text.trim() ?? "") !== "") end += 1;
  // Only prose: the table's lines must not touch code, and no unclosed fence may precede them.
  const from = header.start;
  const to = (lines[end - 1]?.start ?? 0) + (lines[end - 1]?.text.length ?? 0);
  // Inline code inside a cell is fine (its backticks are dropped); code reaching across the table is not.
  const touchesCode = segments.some((segment) => segment.kind !== "text" && segment.start < to && segment.end > from
    && (segment.kind === "code-block" || segment.start < from || segment.end > to));
  if (touchesCode || hasStrayFence(text, segments, from)) return undefined;
  const alignments = delimiterCells.map((cell): Alignment => (cell.startsWith(":") && cell.endsWith(":") ? "center" : cell.endsWith(":") ? "right" : "left"));
  const rows = [headerCells, ...lines.slice(index + 2, end).map((line) => cells(line.text))]
    .map((row) => Array.from({ length: headerCells.length }, (_, column) => plain(row[column] ?? "")));
  return { rows, alignments, nextLine: end };
}

const isTableLine = (line: string): boolean => line.includes("|") && /^ {0,3}\S/.test(line);

/** Three backticks in prose before `index`: a fence with no closer, which added fences would close. */
function hasStrayFence(text: string, segments: ReturnType<typeof scanDiscordMarkdown>, index: number): boolean {
  return segments.some((segment) => segment.kind === "text" && segment.start < index && text.slice(segment.start, Math.min(segment.end, index)).includes("```"));
}

/** A row's cells: split on pipes that are not escaped, without the outer pipes. */
function cells(line: string): string[] {
  let row = line.trim();
  if (row.startsWith("|")) row = row.slice(1);
  if (row.endsWith("|") && !row.endsWith("\\|")) row = row.slice(0, -1);
  return row.split(/(?<!\\)\|/).map((cell) => cell.trim());
}

/** A cell's text without Markdown, which a monospace block would show literally. */
function plain(cell: string): string {
  return cell
    .replace(/\\\|/g, "|")
    .replace(/\[([^\]]*)\]\(([^)\s]+)\)/g, "$1 ($2)")
    .replace(/(\*\*|__|~~)(.+?)\1/g, "$2")
    .replace(/`+/g, "")
    .trim();
}

function renderTable(rows: string[][], alignments: readonly Alignment[]): string {
  const widths = alignments.map((_, column) => Math.max(3, ...rows.map((row) => stringWidth(row[column] ?? ""))));
  const pad = (cell: string, column: number): string => {
    const space = (widths[column] ?? 0) - stringWidth(cell);
    const alignment = alignments[column] ?? "left";
    if (alignment === "right") return " ".repeat(space) + cell;
    if (alignment === "center") return " ".repeat(Math.floor(space / 2)) + cell + " ".repeat(Math.ceil(space / 2));
    return cell + " ".repeat(space);
  };
  const line = (row: readonly string[]): string => row.map(pad).join(" | ").trimEnd();
  const rule = widths.map((width) => "-".repeat(width)).join("-+-");
  const [header = [], ...body] = rows;
  return ["```", line(header), rule, ...body.map(line), "```"].join("\n");
}
