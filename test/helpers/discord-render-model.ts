/**
 * An independent model of how Discord's client renders a message, for judging the splitter.
 * It does not share code with src/adapters/discord: it replays simple-markdown's parse loop
 * the way Discord's client runs it (inline, rules tried in order at each position where the
 * previous token ended) with the client's own regular expressions, as shipped in its bundle:
 *
 *   codeBlock   /^```(?:([a-z0-9_+\-.#]+?)\n)?\n*([^\n][^]*?)\n*```/i
 *   escape      /^\\([^0-9A-Za-z\s])/                      (simple-markdown's default)
 *   inlineCode  /^(`+)([\s\S]*?[^`])\1(?!`)/               (simple-markdown's default)
 *   text        /^[\s\S]+?(?=[^0-9A-Za-z\s\u00c0-\uffff]|\n\n| {2,}\n|\w+:\S|$)/
 *
 * and reports, for every UTF-16 index of the message, what the reader sees there.
 */

export type Rendered = "prose" | "markup" | "inline-code" | `code:${string}`;

interface Rule {
  pattern: RegExp;
  apply(match: RegExpExecArray & { indices: Array<[number, number] | undefined> }, marks: Rendered[]): void;
}

const mark = (marks: Rendered[], from: number, to: number, value: Rendered): void => {
  for (let index = from; index < to; index += 1) marks[index] = value;
};

// Sticky (`y`) instead of `^` on a slice: the same anchoring, without copying the rest.
const RULES: Rule[] = [
  {
    pattern: /```(?:([a-z0-9_+\-.#]+?)\n)?\n*([^\n][^]*?)\n*```/iyd,
    apply(match, marks) {
      const [start, end] = match.indices[0] ?? [0, 0];
      const [contentStart, contentEnd] = match.indices[2] ?? [start, start];
      mark(marks, start, end, "markup");
      mark(marks, contentStart, contentEnd, `code:${match[1] ?? ""}`);
    },
  },
  {
    pattern: /\\([^0-9A-Za-z\s])/yd,
    apply(match, marks) {
      const [start, end] = match.indices[0] ?? [0, 0];
      mark(marks, start, start + 1, "markup");
      mark(marks, start + 1, end, "prose");
    },
  },
  {
    pattern: /(`+)([\s\S]*?[^`])\1(?!`)/yd,
    apply(match, marks) {
      const [start, end] = match.indices[0] ?? [0, 0];
      const [contentStart, contentEnd] = match.indices[2] ?? [start, start];
      mark(marks, start, end, "markup");
      mark(marks, contentStart, contentEnd, "inline-code");
    },
  },
  {
    pattern: /[\s\S]+?(?=[^0-9A-Za-z\s\u00c0-\uffff]|\n\n| {2,}\n|\w+:\S|$)/yd,
    apply(match, marks) {
      const [start, end] = match.indices[0] ?? [0, 0];
      mark(marks, start, end, "prose");
    },
  },
];

/** What Discord shows at each index of `text`. */
export function renderModel(text: string): Rendered[] {
  const marks: Rendered[] = new Array<Rendered>(text.length).fill("prose");
  let position = 0;
  while (position < text.length) {
    let advanced = false;
    for (const rule of RULES) {
      rule.pattern.lastIndex = position;
      const match = rule.pattern.exec(text) as (RegExpExecArray & { indices: Array<[number, number] | undefined> }) | null;
      if (!match || match[0].length === 0) continue;
      rule.apply(match, marks);
      position += match[0].length;
      advanced = true;
      break;
    }
    if (!advanced) position += 1;
  }
  return marks;
}

/** The inline code spans and backtick runs longer than `length`: no split can keep those whole. */
export function hasUnsplittableCode(text: string, length: number): boolean {
  const marks = renderModel(text);
  let run = 0;
  for (const [index, value] of marks.entries()) {
    run = value === "inline-code" || (value === "markup" && text[index] === "`") ? run + 1 : 0;
    if (run > length) return true;
  }
  return /`{20,}/.test(text);
}
