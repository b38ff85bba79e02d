/**
 * A document's text in a user message, as src/media/resolve.ts (and the Discord adapter) puts it:
 * `[document a.pdf, 2 KB, its text:]` … `[end of a.pdf]`. The summarizer reads it fenced as the
 * file's (summary-prompt.ts `fenceDocuments`), and a cut through the middle of a message keeps
 * that fence where it was (`bridgeDocuments`).
 */

/**
 * A file's name may hold brackets (`invoice [2026].pdf`, the sender's to choose): the markers are
 * read to their line's end, not to the first `]`.
 */
const START_MARKER_END = ", its text:]\n";
const DOCUMENT_END = /\n\[end of ([^\n]+?)\](?=\n|$)/g;

export interface DocumentSpan {
  /** Its start marker, line break included, runs from `start` to `from`. */
  start: number;
  from: number;
  /** Its end marker (`\n[end of a.pdf]`) starts here; none: the document runs to the text's end. */
  end?: number;
  /** Where the document, end marker included, stops. */
  stop: number;
}

/**
 * More documents than a message holds (Telegram and Discord take 10 files a message). Past this
 * many, the rest of the text is fenced as one document, the safe side: a paste of many marker
 * lines costs no more than this many looks over its end markers.
 */
const MAX_DOCUMENTS = 100;

/** The last text asked about and its documents: a cut tries a few lengths of the same text. */
let lastSpans: { text: string; spans: DocumentSpan[] } | undefined;

/**
 * The start markers in `text`: a line that ends with `, its text:]`, from its first `[` (what
 * `/\[[^\n]*?, its text:\]\n/g` matches). Found by that suffix, not by the regex: tried from each
 * `[`, the regex reads the rest of the line each time, and a paste of 400,000 '[' took 112 s.
 */
function* documentStarts(text: string): Generator<{ index: number; marker: string }> {
  for (let found = text.indexOf(START_MARKER_END); found >= 0; found = text.indexOf(START_MARKER_END, found + 1)) {
    const lineStart = text.lastIndexOf("\n", found - 1) + 1;
    const open = text.slice(lineStart, found).indexOf("[");
    if (open >= 0) yield { index: lineStart + open, marker: text.slice(lineStart + open, found + START_MARKER_END.length) };
  }
}

/** The documents of a user message, in order; a start marker inside a document's text is the document's. */
export function documentSpans(text: string): DocumentSpan[] {
  if (lastSpans?.text === text) return lastSpans.spans;
  // The end markers are found in one pass, not once per start: a paste of many small documents
  // would otherwise be read again from each one to its end.
  const ends = [...text.matchAll(DOCUMENT_END)].map((match) => ({ at: match.index ?? 0, needle: ` ${match[1]!},`, stop: (match.index ?? 0) + match[0].length }));
  const spans: DocumentSpan[] = [];
  let at = 0;
  for (const { index, marker } of documentStarts(text)) {
    if (index < at) continue;
    const from = index + marker.length;
    if (spans.length === MAX_DOCUMENTS) {
      spans.push({ start: index, from, stop: text.length });
      break;
    }
    // The file's own end marker is the last one that names it: a line shaped like one inside the
    // file's text (the file is the sender's to write) would otherwise end the fence there, and
    // what follows it read as the sender's words.
    let end: (typeof ends)[number] | undefined;
    for (let k = ends.length - 1; k >= 0 && ends[k]!.at >= from && end === undefined; k--) {
      if (marker.includes(ends[k]!.needle)) end = ends[k];
    }
    const stop = end === undefined ? text.length : end.stop;
    spans.push({ start: index, from, ...(end === undefined ? {} : { end: end.at }), stop });
    at = stop;
  }
  lastSpans = { text, spans };
  return spans;
}

/**
 * A cut that keeps `[0, headEnd)` and `[tailStart, …)` of a user message leaves each document
 * fenced as it was: one whose start the head shows and whose end the cut takes is closed at the
 * cut (its own end marker, so the words after the file are not read as the file's), and one
 * whose text goes on in the tail past a start the cut took is opened again there (its own start
 * marker, so the file's text is not read as the sender's words). A document the cut leaves whole,
 * or takes whole, or whose start and end it both shows, gets nothing.
 */
export function bridgeDocuments(text: string, headEnd: number, tailStart: number): { close: string; reopen: string } {
  let close = "";
  let reopen = "";
  for (const span of documentSpans(text)) {
    const opensInHead = span.from <= headEnd && span.stop > headEnd;
    // The tail shows its end marker when it holds the marker's '[' (the note's line ends before it).
    const closesInTail = span.end !== undefined && span.end + 1 >= tailStart;
    if (opensInHead && span.end !== undefined && !closesInTail) close += text.slice(span.end, span.stop);
    const textInTail = (span.end ?? text.length) > tailStart;
    if (!opensInHead && span.start < tailStart && textInTail) reopen += text.slice(span.start, span.from);
  }
  return { close, reopen };
}
